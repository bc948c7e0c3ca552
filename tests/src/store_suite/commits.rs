//! The cases about how many writes a durable round costs: a round of quick calls opens with
//! its claims and closes with its results, two commits; the turn's last commit gives the run
//! claim up; a call that ran long has its result written the moment it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use llm_tools_core::chat::Step;
use llm_tools_core::store::{
    CallRecord, CallWrite, ChatRecord, ChatStatus, Commit, DueChat, DurableOptions, Release,
    RunClaim, Store, StoreError,
};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{BoxFuture, Chat, Role, tool};
use serde_json::json;
use tokio::sync::{Notify, mpsc};

/// Every write a chat makes, counted, with the number of calls each commit wrote with their
/// result (finished, or appended to the transcript) sent to `finished` once it is stored;
/// everything goes to the real store.
struct Counting {
    store: Arc<dyn Store>,
    claims: AtomicUsize,
    commits: AtomicUsize,
    commits_releasing: AtomicUsize,
    releases: AtomicUsize,
    /// Whether the next commit fails (as a database locked too long does), writing nothing.
    fail_next_commit: std::sync::atomic::AtomicBool,
    finished: mpsc::UnboundedSender<usize>,
}

impl Counting {
    fn new(store: Arc<dyn Store>) -> (Arc<Self>, mpsc::UnboundedReceiver<usize>) {
        let (finished, receiver) = mpsc::unbounded_channel();
        let counting = Self {
            store,
            claims: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            commits_releasing: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
            fail_next_commit: std::sync::atomic::AtomicBool::new(false),
            finished,
        };
        (Arc::new(counting), receiver)
    }

    /// (run claims, commits, commits that also released, releases on their own).
    fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.claims.load(Ordering::SeqCst),
            self.commits.load(Ordering::SeqCst),
            self.commits_releasing.load(Ordering::SeqCst),
            self.releases.load(Ordering::SeqCst),
        )
    }

    fn report(&self, commit: &Commit) {
        let finished = commit
            .calls
            .iter()
            .filter(|w| has_result(&w.record.state))
            .count();
        let _ = self.finished.send(finished);
    }
}

impl Store for Counting {
    fn now_ms(&self) -> u64 {
        self.store.now_ms()
    }

    fn create_chat<'a>(
        &'a self,
        id: &'a str,
        record: &'a ChatRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.create_chat(id, record)
    }
    fn load_chat<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatRecord, StoreError>> {
        self.store.load_chat(id)
    }
    fn claim_run<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunClaim, StoreError>> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.store.claim_run(id, holder, now_ms, lease)
    }
    fn renew_run<'a>(
        &'a self,
        id: &'a str,
        token: u64,
        now_ms: u64,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.renew_run(id, token, now_ms, lease)
    }
    fn release_run<'a>(
        &'a self,
        id: &'a str,
        token: u64,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        self.store.release_run(id, token, release)
    }
    fn claim_due<'a>(
        &'a self,
        holder: &'a str,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DueChat>, StoreError>> {
        self.store.claim_due(holder, now_ms, lease, limit)
    }
    fn commit<'a>(&'a self, id: &'a str, c: &'a Commit) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if self.fail_next_commit.swap(false, Ordering::SeqCst) {
                return Err(StoreError::Locked {
                    location: id.to_owned(),
                    message: "locked by another connection (a test's)".to_owned(),
                });
            }
            let written = self.store.commit(id, c).await;
            if written.is_ok() {
                self.report(c);
            }
            written
        })
    }
    fn commit_and_release<'a>(
        &'a self,
        id: &'a str,
        c: &'a Commit,
        release: &'a Release,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        self.commits_releasing.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let written = self.store.commit_and_release(id, c, release).await;
            if written.is_ok() {
                self.report(c);
            }
            written
        })
    }
    fn chat_status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<ChatStatus, StoreError>> {
        self.store.chat_status(id)
    }
    fn parked_chats<'a>(
        &'a self,
        after: Option<&'a str>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<ChatStatus>, StoreError>> {
        self.store.parked_chats(after, limit)
    }
    fn release_parked<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.store.release_parked(id)
    }
    fn request_cancel<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.store.request_cancel(id, now_ms)
    }
    fn cancel_requested<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.store.cancel_requested(id)
    }
}

