//! The cases about spending: a failing chat is tried a bounded number of times with a growing
//! delay and then parked, a used-up round budget parks at once, a chat its tasks keep going
//! stops at its chat budget (each worker turn starts a turn's budgets again), a stored chat
//! that does not decode is parked while the others run, a chat whose turn ends its worker every
//! time is parked after a bounded number of abandoned claims, and the application sees and
//! releases parked chats.
//! Each counts the model's requests: the bound is on money, not on time.

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::chat::{StopReason, StopWhen, ToolOptions};
use llm_tools_core::store::{
    ChatStatus, Commit, DEFAULT_MAX_ABANDONED_CLAIMS, DueChat, DurableOptions, ParkReason, Release,
    RunClaim, Store, StoreError, Worker, WorkerReport,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    Chat, Error, Message, Provider, ProviderError, Response, Role, Task, ToolCall, ToolOutcome,
    ToolOutput, Usage, tool,
};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::json;

use crate::serving::{RetryLog, exchange, on_server};

async fn status(store: &Arc<dyn Store>, chat_id: &str) -> ChatStatus {
    store.chat_status(chat_id).await.expect("a status")
}

async fn texts(store: &Arc<dyn Store>, chat_id: &str) -> Vec<String> {
    let chat = Chat::load(Arc::clone(store), chat_id, ScriptedProvider::new())
        .await
        .expect("the stored chat reads back");
    chat.messages().iter().map(|m| m.text()).collect()
}

/// Runs the worker's picks `passes` times (each runs what is due now) and adds up the reports.
async fn run_passes(worker: &Worker, passes: usize) -> WorkerReport {
    let mut total = (0, 0, 0, 0);
    for _ in 0..passes {
        let r = worker.run_once().await.expect("the store answers");
        total = (
            total.0 + r.turns,
            total.1 + r.done,
            total.2 + r.failed,
            total.3 + r.parked,
        );
    }
    let mut report = WorkerReport::default();
    (report.turns, report.done, report.failed, report.parked) = total;
    report
}

/// Chat Completions on the loopback replay server, with no retries of its own: each turn is
/// one request the server counts.
fn openai_on(server: &ReplayServer) -> Arc<dyn Provider> {
    let config = OpenAiConfig::openai("gpt-5-nano").with_api_key("sk-test-spending");
    Arc::new(OpenAiChat::new(on_server(config, server, 0, &RetryLog::default())).expect("config"))
}

fn server_error() -> RecordedResponse {
    RecordedResponse::json(
        500,
        json!({"error": {"message": "the server had an error", "type": "server_error"}})
            .to_string(),
    )
}

fn chat_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5-nano",
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

/// A case of the suite.
pub(super) async fn a_failing_provider_is_asked_max_attempts_times_then_the_chat_is_parked(
    store: Arc<dyn Store>,
) {
    // Three failures, then an answer the chat gets only once it is released.
    let url = "/v1/chat/completions";
    let server = ReplayServer::with_interactions(vec![
        exchange(url, server_error()),
        exchange(url, server_error()),
        exchange(url, server_error()),
        exchange(url, chat_text("Hello.")),
    ])
    .await
    .expect("the loopback server starts");
    let provider = openai_on(&server);
    let mut chat = Chat::create_shared(Arc::clone(&store), "failing", Arc::clone(&provider))
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    // No delay, so every retry is due at once: only the attempt count stops them.
    let worker = Worker::new_shared(Arc::clone(&store), Arc::clone(&provider))
        .with_durable_options(
            DurableOptions::default()
                .with_retry_delay(Duration::ZERO)
                .with_max_attempts(3),
        );

    let report = run_passes(&worker, 8).await;
    assert_eq!(
        (report.turns, report.failed, report.parked, report.done),
        (3, 3, 1, 0),
        "{report:?}"
    );
    assert_eq!(server.served(), 3, "exactly max_attempts model requests");
    let parked = status(&store, "failing").await;
    assert_eq!(parked.parked, Some(ParkReason::AttemptsExhausted));
    assert_eq!(parked.failures, 3);
    let error = parked.last_error.clone().expect("the last error is kept");
    assert!(error.contains("500"), "{error}");
    assert!(!error.contains("sk-test-spending"), "{error}");
    assert!(parked.parked_at.is_some_and(|at| at <= store.now_ms()));
    assert_eq!(
        store.parked_chats(None, 10).await.expect("listed"),
        std::slice::from_ref(&parked)
    );
    assert_eq!(
        texts(&store, "failing").await,
        ["Hi"],
        "the history is kept"
    );

    // A new message is stored, but the chat stays parked until the application acts.
    let mut chat = Chat::load_shared(Arc::clone(&store), "failing", Arc::clone(&provider))
        .await
        .expect("loaded");
    chat.enqueue("Are you there?").await.expect("enqueued");
    assert!(status(&store, "failing").await.is_parked());
    assert_eq!(run_passes(&worker, 3).await.turns, 0, "no worker picks it");
    assert_eq!(server.served(), 3);

    assert!(store.release_parked("failing").await.expect("released"));
    let released = status(&store, "failing").await;
    assert_eq!((released.parked, released.failures), (None, 0));
    assert_eq!(released.last_error.as_deref(), Some(error.as_str()));
    assert!(
        released.wake_at.is_some_and(|at| at <= store.now_ms()),
        "due now"
    );
    assert!(
        !store.release_parked("failing").await.expect("answered"),
        "a chat that is not parked is left alone"
    );
    assert!(
        store
            .parked_chats(None, 10)
            .await
            .expect("listed")
            .is_empty()
    );

    let report = run_passes(&worker, 2).await;
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    assert_eq!(server.served(), 4);
    assert_eq!(
        texts(&store, "failing").await,
        ["Hi", "Are you there?", "Hello."]
    );
    let healthy = status(&store, "failing").await;
    assert_eq!(
        (healthy.parked, healthy.failures, healthy.last_error),
        (None, 0, None),
        "a turn that ends well clears the failures"
    );
}

