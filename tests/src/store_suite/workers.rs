//! The cases about workers: what makes a chat due and what does not, many chats at once, a
//! graceful shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use llm_tools_core::store::{ChatRecord, Commit, DurableOptions, Release, RunClaim, Store, Worker};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Chat, ProviderError, Task, ToolOutcome, ToolOutput, tool};
use serde_json::json;
use tokio::sync::Notify;

/// The chat's stored wake time.
async fn wake_at(store: &Arc<dyn Store>, chat_id: &str) -> Option<u64> {
    store.load_chat(chat_id).await.expect("stored").wake_at
}

struct Render {
    resumed: Arc<AtomicUsize>,
}

#[tool]
impl Render {
    /// Renders a clip in the background
    async fn execute(&self, clip: String) -> Task {
        Task::working(format!("rendering {clip}")).with_poll_interval(Duration::from_millis(300))
    }

    async fn resume(&self, _task: Task, clip: String) -> ToolOutcome {
        self.resumed.fetch_add(1, Ordering::SeqCst);
        ToolOutcome::Output(ToolOutput::text(format!("rendered {clip}")))
    }
}

/// Runs the worker until it ran a turn, for at most five seconds.
async fn run_until_a_turn(worker: &Worker) -> llm_tools_core::store::WorkerReport {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let report = worker.run_once().await.expect("the store answers");
        if report.turns > 0 {
            return report;
        }
        assert!(Instant::now() < deadline, "no turn became due");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A case of the suite.
pub(super) async fn a_working_task_is_resumed_by_a_worker_once_its_poll_interval_passed(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("render", json!({"clip": "intro"}))
        .then_text("Rendered.");
    let mut chat = Chat::create(store.clone(), "task", model.clone())
        .await
        .expect("created");
    chat.enqueue("Render the intro").await.expect("enqueued");
    let resumed = Arc::new(AtomicUsize::new(0));
    let worker = Worker::new(store.clone(), model.clone()).with_setup({
        let resumed = Arc::clone(&resumed);
        move |_, chat| {
            chat.with_tools(Render {
                resumed: Arc::clone(&resumed),
            })?;
            Ok(())
        }
    });

    let before = store.now_ms();
    let first = worker.run_once().await.expect("ran");
    assert_eq!((first.turns, first.paused), (1, 1));
    let wake = wake_at(&store, "task")
        .await
        .expect("a working task makes the chat due again");
    assert!(
        wake >= before + 300,
        "due after the poll interval, not before"
    );
    assert_eq!(resumed.load(Ordering::SeqCst), 0);

    let second = run_until_a_turn(&worker).await;
    assert!(store.now_ms() >= wake);
    assert_eq!(second.done, 1);
    assert_eq!(resumed.load(Ordering::SeqCst), 1);
    assert_eq!(
        wake_at(&store, "task").await,
        None,
        "an answered chat is not due"
    );
    let chat = Chat::load(store.clone(), "task", model)
        .await
        .expect("loaded");
    assert_eq!(
        chat.messages().last().map(|m| m.text()).as_deref(),
        Some("Rendered.")
    );
}

/// Drops a database table
#[tool(needs_approval)]
async fn drop_table(table: String) -> String {
    format!("dropped {table}")
}

/// A case of the suite.
pub(super) async fn a_chat_waiting_on_a_person_is_not_due_until_they_act(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_call("drop_table", json!({"table": "t"}))
        .then_text("Dropped.");
    let mut chat = Chat::create(store.clone(), "approve", model.clone())
        .await
        .expect("created");
    chat.enqueue("Drop t").await.expect("enqueued");
    let worker = Worker::new(store.clone(), model.clone()).with_setup(|_, chat| {
        chat.with_tools(DropTable)?;
        Ok(())
    });
    assert_eq!(worker.run_once().await.expect("ran").paused, 1);
    assert_eq!(wake_at(&store, "approve").await, None);
    assert_eq!(worker.run_once().await.expect("ran").turns, 0);

    // The web side approves; a worker finishes.
    let mut chat = Chat::load(store.clone(), "approve", model.clone())
        .await
        .expect("loaded");
    chat.with_tools(DropTable).expect("tools");
    let id = chat.pending_approvals()[0].id.clone();
    chat.approve(&id).expect("approved");
    chat.save().await.expect("saved");
    assert_eq!(worker.run_once().await.expect("ran").done, 1);
    let chat = Chat::load(store.clone(), "approve", model)
        .await
        .expect("loaded");
    assert_eq!(chat.messages()[2].text(), "dropped t");
}

/// A case of the suite.
pub(super) async fn a_failed_turn_is_retried_after_the_retry_delay(store: Arc<dyn Store>) {
    let model = ScriptedProvider::new()
        .then_error(ProviderError::http("scripted", 503, "overloaded"))
        .then_text("Hello.");
    let mut chat = Chat::create(store.clone(), "retry", model.clone())
        .await
        .expect("created");
    chat.enqueue("Hi").await.expect("enqueued");
    let worker = Worker::new(store.clone(), model.clone()).with_durable_options(
        DurableOptions::default().with_retry_delay(Duration::from_millis(200)),
    );
    let before = store.now_ms();
    assert_eq!(worker.run_once().await.expect("ran").failed, 1);
    let wake = wake_at(&store, "retry").await.expect("due again");
    assert!(wake >= before + 200, "not due before the retry delay");
    let report = run_until_a_turn(&worker).await;
    assert_eq!(report.done, 1);
    let chat = Chat::load(store.clone(), "retry", model)
        .await
        .expect("loaded");
    assert_eq!(
        chat.messages().len(),
        2,
        "the user's message is kept across the failure"
    );
}

/// Answers each chat with its own id
struct Echo;

impl llm_tools_core::Provider for Echo {
    fn protocol(&self) -> &str {
        "echo"
    }
    fn model(&self) -> &str {
        "echo"
    }
    fn complete<'a>(
        &'a self,
        request: llm_tools_core::Request<'a>,
    ) -> llm_tools_core::BoxFuture<'a, Result<llm_tools_core::Response, ProviderError>> {
        let text = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        Box::pin(async move {
            Ok(llm_tools_core::Response::new(
                llm_tools_core::Message::assistant(format!("echo: {text}")),
            ))
        })
    }
}