/// A case of the suite: a turn whose commit of its round's claims fails (the database
/// locked for longer than the store waits) ran none of the calls it claimed; the turn's error
/// writes them back as ready, so the next turn, of another chat value or process, runs them
/// (it is not `Busy` behind claims of a run that is not going on).
pub(super) async fn a_turn_that_failed_to_commit_its_claims_leaves_its_calls_ready(
    store: Arc<dyn Store>,
) {
    let (counting, _) = Counting::new(Arc::clone(&store));
    let model = ScriptedProvider::new()
        .then_call("lookup", json!({"n": 1}))
        .then_text("Looked up.");
    let mut chat = Chat::create_shared(counting.clone(), "locked", Arc::new(model.clone()))
        .await
        .expect("created");
    chat.with_durable_options(quick_calls_only().with_retry_delay(Duration::ZERO));
    chat.with_tools(Lookup).expect("tool");
    counting.fail_next_commit.store(true, Ordering::SeqCst);
    let error = chat.ask("Look 1 up").await.expect_err("the commit failed");
    assert!(error.to_string().contains("locked"), "{error}");

    let stored = store.load_chat("locked").await.expect("stored");
    let states: Vec<&str> = stored.calls.iter().map(|c| c.state.as_str()).collect();
    assert!(!states.contains(&"running"), "{states:?}");

    let mut next = Chat::load_shared(Arc::clone(&store), "locked", Arc::new(model))
        .await
        .expect("loaded");
    next.with_tools(Lookup).expect("tool");
    let outcome = next.complete().await.expect("the next turn runs");
    assert_eq!(outcome.text().as_deref(), Some("Looked up."), "{outcome:?}");
    let results: Vec<String> = next
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, ["value 1"]);
}

/// Whether a stored call's state holds its result.
fn has_result(state: &str) -> bool {
    state == "finished" || state == "appended"
}

/// Looks a number up
#[tool]
async fn lookup(n: u32) -> String {
    format!("value {n}")
}

/// Options under which no call here counts as long: every result waits for the round's
/// closing commit, whatever the machine's load.
fn quick_calls_only() -> DurableOptions {
    DurableOptions::default().with_write_result_after(Duration::from_secs(3600))
}

/// Whether another holder can take the chat's run claim now (the turn gave it up).
async fn claim_is_free(store: &Arc<dyn Store>, id: &str) -> bool {
    let claim = store
        .claim_run(
            id,
            "another holder",
            store.now_ms(),
            Duration::from_secs(30),
        )
        .await
        .expect("claim");
    matches!(claim, RunClaim::Granted { .. })
}

/// A case of the suite.
pub(super) async fn a_round_of_quick_calls_is_two_commits_and_the_last_releases(
    store: Arc<dyn Store>,
) {
    let (counting, _) = Counting::new(Arc::clone(&store));
    let model = ScriptedProvider::new().then_calls([
        ("lookup", json!({"n": 1})),
        ("lookup", json!({"n": 2})),
        ("lookup", json!({"n": 3})),
    ]);
    let mut chat = Chat::create_shared(counting.clone(), "round", Arc::new(model))
        .await
        .expect("created");
    chat.with_durable_options(quick_calls_only());
    chat.with_tools(Lookup).expect("tool");
    chat.enqueue("Look three numbers up").await.expect("stored");
    let before = counting.counts();

    assert_eq!(chat.step().await.expect("step"), Step::Continue);

    let (claims, commits, releasing, releases) = counting.counts();
    assert_eq!(
        (
            claims - before.0,
            commits - before.1,
            releasing - before.2,
            releases - before.3
        ),
        (1, 1, 1, 0),
        "one run claim, the round opened with its claims, closed with its results and the release"
    );
    // Everything is stored: a fresh chat reads the three results, and the claim is free.
    let fresh = Chat::load_shared(
        Arc::clone(&store),
        "round",
        Arc::new(ScriptedProvider::new()),
    )
    .await
    .expect("loaded");
    let results: Vec<String> = fresh
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert_eq!(results, ["value 1", "value 2", "value 3"]);
    assert!(
        claim_is_free(&store, "round").await,
        "the turn kept its run claim"
    );
}