/// Looks around
#[tool]
async fn look() -> String {
    "nothing new".into()
}

/// A case of the suite.
pub(super) async fn a_model_that_asks_for_tools_every_round_is_parked_at_the_round_budget(
    store: Arc<dyn Store>,
) {
    let endless = ScriptedProvider::new().then_call("look", json!({})).cycle();
    let mut chat = Chat::create(Arc::clone(&store), "endless", endless.clone())
        .await
        .expect("created");
    chat.with_tool_options(ToolOptions::default().with_rounds(3))
        .expect("options");
    chat.enqueue("Look around").await.expect("enqueued");
    let worker = Worker::new(Arc::clone(&store), endless.clone())
        .with_setup(|_, chat| {
            chat.with_tools(Look)?;
            Ok(())
        })
        .with_durable_options(DurableOptions::default().with_retry_delay(Duration::ZERO));

    let report = run_passes(&worker, 6).await;
    assert_eq!(
        (report.turns, report.failed, report.parked),
        (1, 1, 1),
        "{report:?}"
    );
    assert_eq!(
        endless.request_count(),
        3,
        "three rounds of model requests, never a fresh budget"
    );
    let parked = status(&store, "endless").await;
    assert_eq!(parked.parked, Some(ParkReason::RoundsExceeded));
    assert_eq!(parked.failures, 1, "parked at once, not after retries");
    let error = parked.last_error.expect("kept");
    assert!(error.contains("round budget"), "{error}");
    let history = texts(&store, "endless").await;
    assert_eq!(
        history.len(),
        7,
        "the question and three rounds: {history:?}"
    );
    assert_eq!(history[6], "nothing new", "every call has its result");

    // The application raises nothing and releases it: the next turn has the budget again,
    // and a model that answers finishes the chat.
    assert!(store.release_parked("endless").await.expect("released"));
    let answering = ScriptedProvider::new().then_text("Nothing changed.");
    let worker = Worker::new(Arc::clone(&store), answering.clone()).with_setup(|_, chat| {
        chat.with_tools(Look)?;
        Ok(())
    });
    assert_eq!(run_passes(&worker, 2).await.done, 1);
    assert_eq!(answering.request_count(), 1);
    let chat = Chat::load(Arc::clone(&store), "endless", answering)
        .await
        .expect("loaded");
    assert_eq!(chat.messages().len(), 8);
    assert_eq!(chat.messages()[7].role, Role::Assistant);
    assert_eq!(chat.messages()[7].text(), "Nothing changed.");
    assert_eq!(status(&store, "endless").await.failures, 0);
}

/// A case of the suite: the request budget of a turn is kept with the chat's tool options and
/// counts a worker's turn from its start, as `StopWhen::requests` does; past it the turn stops,
/// the chat rests whole (no worker picks it, nothing is parked), and the application carries
/// it on with a fresh budget.
pub(super) async fn a_model_that_asks_for_tools_without_end_stops_at_the_request_budget(
    store: Arc<dyn Store>,
) {
    let endless = ScriptedProvider::new().then_call("look", json!({})).cycle();
    let mut chat = Chat::create(Arc::clone(&store), "unbounded", endless.clone())
        .await
        .expect("created");
    chat.with_tool_options(
        ToolOptions::default()
            .with_rounds(100)
            .with_max_requests_per_turn(Some(6)),
    )
    .expect("options");
    chat.enqueue("Look around").await.expect("enqueued");
    drop(chat);
    // The worker's setup leaves the options alone: the stored budget holds.
    let worker = Worker::new(Arc::clone(&store), endless.clone()).with_setup(|_, chat| {
        chat.with_tools(Look)?;
        Ok(())
    });
    let (mut turns, mut stopped) = (0, 0);
    for _ in 0..4 {
        let report = worker.run_once().await.expect("the store answers");
        turns += report.turns;
        stopped += report.stopped;
    }
    assert_eq!((turns, stopped), (1, 1), "a stopped chat rests");
    assert_eq!(endless.request_count(), 6);
    let rested = status(&store, "unbounded").await;
    assert_eq!((rested.parked, rested.failures), (None, 0));

    let mut chat = Chat::load(Arc::clone(&store), "unbounded", endless.clone())
        .await
        .expect("loaded");
    assert_eq!(chat.tool_options().max_requests_per_turn(), Some(6));
    assert_eq!(
        chat.stopped(),
        Some(&StopReason::Requests { limit: 6, used: 6 })
    );
    // The question, then six calls, each with its result.
    assert_eq!(chat.messages().len(), 13);
    assert_eq!(chat.messages()[12].text(), "nothing new");
    chat.with_tools(Look).expect("tools");
    let outcome = chat.complete().await.expect("carried on");
    assert_eq!(
        outcome.stopped(),
        Some(&StopReason::Requests { limit: 6, used: 6 }),
        "a fresh budget"
    );
    assert_eq!(endless.request_count(), 12);
    assert_eq!(texts(&store, "unbounded").await.len(), 25);
}

