//! What the chat loop costs per round, the tools' own work aside: 20 tools registered, 50
//! messages of history, the model asks for 3 calls per answer. The provider is the scripted one
//! (no network, no serialization), so the figure is the framework's: building the request,
//! checking the answer, running the calls (context, timeout, panic guard, tracing span), and
//! appending the results.
//!
//! `cargo bench -p llm-tools-core --bench chat_round`
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use llm_tools_core::chat::{Chat, ChatState, Step};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Tool, ToolCall};

macro_rules! tools {
    ($($name:ident => $ty:ident),* $(,)?) => {
        $(
            /// Gets the weather forecast for a city
            ///
            /// # Arguments
            /// * `city` - The city
            /// * `days` - How many days ahead
            /// * `units` - metric or imperial
            #[llm_tools_core::tool]
            async fn $name(city: String, days: u32, units: Option<String>) -> String {
                let _ = (days, units);
                city
            }
        )*
        fn all_tools() -> Vec<Arc<dyn Tool>> {
            vec![$(Arc::new($ty) as Arc<dyn Tool>),*]
        }
    };
}

tools! {
    tool_00 => Tool00, tool_01 => Tool01, tool_02 => Tool02, tool_03 => Tool03,
    tool_04 => Tool04, tool_05 => Tool05, tool_06 => Tool06, tool_07 => Tool07,
    tool_08 => Tool08, tool_09 => Tool09, tool_10 => Tool10, tool_11 => Tool11,
    tool_12 => Tool12, tool_13 => Tool13, tool_14 => Tool14, tool_15 => Tool15,
    tool_16 => Tool16, tool_17 => Tool17, tool_18 => Tool18, tool_19 => Tool19,
}

const ARGS: &str = r#"{"city":"Berlin","days":3,"units":"metric"}"#;

fn three_calls() -> Message {
    Message::assistant_with_calls(
        "",
        ["tool_00", "tool_07", "tool_13"]
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCall::new(format!("call_{i}"), *name, ARGS))
            .collect(),
    )
}

/// A chat with 50 messages of history (earlier rounds included), ending with a user message.
fn history() -> ChatState {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_instructions("You are a weather assistant.");
    while chat.messages().len() < 43 {
        let n = chat.messages().len();
        chat.add_message(Message::user(format!("Question {n}?")))
            .unwrap();
        chat.add_message(Message::assistant(format!("Answer {n}.")))
            .unwrap();
    }
    let mut state = serde_json::to_value(chat.state()).unwrap();
    let messages = state["messages"].as_array_mut().unwrap();
    let round = three_calls();
    messages.push(serde_json::to_value(Message::user("Weather?")).unwrap());
    messages.push(serde_json::to_value(&round).unwrap());
    for call in &round.tool_calls {
        let result = Message::tool_result(call.id.as_str(), "Berlin", false);
        messages.push(serde_json::to_value(result).unwrap());
    }
    messages.push(serde_json::to_value(Message::assistant("Sunny in Berlin.")).unwrap());
    messages.push(serde_json::to_value(Message::user("And tomorrow?")).unwrap());
    assert_eq!(messages.len(), 50);
    serde_json::from_value(state).unwrap()
}

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