/// A case of the suite.
pub(super) async fn each_round_of_a_turn_is_two_commits_and_its_end_one(store: Arc<dyn Store>) {
    let (counting, _) = Counting::new(Arc::clone(&store));
    let model = ScriptedProvider::new()
        .then_calls([("lookup", json!({"n": 1})), ("lookup", json!({"n": 2}))])
        .then_calls([("lookup", json!({"n": 3}))])
        .then_text("done");
    let mut chat = Chat::create_shared(counting.clone(), "rounds", Arc::new(model))
        .await
        .expect("created");
    chat.with_durable_options(quick_calls_only());
    chat.with_tools(Lookup).expect("tool");
    let before = counting.counts();

    let outcome = chat.ask("Look numbers up").await.expect("turn");
    assert_eq!(outcome.text().as_deref(), Some("done"));

    let (claims, commits, releasing, releases) = counting.counts();
    assert_eq!(
        (
            claims - before.0,
            commits - before.1,
            releasing - before.2,
            releases - before.3
        ),
        (1, 4, 1, 0),
        "one run claim; two rounds of two commits; the answer written with the release"
    );
    let fresh = Chat::load_shared(
        Arc::clone(&store),
        "rounds",
        Arc::new(ScriptedProvider::new()),
    )
    .await
    .expect("loaded");
    assert_eq!(fresh.messages().len(), chat.messages().len());
    assert_eq!(
        fresh.messages().last().map(|m| m.text()).as_deref(),
        Some("done")
    );
    assert!(
        claim_is_free(&store, "rounds").await,
        "the turn kept its run claim"
    );
}

/// Released by the test.
struct Slow(Arc<Notify>);

#[tool]
impl Slow {
    /// Waits until it is let go
    async fn execute(&self) -> String {
        self.0.notified().await;
        "slow done".into()
    }
}

/// A case of the suite.
pub(super) async fn a_long_calls_result_is_written_while_the_round_still_runs(
    store: Arc<dyn Store>,
) {
    let (counting, mut finished) = Counting::new(Arc::clone(&store));
    let model =
        ScriptedProvider::new().then_calls([("lookup", json!({"n": 1})), ("slow", json!({}))]);
    let mut chat = Chat::create_shared(counting, "long", Arc::new(model))
        .await
        .expect("created");
    // Every call counts as long: each result is written the moment it ends.
    chat.with_durable_options(DurableOptions::default().with_write_result_after(Duration::ZERO));
    let release = Arc::new(Notify::new());
    chat.with_tools((Lookup, Slow(Arc::clone(&release))))
        .expect("tools");
    chat.enqueue("Work").await.expect("stored");

    let turn = tokio::spawn(async move {
        let step = chat.step().await;
        (chat, step)
    });
    // The quick call's result reaches the store while the slow call still runs (it waits for
    // the release, which comes only after). Without that write the turn would wait on the slow
    // call for good: the bound makes it a failure instead.
    let written = async { while finished.recv().await.expect("the turn commits") == 0 {} };
    tokio::time::timeout(Duration::from_secs(60), written)
        .await
        .expect("the finished call's result is written while the slow call runs");
    let record = store.load_chat("long").await.expect("read");
    assert!(
        record.calls.iter().any(|c| has_result(&c.state)),
        "the finished call is stored"
    );
    assert!(
        record.calls.iter().any(|c| c.state == "running"),
        "the slow call still runs under its claim"
    );
    release.notify_one();
    let (_chat, step) = turn.await.expect("the turn's task");
    assert_eq!(step.expect("step"), Step::Continue);
}

