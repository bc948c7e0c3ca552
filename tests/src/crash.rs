//! The crash test's schedule and checks, shared by the SQLite and PostgreSQL runs: worker
//! processes (`durable_worker`) drive the chats while the schedule kills them with SIGKILL at
//! random moments (and, when asked, stops one with SIGSTOP past its leases and lets it go on
//! with SIGCONT), starting a new worker for each killed one; then every chat must be finished,
//! every call must have exactly one result, which is its highest attempt's, and a call may have
//! run more than once only where its worker was killed or stopped.
#![allow(clippy::expect_used, clippy::panic)] // a test harness

use std::collections::{BTreeMap, HashSet};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_tools_core::store::Store;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Chat, Message, Role};

/// Calls the scripted model asks for per chat (three, then two).
pub const CALLS_PER_CHAT: usize = 5;

/// What the schedule does.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Chats to drive.
    pub chats: usize,
    /// Worker processes at a time.
    pub workers: usize,
    /// SIGKILLs, at most.
    pub kills: usize,
    /// Whether one worker is stopped (SIGSTOP) for at least `stop_for`, and until another
    /// worker has run one of its calls again, then continued. That worker's calls work
    /// slowly, and it is stopped as soon as it records an execution, so it stops inside a tool
    /// run: its result comes after its claim was taken over.
    pub stop_for: Option<Duration>,
    /// The whole run's bound.
    pub deadline: Duration,
}

/// What a run counted.
#[derive(Debug)]
pub struct Counts {
    /// Results in the transcripts.
    pub results: usize,
    /// Tool executions recorded.
    pub executions: usize,
    /// Executions that ran again later.
    pub reruns: usize,
    /// Workers killed.
    pub killed: usize,
    /// Executions of the stopped worker whose call another worker ran again.
    pub taken_from_stopped: usize,
    /// How long it took.
    pub elapsed: Duration,
}

/// Creates `chats` chats with a user message each, due for a worker.
pub async fn enqueue_chats(store: &Arc<dyn Store>, chats: usize) {
    for n in 0..chats {
        let mut chat = Chat::create(
            store.clone(),
            format!("chat-{n:04}"),
            ScriptedProvider::new(),
        )
        .await
        .expect("created");
        chat.enqueue("go").await.expect("enqueued");
    }
}

/// Whether a call that `pid` started has run again in another process.
fn taken_over(executions: &[(String, String, u32, u32)], pid: u32) -> bool {
    executions.iter().any(|(chat, call, attempt, by)| {
        *by == pid
            && executions
                .iter()
                .any(|(c, k, a, b)| c == chat && k == call && a > attempt && *b != pid)
    })
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{name} failed");
}

