//! What the chat loop costs per round, the tools' own work aside: 20 tools registered, 50
//! messages of history, the model asks for 3 calls per answer. The provider is the scripted one
//! (no network, no serialization), so the figure is the framework's: building the request,
//! checking the answer, running the calls (context, timeout, panic guard, tracing span), and
//! appending the results.
//!
//! `cargo bench -p llm-tools-core --bench chat_round`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod round_setup;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use llm_tools_core::chat::{Chat, Step};
use llm_tools_core::testing::ScriptedProvider;
use round_setup::{all_tools, history, three_calls};

fn chat_round(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let tools = all_tools();
    let state = history();
    let model = ScriptedProvider::new()
        .then(three_calls())
        .cycle()
        .without_recording();
    let setup = || {
        let mut chat = Chat::from_state(model.clone(), state.clone()).unwrap();
        chat.with_tools(tools.clone()).unwrap();
        chat
    };

    // One round: a request whose answer asks for 3 calls, the calls, their results.
    c.bench_function("chat round: 20 tools, 50 messages, 3 calls", |b| {
        b.to_async(&runtime).iter_batched(
            setup,
            |mut chat| async move {
                let step = chat.step().await.unwrap();
                assert_eq!(step, Step::Continue);
                chat
            },
            BatchSize::SmallInput,
        );
    });

    // A whole turn: the round above, then the request that gets the final answer.
    let turn_model = ScriptedProvider::new()
        .then(three_calls())
        .then_text("Sunny.")
        .cycle()
        .without_recording();
    let turn_setup = || {
        let mut chat = Chat::from_state(turn_model.clone(), state.clone()).unwrap();
        chat.with_tools(tools.clone()).unwrap();
        chat
    };
    c.bench_function("chat turn: one round of 3 calls, then the answer", |b| {
        b.to_async(&runtime).iter_batched(
            turn_setup,
            |mut chat| async move {
                assert!(!chat.complete().await.unwrap().is_paused());
                chat
            },
            BatchSize::SmallInput,
        );
    });

    // The same turn, streamed: every delta forwarded as an event while the loop runs.
    c.bench_function(
        "chat turn, streamed: one round of 3 calls, then the answer",
        |b| {
            b.to_async(&runtime).iter_batched(
                turn_setup,
                |mut chat| async move {
                    use futures::StreamExt as _;
                    let mut events = chat.complete_stream();
                    while let Some(event) = events.next().await {
                        event.unwrap();
                    }
                    drop(events);
                    chat
                },
                BatchSize::SmallInput,
            );
        },
    );
}

criterion_group!(benches, chat_round);
criterion_main!(benches);