/// A background watch: a task due again at once, whose result is always news, so the model
/// asks for another watch every turn.
struct Watch;

#[tool]
impl Watch {
    /// Watches the folder in the background
    async fn execute(&self) -> Task {
        Task::working("watching").with_poll_interval(Duration::ZERO)
    }

    async fn resume(&self, _task: Task) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text("something changed"))
    }
}

/// A case of the suite: each worker turn starts a turn's budgets again, so a chat kept going by
/// its tasks makes a request every turn; a chat budget counts them all and stops it.
pub(super) async fn a_chat_that_tasks_keep_going_stops_at_its_chat_budget(store: Arc<dyn Store>) {
    const PASSES: usize = 8;
    // The chat with a budget first: it rests once stopped, so the second worker picks only
    // the chat without one (a worker runs every due chat of its store).
    for (chat_id, with_chat_budget) in [("chat-budget", true), ("turn-budget", false)] {
        let mut asking =
            Message::assistant_with_calls("", vec![ToolCall::new("w1", "watch", "{}")]);
        asking.usage = Some(Usage::new(600, 100));
        let model = ScriptedProvider::new()
            .then_response(Response::new(asking))
            .cycle();
        let mut chat = Chat::create(Arc::clone(&store), chat_id, model.clone())
            .await
            .expect("created");
        chat.enqueue("Watch the folder").await.expect("enqueued");
        let worker = Worker::new(Arc::clone(&store), model.clone()).with_setup(move |_, chat| {
            chat.with_tools(Watch)?;
            chat.stop_when(StopWhen::tokens(1_000));
            if with_chat_budget {
                chat.stop_when(StopWhen::chat_tokens(2_000));
            }
            Ok(())
        });
        let report = run_passes(&worker, PASSES).await;
        let stored = Chat::load(Arc::clone(&store), chat_id, ScriptedProvider::new())
            .await
            .expect("loaded");
        if with_chat_budget {
            // 700 tokens a turn: the fourth turn finds 2,100 used and sends nothing.
            assert_eq!(model.request_count(), 3, "{report:?}");
            assert_eq!(report.turns, 4, "a stopped chat rests: {report:?}");
            assert_eq!(
                stored.stopped(),
                Some(&StopReason::ChatTokens {
                    limit: 2_000,
                    used: 2_100
                })
            );
            assert_eq!(
                stored.messages().last().map(|m| m.text()).as_deref(),
                Some("something changed"),
                "the last call has its result"
            );
        } else {
            assert_eq!(
                model.request_count(),
                PASSES,
                "every pass a turn, every turn a request: {report:?}"
            );
        }
    }
}

/// A case of the suite.
pub(super) async fn a_stored_chat_that_does_not_decode_is_parked_and_the_others_still_run(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new().then_text("Hello.").cycle();
    for id in ["broken", "fine"] {
        let mut chat = Chat::create(Arc::clone(&store), id, model.clone())
            .await
            .expect("created");
        chat.enqueue(format!("Hi from {id}"))
            .await
            .expect("enqueued");
    }
    // Another program (or a damaged backup) leaves meta that is no JSON.
    let stored = store.load_chat("broken").await.expect("stored");
    let RunClaim::Granted { token, .. } = store
        .claim_run(
            "broken",
            "repair-tool",
            store.now_ms(),
            Duration::from_secs(30),
        )
        .await
        .expect("claimed")
    else {
        panic!("the chat is free");
    };
    let garbage = Commit::new(token, "{\"version\": tr".into(), 1, Vec::new(), Vec::new())
        .with_wake_at(stored.wake_at);
    store.commit("broken", &garbage).await.expect("written");
    store
        .release_run("broken", token, &Release::Unchanged)
        .await
        .expect("released");

    let worker = Worker::new(Arc::clone(&store), model.clone())
        .with_durable_options(DurableOptions::default().with_retry_delay(Duration::ZERO));
    let report = run_passes(&worker, 4).await;
    assert_eq!(
        (report.turns, report.done, report.failed, report.parked),
        (2, 1, 1, 1),
        "{report:?}"
    );
    assert_eq!(
        model.request_count(),
        1,
        "only the fine chat asked the model"
    );
    assert_eq!(texts(&store, "fine").await, ["Hi from fine", "Hello."]);
    let parked = status(&store, "broken").await;
    assert_eq!(parked.parked, Some(ParkReason::Undecodable));
    let error = parked.last_error.expect("kept");
    assert!(error.contains("meta"), "{error}");
    let after = store.load_chat("broken").await.expect("still stored");
    assert_eq!(
        after.messages, stored.messages,
        "the transcript is untouched"
    );
    assert_eq!(
        after.meta, garbage.meta,
        "the row is kept for the application"
    );

    // The application repairs the row and releases the chat: it is answered.
    let RunClaim::Granted { token, .. } = store
        .claim_run(
            "broken",
            "repair-tool",
            store.now_ms(),
            Duration::from_secs(30),
        )
        .await
        .expect("claimed")
    else {
        panic!("the chat is free");
    };
    let repair = Commit::new(token, stored.meta.clone(), 1, Vec::new(), Vec::new())
        .with_wake_at(stored.wake_at);
    store.commit("broken", &repair).await.expect("repaired");
    store
        .release_run("broken", token, &Release::Unchanged)
        .await
        .expect("released");
    assert!(
        status(&store, "broken").await.is_parked(),
        "a repair alone does not release it"
    );
    assert!(store.release_parked("broken").await.expect("released"));
    assert_eq!(run_passes(&worker, 2).await.done, 1);
    assert_eq!(texts(&store, "broken").await, ["Hi from broken", "Hello."]);
}

