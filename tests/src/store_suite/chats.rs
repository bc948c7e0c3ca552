//! The cases about chats, claims and conditional writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt as _;
use llm_tools_core::chat::{Outcome, ToolOptions};
use llm_tools_core::store::{
    CallRecord, CallWrite, ChatRecord, ChatStatus, Commit, DueChat, DurableOptions, Release,
    RunClaim, Store, StoreError,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{
    BoxFuture, Chat, Error, Question, Role, Task, ToolContext, ToolError, ToolOutcome, ToolOutput,
    tool,
};
use serde_json::json;
use tokio::sync::Notify;

/// Drops a database table
#[tool(needs_approval)]
async fn drop_table(table: String) -> String {
    format!("dropped {table}")
}

/// Deploys to the region the user picks
#[tool]
async fn deploy(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx.ask(Question::new("Which region?")).await?;
    Ok(format!(
        "deployed to {}",
        answer.get_str("region").unwrap_or("nowhere")
    ))
}

struct Render;

#[tool]
impl Render {
    /// Renders a video in the background
    async fn execute(&self, clip: String) -> Task {
        Task::working("rendering").with_data("clip", json!(clip))
    }

    async fn resume(&self, task: Task, clip: String) -> ToolOutcome {
        let kept = task.get("clip").cloned().unwrap_or_default();
        ToolOutcome::Output(ToolOutput::text(format!("rendered {clip} ({kept})")))
    }
}

/// Returns the current time
#[tool]
async fn current_time() -> String {
    "12:00".into()
}

fn add_tools(chat: &mut Chat) {
    chat.with_tools((DropTable, Deploy, Render, CurrentTime))
        .expect("tools register");
}

fn tool_results(chat: &Chat) -> Vec<(String, String)> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap_or_default(), m.text()))
        .collect()
}

/// A case of the suite.
pub(super) async fn every_transition_is_stored_and_read_back_by_a_fresh_chat(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_calls([
            ("current_time", json!({})),
            ("drop_table", json!({"table": "sessions"})),
            ("deploy", json!({})),
            ("render", json!({"clip": "intro"})),
        ])
        .then_text("All done.");

    let mut chat = Chat::create(store.clone(), "c1", model.clone())
        .await
        .expect("created");
    chat.with_instructions("Be brief.");
    add_tools(&mut chat);
    chat.with_tool_options(ToolOptions::default().with_rounds(7))
        .expect("options");
    let outcome = chat.ask("Do everything").await.expect("asked");
    let pause = outcome.pause().expect("paused");
    assert_eq!(pause.calls().len(), 3, "approval, question and task wait");
    let written = chat.messages().to_vec();
    drop(chat);

    // A fresh chat reads the same transcript and the same pauses.
    let mut chat = Chat::load(store.clone(), "c1", model.clone())
        .await
        .expect("loaded");
    add_tools(&mut chat);
    assert_eq!(chat.messages(), written.as_slice());
    assert_eq!(chat.messages()[0].text(), "Be brief.");
    assert_eq!(
        chat.tool_options().rounds(),
        7,
        "options are stored with the chat"
    );
    assert_eq!(chat.pending_approvals().len(), 1);
    assert_eq!(chat.pending_questions().len(), 1);
    assert_eq!(
        chat.pending_tasks()[0].task.get("clip"),
        Some(&json!("intro"))
    );
    assert_eq!(tool_results(&chat), [("call_1".into(), "12:00".into())]);

    // Settle two of them and save; a third chat sees the decisions.
    let approval = chat.pending_approvals()[0].id.clone();
    let question = chat.pending_questions()[0].call.id.clone();
    chat.approve_always(&approval).expect("approved");
    chat.answer(&question, json!({"region": "eu"}))
        .expect("answered");
    chat.save().await.expect("saved");
    drop(chat);

    let mut chat = Chat::load(store.clone(), "c1", model.clone())
        .await
        .expect("loaded again");
    add_tools(&mut chat);
    assert!(chat.pending_approvals().is_empty());
    assert!(chat.pending_questions().is_empty());
    assert_eq!(chat.pending_tasks().len(), 1);
    let outcome = chat.complete().await.expect("completed");
    assert_eq!(outcome.text().as_deref(), Some("All done."));
    drop(chat);

    let chat = Chat::load(store, "c1", model)
        .await
        .expect("loaded at the end");
    assert!(!chat.is_paused());
    assert_eq!(
        tool_results(&chat),
        [
            ("call_1".into(), "12:00".into()),
            ("call_2".into(), "dropped sessions".into()),
            ("call_3".into(), "deployed to eu".into()),
            ("call_4".into(), "rendered intro (\"intro\")".into()),
        ]
    );
    assert_eq!(
        chat.messages().last().map(|m| m.text()).as_deref(),
        Some("All done.")
    );
    // The remembered approval was stored with the chat.
    let json = serde_json::to_value(chat.state()).expect("state serializes");
    assert_eq!(json["decisions"][0]["name"], "drop_table");
}