/// Runs the schedule with workers from `start_worker` (`true`: the slow one to stop), then
/// checks the chats in `store` and the executions `executions` reads (chat, call, attempt, pid,
/// in the order they ran).
pub async fn run(
    store: Arc<dyn Store>,
    schedule: Schedule,
    start_worker: impl Fn(bool) -> Child,
    executions: impl AsyncFn() -> Vec<(String, String, u32, u32)>,
) -> Counts {
    let started = Instant::now();
    let mut workers: Vec<Child> = (0..schedule.workers)
        .map(|n| start_worker(n == 0 && schedule.stop_for.is_some()))
        .collect();
    let mut killed = HashSet::new();
    let mut stopped: Option<(u32, Instant)> = None;
    let mut continued = schedule.stop_for.is_none();
    while started.elapsed() < schedule.deadline {
        let pause = if stopped.is_none() && schedule.stop_for.is_some() {
            5 // watching for the slow worker's first execution
        } else {
            fastrand::u64(30..250)
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
        // The stopped worker goes on once its leases are long over and another worker has run
        // one of its calls again (the others first work through the chats due before it).
        if let (Some((pid, at)), Some(stop_for)) = (stopped, schedule.stop_for)
            && !continued
            && at.elapsed() >= stop_for
            && (taken_over(&executions().await, pid)
                || started.elapsed() + Duration::from_secs(30) > schedule.deadline)
        {
            let child = workers
                .iter()
                .find(|w| w.id() == pid)
                .expect("stopped worker");
            signal(child, "CONT");
            continued = true;
        }
        if stopped.is_none() && schedule.stop_for.is_some() {
            let slow = workers[0].id();
            if executions().await.iter().any(|&(.., pid)| pid == slow) {
                signal(&workers[0], "STOP");
                stopped = Some((slow, Instant::now()));
            }
            continue;
        }
        if killed.len() >= schedule.kills {
            if continued {
                break;
            }
            continue;
        }
        // Never kill the stopped worker: it must live to send its late writes.
        let victim = fastrand::usize(usize::from(stopped.is_some())..workers.len());
        if workers[victim].try_wait().expect("status").is_some() {
            break; // the work is done
        }
        killed.insert(workers[victim].id());
        workers[victim].kill().expect("SIGKILL");
        workers[victim].wait().expect("reaped");
        workers[victim] = start_worker(false);
    }
    if let Some(child) = stopped.and_then(|(pid, _)| workers.iter().find(|w| w.id() == pid))
        && !continued
    {
        signal(child, "CONT");
    }
    for worker in &mut workers {
        loop {
            if let Some(status) = worker.try_wait().expect("status") {
                assert!(status.success(), "a worker failed: {status}");
                break;
            }
            assert!(
                started.elapsed() < schedule.deadline,
                "the workers did not finish in time"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let mut runs: BTreeMap<(String, String), Vec<(u32, u32)>> = BTreeMap::new();
    let mut recorded = 0;
    for (chat, call, attempt, pid) in executions().await {
        runs.entry((chat, call)).or_default().push((attempt, pid));
        recorded += 1;
    }
    // By attempt: a stalled worker's tool may start (and record) after a later attempt did.
    for attempts in runs.values_mut() {
        attempts.sort_unstable();
    }
    assert_eq!(
        runs.len(),
        schedule.chats * CALLS_PER_CHAT,
        "every call ran"
    );

    let mut results = 0;
    for n in 0..schedule.chats {
        let id = format!("chat-{n:04}");
        let chat = Chat::load(store.clone(), id.as_str(), ScriptedProvider::new())
            .await
            .expect("loaded");
        assert!(!chat.is_paused(), "{id} is paused");
        assert_eq!(
            chat.messages().last().map(Message::text).as_deref(),
            Some("finished"),
            "{id}"
        );
        let calls: Vec<&str> = chat
            .messages()
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        assert_eq!(calls.len(), CALLS_PER_CHAT, "{id}");
        for call in calls {
            let found: Vec<&Message> = chat
                .messages()
                .iter()
                .filter(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{id}: call {call} has {} results",
                found.len()
            );
            let text = found[0].text();
            assert!(!found[0].is_error, "{id}: call {call}: {text}");
            let last = runs[&(id.clone(), call.to_owned())]
                .last()
                .map(|&(attempt, _)| attempt)
                .expect("ran");
            assert!(
                text.ends_with(&format!("(attempt {last})")),
                "{id}: call {call}: the result is not its last attempt's ({last}): {text}"
            );
            results += 1;
        }
    }

    let stopped_pid = stopped.map(|(pid, _)| pid);
    let mut reruns = 0;
    let mut taken_from_stopped = 0;
    for ((chat, call), attempts) in &runs {
        let numbers: Vec<u32> = attempts.iter().map(|&(a, _)| a).collect();
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{chat}/{call}: an attempt ran twice: {numbers:?}"
        );
        for &(attempt, pid) in &attempts[..attempts.len() - 1] {
            assert!(
                killed.contains(&pid) || Some(pid) == stopped_pid,
                "{chat}/{call}: attempt {attempt} ran in {pid}, which was neither killed nor stopped, and ran again"
            );
            reruns += 1;
            taken_from_stopped += usize::from(Some(pid) == stopped_pid);
        }
    }
    assert!(!killed.is_empty(), "no worker was killed");
    if schedule.stop_for.is_some() {
        assert!(
            taken_from_stopped > 0,
            "the stopped worker's call was not run again elsewhere"
        );
    }
    Counts {
        results,
        executions: recorded,
        reruns,
        killed: killed.len(),
        taken_from_stopped,
        elapsed: started.elapsed(),
    }
}