/// A case of the suite.
pub(super) async fn a_message_changed_in_place_is_replaced_with_the_next_commit(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_text("first")
        .then_text("second");
    let mut chat = Chat::create_shared(Arc::clone(&store), "rewritten", Arc::new(model))
        .await
        .expect("created");
    chat.with_instructions("Be brief.");
    let first = chat.ask("One").await.expect("first turn");
    assert_eq!(first.text().as_deref(), Some("first"));
    // The instructions are the first message: changing them rewrites the stored transcript
    // from there, in the next turn's commit.
    chat.with_instructions("Be thorough.");
    let second = chat.ask("Two").await.expect("second turn");
    assert_eq!(second.text().as_deref(), Some("second"));

    let fresh = Chat::load_shared(
        Arc::clone(&store),
        "rewritten",
        Arc::new(ScriptedProvider::new()),
    )
    .await
    .expect("loaded");
    let texts: Vec<String> = fresh.messages().iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        ["Be thorough.", "One", "first", "Two", "second"],
        "the stored transcript is the chat's, its first message replaced"
    );
}

fn call_record(position: u32, state: &str, token: u64) -> CallRecord {
    CallRecord::new(
        1,
        position,
        format!("call_{position}"),
        state.into(),
        1,
        token,
        None,
        format!(r#"{{"id":"call_{position}","state":"{state}"}}"#),
    )
}

/// A case of the suite: a renewal that reaches the store after its claim was given up (a
/// heartbeat still in flight when the turn ended) changes nothing, so the chat is free at once.
pub(super) async fn a_renewal_after_the_release_leaves_the_chat_free(store: Arc<dyn Store>) {
    store
        .create_chat("renewed", &ChatRecord::new("{}".into(), vec![], vec![], 0))
        .await
        .expect("created");
    let lease = Duration::from_secs(60);
    let RunClaim::Granted { token, .. } = store
        .claim_run("renewed", "first", store.now_ms(), lease)
        .await
        .expect("claim")
    else {
        panic!("the claim is free")
    };
    store
        .release_run("renewed", token, &Release::Unchanged)
        .await
        .expect("released");
    // The late renewal: refused or not, it must not hold the chat.
    let _ = store
        .renew_run("renewed", token, store.now_ms(), lease)
        .await;
    let claim = store
        .claim_run("renewed", "second", store.now_ms(), lease)
        .await
        .expect("claim");
    assert!(
        matches!(claim, RunClaim::Granted { .. }),
        "the chat is held by nobody: {claim:?}"
    );
}

/// A case of the suite: a commit larger than any batch a store may split its statements into
/// is still all or nothing.
pub(super) async fn a_refused_commit_of_many_calls_writes_none_of_them(store: Arc<dyn Store>) {
    const CALLS: u32 = 80;
    store
        .create_chat("many", &ChatRecord::new("{}".into(), vec![], vec![], 0))
        .await
        .expect("created");
    let RunClaim::Granted { token, .. } = store
        .claim_run("many", "holder", store.now_ms(), Duration::from_secs(60))
        .await
        .expect("claim")
    else {
        panic!("the claim is free")
    };
    let inserted = (0..CALLS)
        .map(|p| CallWrite::new(call_record(p, "ready", 1), None))
        .collect();
    store
        .commit(
            "many",
            &Commit::new(token, "{}".into(), 0, vec![], inserted),
        )
        .await
        .expect("the calls are stored");

    // Every call moves on, but the last one's token is not the one stored.
    let updated = (0..CALLS)
        .map(|p| {
            let expected = if p == CALLS - 1 { 7 } else { 1 };
            CallWrite::new(call_record(p, "finished", 2), Some(expected))
        })
        .collect();
    let refused = store
        .commit("many", &Commit::new(token, "{}".into(), 0, vec![], updated))
        .await
        .expect_err("a stale call token refuses the commit");
    assert!(refused.is_stale(), "{refused}");

    let record = store.load_chat("many").await.expect("read");
    assert_eq!(record.calls.len(), CALLS as usize);
    assert!(
        record
            .calls
            .iter()
            .all(|c| c.state == "ready" && c.token == 1),
        "a refused commit changed calls: {:?}",
        record
            .calls
            .iter()
            .filter(|c| c.state != "ready")
            .map(|c| c.position)
            .collect::<Vec<_>>()
    );
}