/// A case of the suite.
pub(super) async fn a_paused_call_gives_its_claim_up_and_a_running_one_holds_it(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("render", json!({"clip": "c"}))
        .then_text("ok");
    let mut chat = Chat::create(store.clone(), "paused", model)
        .await
        .expect("created");
    add_tools(&mut chat);
    assert!(chat.ask("Render").await.expect("asked").is_paused());

    let record = store.load_chat("paused").await.expect("record");
    let call = &record.calls[0];
    assert_eq!(call.state, "task");
    assert_eq!(call.claimed_until, None, "a paused call holds no claim");
    assert_eq!((call.attempt, call.token), (1, 1));
}

/// Waits until the test lets it go: a call that is "running" for as long as the test wants.
struct Gate {
    started: Arc<Notify>,
    open: Arc<Notify>,
    runs: Arc<AtomicUsize>,
}

#[tool(max_run_time = "10m")]
impl Gate {
    /// Waits at the gate
    async fn execute(&self, ctx: &ToolContext) -> String {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        self.open.notified().await;
        format!("passed on attempt {}", ctx.attempt())
    }
}

/// A case of the suite.
pub(super) async fn two_chats_race_for_one_run_claim_and_one_gets_busy(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("gate", json!({}))
        .then_text("through");
    let gate = Gate {
        started: Arc::new(Notify::new()),
        open: Arc::new(Notify::new()),
        runs: Arc::new(AtomicUsize::new(0)),
    };
    let (started, open, runs) = (
        Arc::clone(&gate.started),
        Arc::clone(&gate.open),
        Arc::clone(&gate.runs),
    );
    let mut first = Chat::create(store.clone(), "race", model.clone())
        .await
        .expect("created");
    first.with_tools(gate).expect("tool");
    let mut second = Chat::load(store.clone(), "race", model.clone())
        .await
        .expect("loaded");
    second
        .with_tools(Gate {
            started: Arc::new(Notify::new()),
            open: Arc::new(Notify::new()),
            runs: Arc::clone(&runs),
        })
        .expect("tool");

    let running = tokio::spawn(async move {
        let outcome = first.ask("Go through").await;
        (first, outcome)
    });
    started.notified().await;
    let busy = second.complete().await.expect("an outcome, not an error");
    let Outcome::Busy(busy) = busy else {
        panic!("the second chat ran: {busy:?}");
    };
    assert_eq!(busy.call_id(), None, "the whole chat is held");
    assert!(busy.remaining() > Duration::ZERO);
    assert!(
        second.messages().is_empty(),
        "nothing ran in the second chat"
    );

    open.notify_one();
    let (_first, outcome) = running.await.expect("joined");
    assert_eq!(outcome.expect("done").text().as_deref(), Some("through"));
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the call ran once");

    // Now the claim is free: the second chat reads what the first wrote.
    let outcome = second.complete().await.expect("completed");
    assert_eq!(outcome.text().as_deref(), Some("through"));
    assert_eq!(second.messages().len(), 4);
}