/// A case of the suite.
pub(super) async fn a_worker_runs_many_chats_at_once_until_shutdown(store: Arc<dyn Store>) {
    for n in 0..20 {
        let mut chat = Chat::create(store.clone(), format!("c{n:02}"), Echo)
            .await
            .expect("created");
        chat.enqueue(format!("m{n}")).await.expect("enqueued");
    }
    let worker = Worker::new(store.clone(), Echo)
        .with_concurrency(4)
        .with_idle_poll(Duration::from_millis(10));
    let all_answered = {
        let store = store.clone();
        async move {
            loop {
                let mut due = 0;
                for n in 0..20 {
                    due += usize::from(wake_at(&store, &format!("c{n:02}")).await.is_some());
                }
                if due == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    let report = tokio::time::timeout(Duration::from_secs(30), worker.run_until(all_answered))
        .await
        .expect("bounded");
    assert_eq!((report.turns, report.done), (20, 20));
    for n in [0, 7, 19] {
        let chat = Chat::load(store.clone(), format!("c{n:02}"), Echo)
            .await
            .expect("loaded");
        assert_eq!(chat.messages()[1].text(), format!("echo: m{n}"));
    }
}

struct Gate {
    started: Arc<Notify>,
    open: Arc<Notify>,
}

#[tool]
impl Gate {
    /// Waits at the gate
    async fn execute(&self) -> String {
        self.started.notify_one();
        self.open.notified().await;
        "through".into()
    }
}

/// A case of the suite.
pub(super) async fn a_graceful_shutdown_finishes_running_turns_and_picks_nothing_more(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("gate", json!({}))
        .then_text("Done.");
    let mut first = Chat::create(store.clone(), "a", model.clone())
        .await
        .expect("created");
    first.enqueue("go").await.expect("enqueued");
    let started = Arc::new(Notify::new());
    let open = Arc::new(Notify::new());
    let worker = Worker::new(store.clone(), model.clone())
        .with_concurrency(1)
        .with_setup({
            let (started, open) = (Arc::clone(&started), Arc::clone(&open));
            move |_, chat| {
                chat.with_tools(Gate {
                    started: Arc::clone(&started),
                    open: Arc::clone(&open),
                })?;
                Ok(())
            }
        });
    let shutdown = Arc::new(Notify::new());
    let run = tokio::spawn({
        let shutdown = Arc::clone(&shutdown);
        async move {
            worker
                .run_until(async move { shutdown.notified().await })
                .await
        }
    });
    started.notified().await;
    // A second chat arrives while the first runs; then the worker is told to stop.
    let mut second = Chat::create(store.clone(), "b", model.clone())
        .await
        .expect("created");
    second.enqueue("later").await.expect("enqueued");
    shutdown.notify_one();
    open.notify_one();
    let report = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("bounded")
        .expect("joined");
    assert_eq!((report.turns, report.done), (1, 1), "{report:?}");
    assert!(
        wake_at(&store, "b").await.is_some(),
        "the second chat is still due, for another worker"
    );
}

/// Runs for as long as the test lasts: a call another live process keeps claimed for an hour.
struct Hold {
    started: Arc<Notify>,
}

#[tool(max_run_time = "3600s")]
impl Hold {
    /// Holds on for a long time
    async fn execute(&self) -> String {
        self.started.notify_one();
        std::future::pending::<String>().await
    }
}

/// A case of the suite: a worker's turn that meets a call another live process has claimed
/// (a failed turn's retry came due while that call runs) ends busy, and the chat is not due
/// again before the call's claim ends; it is due then. Time is the store's `now` given to the
/// picks, never waited for.
pub(super) async fn a_chat_whose_call_is_claimed_elsewhere_is_not_due_before_the_claim_ends(
    store: Arc<dyn Store>,
) {
    let model = ScriptedProvider::new()
        .then_call("hold", json!({}))
        .then_text("Held.");
    let started = Arc::new(Notify::new());
    let mut elsewhere = Chat::create(store.clone(), "held", model.clone())
        .await
        .expect("created");
    elsewhere
        .with_tools(Hold {
            started: Arc::clone(&started),
        })
        .expect("tool");
    let running = tokio::spawn(async move { elsewhere.ask("Hold on").await });
    started.notified().await;
    let stored = store.load_chat("held").await.expect("stored");
    let call = &stored.calls[0];
    assert_eq!(call.state, "running");
    let until = call.claimed_until.expect("the running call is claimed");
    assert!(until > store.now_ms() + 3_000_000, "claimed for an hour");

    // The other process's run claim passes to a turn that fails (its lease taken as ended:
    // the pick's `now` is past it) and is to be tried again now; the call stays claimed.
    let lease = Duration::from_secs(30);
    let RunClaim::Granted { token, .. } = store
        .claim_run("held", "failing-turn", store.now_ms() + 60_000, lease)
        .await
        .expect("claims")
    else {
        panic!("the run claim was not taken over");
    };
    let retry_at = store.now_ms();
    store
        .release_run(
            "held",
            token,
            &Release::Retry {
                error: "the provider was down".into(),
                retry_at,
            },
        )
        .await
        .expect("released");

    let worker = Worker::new(store.clone(), model.clone()).with_setup(|_, chat| {
        chat.with_tools(Hold {
            started: Arc::new(Notify::new()),
        })?;
        Ok(())
    });
    let report = worker.run_once().await.expect("ran");
    assert_eq!((report.turns, report.busy), (1, 1), "{report:?}");

    // Not due before the call's claim ends, whatever else stays as it was.
    let status = store.chat_status("held").await.expect("status");
    assert_eq!(status.wake_at, Some(until), "{status:?}");
    assert_eq!(status.failures, 1, "{status:?}");
    assert_eq!(
        status.last_error.as_deref(),
        Some("the provider was down"),
        "{status:?}"
    );
    assert!(status.parked.is_none(), "{status:?}");
    let again = worker.run_once().await.expect("ran");
    assert_eq!(
        again.turns, 0,
        "picked again while the call is claimed: {again:?}"
    );
    let before_the_end = store
        .claim_due("probe", until - 1, lease, 10)
        .await
        .expect("picks");
    assert!(before_the_end.is_empty(), "{before_the_end:?}");
    let at_the_end = store
        .claim_due("probe", until, lease, 10)
        .await
        .expect("picks");
    assert_eq!(
        at_the_end
            .iter()
            .map(|due| due.chat_id.as_str())
            .collect::<Vec<_>>(),
        ["held"],
        "due once the claim ends"
    );
    running.abort();
    let _ = running.await;
}

/// Takes the run claim of `chat_id` for a holder of the test.
async fn claim(store: &Arc<dyn Store>, chat_id: &str) -> u64 {
    match store
        .claim_run(chat_id, "test", store.now_ms(), Duration::from_secs(60))
        .await
        .expect("claims")
    {
        RunClaim::Granted { token, .. } => token,
        other => panic!("not granted: {other:?}"),
    }
}

/// A case of the suite: [`Release::CallClaimedElsewhere`] given alone or with a turn's last
/// commit: the chat is due when the call's claim ends, sooner only for work the turn left for
/// sooner or a cancel request; the chat's health stays; a stale token changes nothing.
pub(super) async fn a_release_past_a_call_claimed_elsewhere_moves_the_wake_time_to_the_claims_end(
    store: Arc<dyn Store>,
) {
    store
        .create_chat("c", &ChatRecord::new("{}".into(), vec![], vec![], 0))
        .await
        .expect("created");
    let now = store.now_ms();
    let until = now + 3_600_000;
    let past_claim = Release::CallClaimedElsewhere { until };
    let wake = |store: Arc<dyn Store>| async move {
        store.chat_status("c").await.expect("status").wake_at
    };

    // Alone, on a chat with no wake time: due when the claim ends.
    let token = claim(&store, "c").await;
    store
        .release_run("c", token, &past_claim)
        .await
        .expect("released");
    assert_eq!(wake(store.clone()).await, Some(until));
    // The run claim is given up: another holder gets it at once.
    let RunClaim::Granted { token, .. } = store
        .claim_run("c", "other", store.now_ms(), Duration::from_secs(60))
        .await
        .expect("claims")
    else {
        panic!("the run claim was not given up");
    };
    store
        .release_run("c", token, &Release::Unchanged)
        .await
        .expect("released");
    assert_eq!(wake(store.clone()).await, Some(until));

    // With a commit whose wake time has passed (what made the chat due): the claim's end.
    let token = claim(&store, "c").await;
    let commit = Commit::new(token, "{}".into(), 0, vec![], vec![]).with_wake_at(Some(now - 1));
    store
        .commit_and_release("c", &commit, &past_claim)
        .await
        .expect("written");
    assert_eq!(wake(store.clone()).await, Some(until));

    // With a commit that leaves work for sooner (a task's next poll): that stays.
    let token = claim(&store, "c").await;
    let soon = store.now_ms() + 60_000;
    let commit = Commit::new(token, "{}".into(), 0, vec![], vec![]).with_wake_at(Some(soon));
    store
        .commit_and_release("c", &commit, &past_claim)
        .await
        .expect("written");
    assert_eq!(wake(store.clone()).await, Some(soon));

    // A stale token: nothing changes.
    store
        .release_run("c", token, &Release::CallClaimedElsewhere { until: 1 })
        .await
        .expect("a stale release is no error");
    assert_eq!(wake(store.clone()).await, Some(soon));

    // A failed turn's count and error stay, as with `Unchanged`.
    let token = claim(&store, "c").await;
    store
        .release_run(
            "c",
            token,
            &Release::Retry {
                error: "down".into(),
                retry_at: now,
            },
        )
        .await
        .expect("released");
    let token = claim(&store, "c").await;
    store
        .release_run("c", token, &past_claim)
        .await
        .expect("released");
    let status = store.chat_status("c").await.expect("status");
    assert_eq!(
        (
            status.failures,
            status.last_error.as_deref(),
            status.wake_at
        ),
        (1, Some("down"), Some(until))
    );

    // A cancel asked for while the turn ran keeps the chat due at once, alone or with a
    // commit, for a worker to carry it out.
    for with_commit in [false, true] {
        let token = claim(&store, "c").await;
        let asked = store.now_ms();
        store.request_cancel("c", asked).await.expect("asked");
        if with_commit {
            let commit =
                Commit::new(token, "{}".into(), 0, vec![], vec![]).with_wake_at(Some(until));
            store
                .commit_and_release("c", &commit, &past_claim)
                .await
                .expect("written");
        } else {
            store
                .release_run("c", token, &past_claim)
                .await
                .expect("released");
        }
        let woken = wake(store.clone()).await.expect("due");
        assert!(woken <= store.now_ms(), "due at once, not at {woken}");
        let due = store
            .claim_due("probe", store.now_ms(), Duration::from_secs(1), 10)
            .await
            .expect("picks");
        assert_eq!(due.len(), 1, "{due:?}");
        store
            .release_run("c", due[0].token, &Release::Unchanged)
            .await
            .expect("released");
        // The request is carried out by the next commit that says so.
        let token = claim(&store, "c").await;
        let handled = Commit::new(token, "{}".into(), 0, vec![], vec![])
            .with_cancel_handled(Some(asked))
            .with_wake_at(None);
        store
            .commit_and_release("c", &handled, &Release::Unchanged)
            .await
            .expect("written");
    }
}