/// A case of the suite.
pub(super) async fn failed_turns_are_tried_again_after_a_doubling_delay_up_to_its_cap(
    store: Arc<dyn Store>,
) {
    let failing = ScriptedProvider::new()
        .then_error(ProviderError::http("scripted", 503, "overloaded"))
        .cycle();
    let options = DurableOptions::default()
        .with_retry_delay(Duration::from_secs(60))
        .with_max_retry_delay(Duration::from_secs(200))
        .with_max_attempts(5);
    let mut chat = Chat::create(Arc::clone(&store), "backoff", failing.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let worker =
        Worker::new(Arc::clone(&store), failing.clone()).with_durable_options(options.clone());

    // The first failure, through a worker; the next ones through the application's own
    // turns (the chat is not due for a minute): every failed turn counts the same.
    let mut stored_delays = Vec::new();
    for failure in 1..=4_u32 {
        let before = store.now_ms();
        if failure == 1 {
            assert_eq!(worker.run_once().await.expect("ran").failed, 1);
        } else {
            let mut chat = Chat::load(Arc::clone(&store), "backoff", failing.clone())
                .await
                .expect("loaded");
            chat.with_durable_options(options.clone());
            let err = chat.complete().await.expect_err("the provider fails");
            assert!(matches!(err, Error::Provider(_)), "{err}");
        }
        let after = store.now_ms();
        let now = status(&store, "backoff").await;
        assert_eq!((now.failures, now.parked), (failure, None));
        let wake = now.wake_at.expect("due again later");
        let expected = options
            .retry_delay_after(failure)
            .expect("not the last attempt");
        let expected = u64::try_from(expected.as_millis()).expect("fits");
        assert!(
            (before + expected..=after + expected).contains(&wake),
            "failure {failure}: due {} ms later, expected {expected}",
            wake.saturating_sub(before)
        );
        stored_delays.push(expected);
        assert_eq!(
            worker.run_once().await.expect("ran").turns,
            0,
            "not due yet"
        );
    }
    assert_eq!(stored_delays, [60_000, 120_000, 200_000, 200_000]);

    let wake_before = status(&store, "backoff").await.wake_at;
    let mut chat = Chat::load(Arc::clone(&store), "backoff", failing.clone())
        .await
        .expect("loaded");
    chat.with_durable_options(options.clone());
    chat.complete().await.expect_err("the provider fails");
    let parked = status(&store, "backoff").await;
    assert_eq!(parked.parked, Some(ParkReason::AttemptsExhausted));
    assert_eq!(parked.failures, 5);
    assert_eq!(parked.wake_at, wake_before, "parking keeps the wake time");
    assert_eq!(failing.request_count(), 5, "one request per attempt");
    assert_eq!(texts(&store, "backoff").await, ["Hi"]);

    // Released, the chat is due at once (not after the last delay), and a working model
    // finishes it.
    assert!(store.release_parked("backoff").await.expect("released"));
    assert!(
        status(&store, "backoff")
            .await
            .wake_at
            .is_some_and(|at| at <= store.now_ms())
    );
    let answering = ScriptedProvider::new().then_text("Hello.");
    let worker = Worker::new(Arc::clone(&store), answering);
    assert_eq!(run_passes(&worker, 2).await.done, 1);
    assert_eq!(texts(&store, "backoff").await, ["Hi", "Hello."]);
}

/// A case of the suite.
pub(super) async fn a_turn_that_ends_well_starts_the_attempt_count_again(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_error(ProviderError::http("scripted", 503, "overloaded"))
        .then_text("First.")
        .then_error(ProviderError::http("scripted", 503, "overloaded"))
        .then_text("Second.");
    let mut chat = Chat::create(Arc::clone(&store), "flaky", model.clone())
        .await
        .expect("created");
    chat.enqueue("one").await.expect("enqueued");
    // Two failures in a row would park it; one failure between answers never does.
    let worker = Worker::new(Arc::clone(&store), model.clone()).with_durable_options(
        DurableOptions::default()
            .with_retry_delay(Duration::ZERO)
            .with_max_attempts(2),
    );
    let report = run_passes(&worker, 3).await;
    assert_eq!((report.failed, report.done, report.parked), (1, 1, 0));
    assert_eq!(status(&store, "flaky").await.failures, 0);
    let mut chat = Chat::load(Arc::clone(&store), "flaky", model.clone())
        .await
        .expect("loaded");
    chat.enqueue("two").await.expect("enqueued");
    let report = run_passes(&worker, 3).await;
    assert_eq!(
        (report.failed, report.done, report.parked),
        (1, 1, 0),
        "{report:?}"
    );
    assert_eq!(
        texts(&store, "flaky").await,
        ["one", "First.", "two", "Second."]
    );
    assert_eq!(model.request_count(), 4);
}

/// A case of the suite.
pub(super) async fn parked_chats_are_listed_a_page_at_a_time(store: Arc<dyn Store>) {
    let endless = ScriptedProvider::new().then_call("look", json!({})).cycle();
    for n in 0..5 {
        let mut chat = Chat::create(Arc::clone(&store), format!("p{n}"), endless.clone())
            .await
            .expect("created");
        chat.with_tool_options(ToolOptions::default().with_rounds(1))
            .expect("options");
        chat.enqueue("Look").await.expect("enqueued");
    }
    let worker = Worker::new(Arc::clone(&store), endless.clone())
        .with_concurrency(5)
        .with_setup(|_, chat| {
            chat.with_tools(Look)?;
            Ok(())
        });
    assert_eq!(run_passes(&worker, 2).await.parked, 5);
    assert_eq!(endless.request_count(), 5);
    let first = store.parked_chats(None, 2).await.expect("a page");
    let ids = |page: &[ChatStatus]| page.iter().map(|s| s.chat_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ["p0", "p1"]);
    let second = store.parked_chats(Some("p1"), 2).await.expect("a page");
    assert_eq!(ids(&second), ["p2", "p3"]);
    let last = store.parked_chats(Some("p3"), 2).await.expect("a page");
    assert_eq!(ids(&last), ["p4"]);
    assert!(
        last[0].parked == Some(ParkReason::RoundsExceeded) && last[0].failures == 1,
        "{last:?}"
    );
    assert!(matches!(
        store.release_parked("nobody").await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.chat_status("nobody").await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A case of the suite.
pub(super) async fn a_turn_that_panics_counts_as_a_failed_attempt(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new().then_text("Hello.");
    let mut chat = Chat::create(Arc::clone(&store), "panicky", model.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let worker = Worker::new(Arc::clone(&store), model.clone())
        .with_setup(|_, _| panic!("a bug in the application's setup"))
        .with_durable_options(
            DurableOptions::default()
                .with_retry_delay(Duration::ZERO)
                .with_max_attempts(2),
        );
    let report = run_passes(&worker, 4).await;
    assert_eq!(
        (report.turns, report.failed, report.parked),
        (2, 2, 1),
        "{report:?}"
    );
    let parked = status(&store, "panicky").await;
    assert_eq!(
        (parked.parked, parked.failures),
        (Some(ParkReason::AttemptsExhausted), 2)
    );
    let error = parked.last_error.expect("kept");
    assert!(
        error.contains("a bug in the application's setup"),
        "{error}"
    );
    assert_eq!(model.request_count(), 0);
    assert_eq!(texts(&store, "panicky").await, ["Hi"]);

    assert!(store.release_parked("panicky").await.expect("released"));
    let fixed = Worker::new(Arc::clone(&store), model.clone());
    assert_eq!(run_passes(&fixed, 2).await.done, 1);
    assert_eq!(texts(&store, "panicky").await, ["Hi", "Hello."]);
}

/// A model with a bug: every request it is sent panics (after the request is paid for, say,
/// while reading a particular answer), once `after` is notified when it is set. It counts the
/// requests.
#[derive(Clone, Default)]
struct PanickingModel {
    requests: Arc<std::sync::atomic::AtomicUsize>,
    after: Option<Arc<tokio::sync::Notify>>,
}

impl PanickingModel {
    /// A model that panics only once `after` is notified.
    fn after(after: Arc<tokio::sync::Notify>) -> Self {
        Self {
            after: Some(after),
            ..Self::default()
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Provider for PanickingModel {
    fn protocol(&self) -> &str {
        "panicking"
    }

    fn model(&self) -> &str {
        "buggy"
    }

    fn complete<'a>(
        &'a self,
        _request: llm_tools_core::Request<'a>,
    ) -> llm_tools_core::BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            self.requests
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(after) = &self.after {
                after.notified().await;
            }
            panic!("a bug in the provider")
        })
    }
}

/// A case of the suite: a provider that panics in a worker's turn makes a failed turn like
/// any other: counted with the panic's message, tried again after the backoff, parked once
/// the attempts are used up, so a bug that panics after each paid request spends a bounded
/// number of them.
pub(super) async fn a_provider_that_panics_in_a_workers_turn_counts_as_a_failed_attempt(
    store: Arc<dyn Store>,
) {
    let mut chat = Chat::create(Arc::clone(&store), "buggy", ScriptedProvider::new())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let model = PanickingModel::default();
    let worker = Worker::new(Arc::clone(&store), model.clone()).with_durable_options(
        DurableOptions::default()
            .with_retry_delay(Duration::ZERO)
            .with_max_attempts(2),
    );
    let report = run_passes(&worker, 4).await;
    assert_eq!(
        (report.turns, report.failed, report.parked),
        (2, 2, 1),
        "{report:?}"
    );
    assert_eq!(model.requests(), 2);
    let parked = status(&store, "buggy").await;
    assert_eq!(
        (parked.parked, parked.failures),
        (Some(ParkReason::AttemptsExhausted), 2)
    );
    let error = parked.last_error.expect("kept");
    assert!(error.contains("a bug in the provider"), "{error}");
    assert_eq!(texts(&store, "buggy").await, ["Hi"]);
}

/// A case of the suite: a provider that panics in an application's `ask` of a durable chat
/// fails the turn as an error would: the claim is given up as a failed turn's, counted, and
/// the chat is due again after the backoff.
pub(super) async fn a_provider_that_panics_in_an_ask_counts_as_a_failed_turn(
    store: Arc<dyn Store>,
) {
    use futures::FutureExt as _;

    let model = PanickingModel::default();
    let mut chat = Chat::create(Arc::clone(&store), "buggy-ask", model.clone())
        .await
        .expect("created");
    chat.with_durable_options(DurableOptions::default().with_retry_delay(Duration::ZERO));
    let panicked = std::panic::AssertUnwindSafe(chat.ask("Hi"))
        .catch_unwind()
        .await;
    assert!(
        panicked.is_err(),
        "the provider's panic goes on to the caller"
    );
    assert_eq!(model.requests(), 1);
    // The chat's next use of its claim waits for the release under way.
    let _ = chat.save().await;
    let after = status(&store, "buggy-ask").await;
    assert_eq!(after.failures, 1, "{after:?}");
    assert!(
        after
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("panicked")),
        "{after:?}"
    );
}

/// A model that never answers; it says when it was asked.
struct NeverAnswers(Arc<tokio::sync::Notify>);

impl Provider for NeverAnswers {
    fn protocol(&self) -> &str {
        "never"
    }

    fn model(&self) -> &str {
        "silent"
    }

    fn complete<'a>(
        &'a self,
        _request: llm_tools_core::Request<'a>,
    ) -> llm_tools_core::BoxFuture<'a, Result<Response, ProviderError>> {
        self.0.notify_one();
        Box::pin(std::future::pending())
    }
}

/// A case of the suite: two chats' turns joined in one task, the second's provider panicking
/// while the first's waits for its answer: the second turn failed and is counted; the first,
/// dropped while that panic unwinds, did not fail, and gives its claim up unchanged.
pub(super) async fn a_turn_dropped_by_another_turns_panic_is_not_a_failed_turn(
    store: Arc<dyn Store>,
) {
    use futures::FutureExt as _;

    let asked = Arc::new(tokio::sync::Notify::new());
    let mut waiting = Chat::create(
        Arc::clone(&store),
        "waiting",
        NeverAnswers(Arc::clone(&asked)),
    )
    .await
    .expect("created");
    let mut buggy = Chat::create(
        Arc::clone(&store),
        "buggy-peer",
        PanickingModel::after(asked),
    )
    .await
    .expect("created");
    let both = async { futures::join!(waiting.ask("Hi"), buggy.ask("Hi")) };
    let panicked = std::panic::AssertUnwindSafe(both).catch_unwind().await;
    assert!(
        panicked.is_err(),
        "the provider's panic goes on to the caller"
    );
    // Each chat's next use of its claim waits for the release under way.
    let _ = waiting.save().await;
    let _ = buggy.save().await;
    assert_eq!(status(&store, "buggy-peer").await.failures, 1);
    let waited = status(&store, "waiting").await;
    assert_eq!((waited.failures, waited.last_error), (0, None));
}

/// The ids of picked chats.
fn picked_ids(picked: &[DueChat]) -> Vec<&str> {
    picked.iter().map(|due| due.chat_id.as_str()).collect()
}

/// A case of the suite: a chat whose turn ends its worker every time (a tool that aborts the
/// process, say) is claimed by one worker after another, each dying with the claim held; the
/// pick that would take it over for the bound's time parks it instead, with a reason the
/// application reads, and nothing of it is lost. Released, it runs again.
///
/// The dead workers are picks through the store that are never given back, at times the test
/// sets (each a lease past the one before), so no clock is waited on; two pickers race at each
/// step, and exactly one gets the chat.
pub(super) async fn a_chat_whose_turn_ends_its_worker_every_time_is_parked_at_the_bound(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new().then_text("Hello.");
    let mut chat = Chat::create(Arc::clone(&store), "poison", model.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let before = store.load_chat("poison").await.expect("stored");

    let bound = DEFAULT_MAX_ABANDONED_CLAIMS;
    let lease = Duration::from_secs(30);
    let lease_ms = 30_000;
    let start = store.now_ms();
    let mut last_token = 0;
    for n in 0..bound {
        // The n-th worker's pick, a lease after the one before: the claim before it ended
        // without a release (its worker died), so this is a takeover for every n but the first.
        let now = start + u64::from(n) * (lease_ms + 1);
        let shared = &store;
        let pick = |name: String| async move {
            shared
                .claim_due_parking_abandoned(&name, now, lease, 10, bound)
                .await
                .expect("the store answers")
        };
        let (a, b) = tokio::join!(pick(format!("dying-a{n}")), pick(format!("dying-b{n}")));
        let mut ids = picked_ids(&a);
        ids.extend(picked_ids(&b));
        assert_eq!(
            ids,
            ["poison"],
            "pick {n}: exactly one of two pickers takes the chat"
        );
        last_token = a.iter().chain(&b).next().expect("one pick").token;
        let now_status = status(&store, "poison").await;
        assert_eq!(
            (now_status.abandoned_claims, now_status.parked),
            (n, None),
            "pick {n}"
        );
    }

    // The next pick would take the chat over for the third time in a row: it parks it instead.
    let now = start + u64::from(bound) * (lease_ms + 1);
    let pick = |name: &'static str| {
        let store = Arc::clone(&store);
        async move {
            store
                .claim_due_parking_abandoned(name, now, lease, 10, bound)
                .await
                .expect("the store answers")
        }
    };
    let (a, b) = tokio::join!(pick("next-a"), pick("next-b"));
    assert!(a.is_empty() && b.is_empty(), "{a:?} {b:?}");
    let parked = status(&store, "poison").await;
    assert_eq!(parked.parked, Some(ParkReason::ClaimsAbandoned));
    assert_eq!(
        parked.abandoned_claims, bound,
        "counted exactly, once per takeover"
    );
    assert_eq!(parked.failures, 0, "no turn failed: none ended");
    assert_eq!(parked.parked_at, Some(now));
    let error = parked.last_error.clone().expect("the reason is kept");
    assert!(error.contains("ended its worker 3 times"), "{error}");
    assert_eq!(
        store.parked_chats(None, 10).await.expect("listed"),
        std::slice::from_ref(&parked)
    );

    // The last dead worker's late write is refused: parking moved the token on.
    let late = Commit::new(last_token, before.meta.clone(), 1, Vec::new(), Vec::new());
    assert!(matches!(
        store.commit("poison", &late).await,
        Err(StoreError::Stale { .. })
    ));

    // No worker picks it: the model is never asked. Nothing is lost.
    let worker = Worker::new_shared(Arc::clone(&store), Arc::new(model.clone()));
    assert_eq!(run_passes(&worker, 2).await.turns, 0);
    assert_eq!(model.request_count(), 0);
    let after = store.load_chat("poison").await.expect("still stored");
    assert_eq!(
        (&after.messages, &after.meta, &after.calls, after.wake_at),
        (
            &before.messages,
            &before.meta,
            &before.calls,
            before.wake_at
        ),
        "history, calls and state as they were"
    );

    // The application deals with the cause and resumes it: the count starts again, and a
    // worker answers it.
    assert!(store.release_parked("poison").await.expect("released"));
    let resumed = status(&store, "poison").await;
    assert_eq!((resumed.parked, resumed.abandoned_claims), (None, 0));
    let report = run_passes(&worker, 2).await;
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    assert_eq!(texts(&store, "poison").await, ["Hi", "Hello."]);
    let healthy = status(&store, "poison").await;
    assert_eq!(
        (healthy.parked, healthy.abandoned_claims, healthy.last_error),
        (None, 0, None)
    );
}

/// A case of the suite: a chat whose turn ended its worker once, then was taken over and
/// finished, starts its count of abandoned claims again, so crashes far apart never add up to
/// a park; a worker's own bound (`with_max_abandoned_claims`) is the one it picks with, and a
/// turn the application runs itself resumes a parked chat.
pub(super) async fn a_chat_that_ended_its_worker_once_and_then_finished_starts_its_count_again(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_text("First.")
        .then_text("Second.")
        .then_text("Third.")
        .then_text("Fourth.");
    Chat::create(Arc::clone(&store), "crashed-once", model.clone())
        .await
        .expect("created");
    let enqueue = async |message: &str| {
        let mut chat = Chat::load(Arc::clone(&store), "crashed-once", model.clone())
            .await
            .expect("loaded");
        chat.enqueue(message).await.expect("enqueued");
    };
    // Two abandoned claims in a row park the chat.
    let worker = Worker::new_shared(Arc::clone(&store), Arc::new(model.clone()))
        .with_durable_options(DurableOptions::default().with_max_abandoned_claims(2));
    for message in ["one", "two", "three"] {
        enqueue(message).await;
        // A worker picks the chat and dies mid-turn: its claim, of a lease that ends at once,
        // is never given back.
        let dying = store
            .claim_due_parking_abandoned("dying", store.now_ms(), Duration::ZERO, 10, 2)
            .await
            .expect("picked");
        assert_eq!(picked_ids(&dying), ["crashed-once"], "{message}");
        // The next worker takes it over (one abandoned claim: under the bound) and finishes.
        let report = worker.run_once().await.expect("ran");
        assert_eq!(
            (report.turns, report.done, report.parked),
            (1, 1, 0),
            "{message}: {report:?}"
        );
        let finished = status(&store, "crashed-once").await;
        assert_eq!(
            (finished.parked, finished.abandoned_claims),
            (None, 0),
            "{message}: a turn that ended well starts the count again"
        );
    }
    assert_eq!(
        texts(&store, "crashed-once").await,
        ["one", "First.", "two", "Second.", "three", "Third."]
    );

    // Two dead workers in a row (picked with no bound of their own): the worker's pick would
    // be the second takeover, its bound, and parks the chat instead of running it.
    enqueue("four").await;
    for n in 0..2 {
        // Two workers (a holder each): a worker taking back its own claim counts nothing.
        let dying = store
            .claim_due_parking_abandoned(
                &format!("dying-{n}"),
                store.now_ms(),
                Duration::ZERO,
                10,
                u32::MAX,
            )
            .await
            .expect("picked");
        assert_eq!(picked_ids(&dying), ["crashed-once"]);
    }
    assert_eq!(status(&store, "crashed-once").await.abandoned_claims, 1);
    assert_eq!(worker.run_once().await.expect("ran").turns, 0);
    let parked = status(&store, "crashed-once").await;
    assert_eq!(
        (parked.parked, parked.abandoned_claims),
        (Some(ParkReason::ClaimsAbandoned), 2)
    );
    let error = parked.last_error.expect("kept");
    assert!(error.contains("ended its worker 2 times"), "{error}");
    assert_eq!(model.request_count(), 3, "the parked chat asked nothing");

    // The application runs the turn itself: it ends well, which resumes the chat.
    let mut chat = Chat::load_shared(Arc::clone(&store), "crashed-once", Arc::new(model.clone()))
        .await
        .expect("loaded");
    assert_eq!(
        chat.complete().await.expect("answered").text().as_deref(),
        Some("Fourth.")
    );
    let resumed = status(&store, "crashed-once").await;
    assert_eq!(
        (resumed.parked, resumed.abandoned_claims, resumed.last_error),
        (None, 0, None)
    );
}

/// A case of the suite: a chat whose turn ends its worker, and whose dead claim the
/// application's own claim takes over once the lease ended (the user sends "hello?": the
/// `enqueue` takes the claim, counting the takeover, and gives it back unchanged), is counted
/// all the same: at the bound the next pick parks it instead of running the turn that ended
/// its workers again, though that pick found no holder to take over.
pub(super) async fn a_crashed_chat_the_application_claims_after_the_lease_is_parked_at_the_bound(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new().then_text("Hello.");
    let mut chat = Chat::create(Arc::clone(&store), "asked-again", model.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let bound = DEFAULT_MAX_ABANDONED_CLAIMS;
    for n in 1..=bound {
        // A worker picks the chat and dies mid-turn: its claim, of a lease that ends at once,
        // is never given back.
        let dying = store
            .claim_due_parking_abandoned(
                &format!("dying-{n}"),
                store.now_ms(),
                Duration::ZERO,
                10,
                bound,
            )
            .await
            .expect("picked");
        assert_eq!(picked_ids(&dying), ["asked-again"], "crash {n}");
        // The user asks again: the enqueue takes the dead claim over.
        let mut chat = Chat::load(Arc::clone(&store), "asked-again", model.clone())
            .await
            .expect("loaded");
        chat.enqueue(format!("hello? {n}")).await.expect("enqueued");
        let counted = status(&store, "asked-again").await;
        assert_eq!(
            (counted.abandoned_claims, counted.parked),
            (n, None),
            "crash {n}: the application's takeover is counted and kept"
        );
    }
    // The next pick finds no holder, and the count at the bound: it parks the chat.
    let worker = Worker::new_shared(Arc::clone(&store), Arc::new(model.clone()));
    assert_eq!(worker.run_once().await.expect("ran").turns, 0);
    let parked = status(&store, "asked-again").await;
    assert_eq!(
        (parked.parked, parked.abandoned_claims),
        (Some(ParkReason::ClaimsAbandoned), bound)
    );
    let error = parked.last_error.expect("kept");
    assert!(error.contains("ended its worker 3 times"), "{error}");
    assert_eq!(
        model.request_count(),
        0,
        "the turn that crashed never ran again"
    );
    assert_eq!(
        texts(&store, "asked-again").await,
        ["Hi", "hello? 1", "hello? 2", "hello? 3"]
    );
}

/// A case of the suite: a worker whose live turn's renewals lagged past the lease, and which
/// picks the chat again meanwhile (and gives it back, as it is still running it), takes back a
/// claim of its own: no abandoned claim is counted, however often, so the chat is never parked
/// for it. Another worker's pick (a restarted process: a new holder) still counts the claim.
/// The times are the test's, passed to the store: no clock is waited on.
pub(super) async fn a_worker_taking_back_its_own_lapsed_claim_counts_no_abandoned_claim(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new().then_text("Hello.");
    let mut chat = Chat::create(Arc::clone(&store), "lagging", model.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let bound = DEFAULT_MAX_ABANDONED_CLAIMS;
    let worker = Worker::new_shared(Arc::clone(&store), Arc::new(model.clone()));
    let own = worker.holder().to_owned();
    let lease = Duration::from_secs(30);
    let lease_ms = 30_000;
    let start = store.now_ms();
    let pick = async |holder: &str, now: u64| {
        store
            .claim_due_parking_abandoned(holder, now, lease, 10, bound)
            .await
            .expect("the store answers")
    };
    for n in 0..=bound {
        let at = start + u64::from(n) * 2 * (lease_ms + 1);
        // The worker picks the chat; its turn's renewals lag past the lease.
        assert_eq!(picked_ids(&pick(&own, at).await), ["lagging"], "pick {n}");
        // The same worker picks it again while the turn runs, and gives it back.
        let again = pick(&own, at + lease_ms + 1).await;
        assert_eq!(
            picked_ids(&again),
            ["lagging"],
            "pick {n} again: not parked"
        );
        let counted = status(&store, "lagging").await;
        assert_eq!(
            (counted.abandoned_claims, counted.parked),
            (0, None),
            "pick {n}: its own claim is no abandoned one"
        );
        store
            .release_run("lagging", again[0].token, &Release::Unchanged)
            .await
            .expect("given back");
    }

    // The worker dies holding the claim; the restarted process (a new worker, a new holder)
    // takes it over after the lease: that is counted.
    let at = start + u64::from(bound + 1) * 2 * (lease_ms + 1);
    assert_eq!(picked_ids(&pick(&own, at).await), ["lagging"]);
    let restarted = Worker::new_shared(Arc::clone(&store), Arc::new(model.clone()));
    assert_ne!(restarted.holder(), own);
    let taken = pick(restarted.holder(), at + lease_ms + 1).await;
    assert_eq!(picked_ids(&taken), ["lagging"]);
    assert_eq!(status(&store, "lagging").await.abandoned_claims, 1);
    store
        .release_run("lagging", taken[0].token, &Release::Unchanged)
        .await
        .expect("given back");

    // The chat still runs: answered, its count started again.
    let report = restarted.run_once().await.expect("ran");
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    assert_eq!(texts(&store, "lagging").await, ["Hi", "Hello."]);
    let healthy = status(&store, "lagging").await;
    assert_eq!((healthy.parked, healthy.abandoned_claims), (None, 0));
}