/// A store whose run-claim renewals never arrive, as from a holder that stalled (or a database
/// that hangs): its run claim ends with its first lease. The renewal is reported as done, or
/// never answered ([`Renewals`]). Everything else goes to the real store.
pub(super) struct StalledHeartbeat(pub(super) Arc<dyn Store>, pub(super) Renewals);

/// What a [`StalledHeartbeat`] does with a renewal of a run claim.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Renewals {
    /// Says it renewed, and renews nothing: the holder thinks it holds the chat.
    Skipped,
    /// Never answers: the holder cannot know whether it still holds the chat.
    Hung,
}

impl Store for StalledHeartbeat {
    fn now_ms(&self) -> u64 {
        self.0.now_ms()
    }

    fn create_chat<'a>(
        &'a self,
        id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.create_chat(id, record)
    }
    fn load_chat<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        self.0.load_chat(id)
    }
    fn claim_run<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        self.0.claim_run(id, holder, now_ms, lease)
    }
    fn renew_run<'a>(
        &'a self,
        _: &'a str,
        _: u64,
        _: u64,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        match self.1 {
            Renewals::Skipped => async { Ok(()) }.boxed(),
            Renewals::Hung => std::future::pending().boxed(),
        }
    }
    fn release_run<'a>(
        &'a self,
        id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.release_run(id, token, release)
    }
    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        self.0.claim_due(holder, now_ms, lease, limit)
    }
    fn commit<'a>(&'a self, id: &'a str, c: &'a Commit) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.0.commit(id, c)
    }
    fn chat_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        self.0.chat_status(id)
    }
    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        self.0.parked_chats(after, limit)
    }
    fn release_parked<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.0.release_parked(id)
    }
    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.0.request_cancel(id, now_ms)
    }
    fn cancel_requested<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.0.cancel_requested(id)
    }
}

/// Waits far longer than its claim: a run that outlives its `max_run_time` lease.
struct Slow {
    started: Arc<Notify>,
    attempts: Arc<AtomicUsize>,
}

#[tool(max_run_time = "800ms")]
impl Slow {
    /// Works slowly on its first attempt
    async fn execute(&self, ctx: &ToolContext) -> String {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if ctx.attempt() == 1 {
            self.started.notify_one();
            std::future::pending::<()>().await;
        }
        format!("finished on attempt {}", ctx.attempt())
    }
}

/// A case of the suite.
pub(super) async fn an_expired_call_claim_runs_again_and_the_stale_holder_is_refused(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("slow", json!({}))
        .then_text("done");
    let attempts = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Notify::new());
    let mut stalled = Chat::create(
        StalledHeartbeat(store.clone(), Renewals::Skipped),
        "expire",
        model.clone(),
    )
    .await
    .expect("created");
    stalled
        .with_durable_options(DurableOptions::default().with_run_lease(Duration::from_millis(200)));
    stalled
        .with_tools(Slow {
            started: Arc::clone(&started),
            attempts: Arc::clone(&attempts),
        })
        .expect("tool");
    let mut taker = Chat::load(store.clone(), "expire", model.clone())
        .await
        .expect("loaded");
    taker
        .with_tools(Slow {
            started: Arc::new(Notify::new()),
            attempts: Arc::clone(&attempts),
        })
        .expect("tool");

    let running = tokio::spawn(async move { stalled.ask("Work").await });
    started.notified().await;

    // The stalled holder's run claim ends after 200 ms; its call's claim only after 800 ms.
    let mut saw_call_claim = false;
    let outcome = loop {
        match taker.complete().await.expect("an outcome") {
            Outcome::Busy(busy) => {
                if let Some(call_id) = busy.call_id() {
                    assert_eq!(call_id, "call_1");
                    saw_call_claim = true;
                }
                tokio::time::sleep(busy.remaining().min(Duration::from_millis(100))).await;
            }
            other => break other,
        }
    };
    assert!(saw_call_claim, "the call's claim outlived the run claim");
    assert_eq!(outcome.text().as_deref(), Some("done"));
    assert_eq!(
        tool_results(&taker),
        [("call_1".into(), "finished on attempt 2".into())]
    );
    assert_eq!(attempts.load(Ordering::SeqCst), 2);

    // The first run timed out at its limit; its timeout result was refused, not written.
    let refused = running
        .await
        .expect("joined")
        .expect_err("its writes are refused");
    let Error::Store(store_error) = &refused else {
        panic!("not a store error: {refused}");
    };
    assert!(store_error.is_stale(), "{store_error}");
    let stored = Chat::load(store, "expire", model).await.expect("loaded");
    assert_eq!(tool_results(&stored), tool_results(&taker));
}

fn record(call_id: &str, state: &str, token: u64) -> CallRecord {
    CallRecord::new(
        0,
        0,
        call_id.into(),
        state.into(),
        1,
        token,
        None,
        "{}".into(),
    )
}

/// A case of the suite.
pub(super) async fn a_write_under_a_stale_token_is_refused_and_changes_nothing(
    store: Arc<dyn Store>,
) {
    store
        .create_chat("t", &ChatRecord::new("{}".into(), vec![], vec![], 0))
        .await
        .expect("created");
    let RunClaim::Granted { token: run, .. } = store
        .claim_run("t", "a", 0, Duration::from_secs(60))
        .await
        .expect("claimed")
    else {
        panic!("not granted");
    };
    let first = Commit::new(
        run,
        "{}".into(),
        0,
        vec![],
        vec![CallWrite::new(record("c", "running", 1), None)],
    );
    store
        .commit("t", &first)
        .await
        .expect("the first claim is written");
    let taken = Commit::new(
        run,
        "{}".into(),
        0,
        vec![],
        vec![CallWrite::new(record("c", "running", 2), Some(1))],
    );
    store
        .commit("t", &taken)
        .await
        .expect("the claim is granted again");
    let late = Commit::new(
        run,
        "{}".into(),
        0,
        vec![r#"{"role":"tool"}"#.into()],
        vec![CallWrite::new(record("c", "finished", 1), Some(1))],
    );
    let err = store
        .commit("t", &late)
        .await
        .expect_err("a stale token is refused");
    assert!(err.is_stale(), "{err}");
    assert!(err.to_string().contains("call `c`"), "{err}");
    let stored = store.load_chat("t").await.expect("loaded");
    assert_eq!(stored.calls[0].token, 2);
    assert_eq!(stored.calls[0].state, "running");
    assert!(
        stored.messages.is_empty(),
        "the refused commit wrote no message"
    );

    // A commit under a run claim another holder took is refused too.
    let RunClaim::Granted {
        token: taken_by_b, ..
    } = store
        .claim_run("t", "b", u64::MAX / 2, Duration::from_secs(60))
        .await
        .expect("claimed by b")
    else {
        panic!("not granted");
    };
    let err = store
        .commit("t", &first)
        .await
        .expect_err("stale run claim");
    assert!(err.to_string().contains("run claim"), "{err}");

    // And one under a claim its holder gave up (a dropped turn's commit, still on its way):
    // no one claimed the chat since, yet the write lands under no claim.
    store
        .release_run("t", taken_by_b, &Release::Unchanged)
        .await
        .expect("released");
    let after_release = Commit::new(
        taken_by_b,
        "{}".into(),
        0,
        vec![r#"{"role":"user"}"#.into()],
        vec![],
    );
    let err = store
        .commit("t", &after_release)
        .await
        .expect_err("a claim given up");
    assert!(err.is_stale(), "{err}");
    let stored = store.load_chat("t").await.expect("loaded");
    assert!(stored.messages.is_empty(), "the late commit wrote nothing");
}
