//! One call: checking what the model sent, running the tool under its limits (timeout, panics,
//! tracing), and the texts the model reads when a call cannot give a result of its own.

use std::any::Any;
use std::error::Error as StdError;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use tracing::Instrument as _;

use crate::args::{QUOTED_CHARS, shortened};
use crate::context::ProgressFn;
use crate::files::FileStore;
use crate::{
    context::ToolContext,
    message::ToolCall,
    output::{ToolOutcome, ToolOutput},
    question::{Answer, Question},
    task::Task,
    tool::{RawArgs, Tool},
};

/// What one run of a call is: its first run, or resuming its task.
pub(crate) enum JobKind {
    Call,
    /// Boxed, as the rare variants of [`Ran`] are: a task is large, and every job and every
    /// call's future would carry its room.
    Resume(Box<Task>),
}

/// A call that will run in this settle, before it starts.
pub(crate) struct Planned {
    pub(crate) index: usize,
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) limit: Duration,
    /// The spill limit of the call's result, when the chat keeps files.
    pub(crate) spill: Option<usize>,
}

/// One run of one call, started: what it runs and under which claim.
pub(crate) struct Job {
    pub(crate) planned: Planned,
    pub(crate) call: ToolCall,
    pub(crate) kind: JobKind,
    pub(crate) answers: Vec<Answer>,
    pub(crate) attempt: u32,
    pub(crate) token: u64,
    pub(crate) files: Option<Arc<dyn FileStore>>,
    /// The chat's memory of what the model read of its files, with a file store.
    pub(crate) file_reads: Option<super::file_reads::FileReads>,
    /// Where the call's progress reports go, when anything listens.
    pub(crate) progress: Option<ProgressFn>,
    /// When the run must have ended: its claim's start plus its limit. The claim's lease ends
    /// then too, whatever ran between the claim and the run's first poll (the claim's commit,
    /// the hooks), so a run never outlives its lease (another turn may take the call then).
    pub(crate) deadline: tokio::time::Instant,
}

/// The deadline of a run claimed at `claimed` with `limit`: a limit too long to add is no
/// deadline a run could reach (a century).
pub(crate) fn deadline(claimed: tokio::time::Instant, limit: Duration) -> tokio::time::Instant {
    claimed
        .checked_add(limit)
        .or_else(|| claimed.checked_add(Duration::from_secs(100 * 365 * 24 * 60 * 60)))
        .unwrap_or(claimed)
}

/// What one run produced.
pub(crate) enum Ran {
    Output(ToolOutput),
    Recoverable(String),
    Task(Box<Task>),
    /// Paused on a question; `resumed` is the task being resumed when it was asked.
    Question {
        question: Box<Question>,
        resumed: Option<Box<Task>>,
    },
    Fatal(Box<dyn StdError + Send + Sync + 'static>),
    TimedOut(Duration),
}

/// Runs one call: builds its context, calls (or resumes) the tool, catches a panic, cancels the
/// call when it runs past `limit`, and turns what came back into [`Ran`]. Returns the call's
/// position and claim token with it.
pub(crate) async fn run(job: Job) -> (usize, u64, Ran) {
    let Job {
        planned:
            Planned {
                index,
                tool,
                limit,
                spill,
            },
        mut call,
        kind,
        answers,
        attempt,
        token,
        files,
        file_reads,
        progress,
        deadline,
    } = job;
    let spec = tool.spec();
    // The context keeps the call's id (the job's own copy); `call.id` is empty from here on.
    let ctx = ToolContext::builder(std::mem::take(&mut call.id))
        .tool_of(spec)
        .answers(answers)
        .attempt(attempt)
        .files(files.clone())
        .file_reads(file_reads)
        .progress(progress)
        .build();
    let call = &call;
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = spec.joined_name(),
        gen_ai.tool.call.id = ctx.call_id(),
        gen_ai.tool.type = "function",
        error.type = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record(
            "otel.name",
            format!("execute_tool {}", spec.joined_name()).as_str(),
        );
    }
    let args = RawArgs::new(&call.arguments);
    let (resumed, started) = match kind {
        JobKind::Call => (
            None,
            std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(args, ctx.clone()))),
        ),
        JobKind::Resume(task) => {
            let kept = task.clone();
            (
                Some(kept),
                std::panic::catch_unwind(AssertUnwindSafe(|| {
                    tool.resume(*task, args, ctx.clone())
                })),
            )
        }
    };
    let ran = async {
        tracing::debug!(
            target: "llm_tools::tool",
            arguments = call.arguments.as_str(),
            resume = resumed.is_some(),
            "calling the tool"
        );
        let future = match started {
            Ok(future) => future,
            Err(panic) => return Ran::Fatal(panicked(panic)),
        };
        match tokio::time::timeout_at(deadline, AssertUnwindSafe(future).catch_unwind()).await {
            Err(_) => Ran::TimedOut(limit),
            Ok(Err(panic)) => Ran::Fatal(panicked(panic)),
            Ok(Ok(outcome)) => match ctx.take_pending_question() {
                Some(question) => Ran::Question {
                    question: Box::new(question),
                    resumed,
                },
                None => from_outcome(outcome, resumed),
            },
        }
    }
    .instrument(span.clone())
    .await;
    let ran = match (ran, spill, &files) {
        (Ran::Output(output), Some(limit), Some(files)) => {
            let call = ToolCall {
                id: ctx.call_id().to_owned(),
                ..call.clone()
            };
            // Boxed: a rare await, kept out of every call's future.
            Ran::Output(Box::pin(super::spill::spill(output, limit, files.as_ref(), &call)).await)
        }
        (ran, ..) => ran,
    };
    if tracing::enabled!(target: "llm_tools::tool", tracing::Level::DEBUG) {
        let _entered = span.enter();
        match &ran {
            Ran::Output(output) => {
                tracing::debug!(target: "llm_tools::tool", result = output.as_text(), "the tool answered");
            }
            Ran::Recoverable(text) => {
                tracing::debug!(target: "llm_tools::tool", error = text.as_str(), "the tool reported an error");
            }
            Ran::Task(task) => {
                tracing::debug!(target: "llm_tools::tool", status = ?task.status(), "the call paused on a task");
            }
            Ran::Question { question, .. } => {
                tracing::debug!(target: "llm_tools::tool", question = question.message(), "the call paused on a question");
            }
            Ran::Fatal(error) => {
                tracing::debug!(target: "llm_tools::tool", error = %error, "the tool failed");
            }
            Ran::TimedOut(limit) => {
                tracing::debug!(target: "llm_tools::tool", ?limit, "the call timed out");
            }
        }
    }
    match &ran {
        Ran::Fatal(_) => span.record("error.type", "fatal"),
        Ran::TimedOut(_) => span.record("error.type", "timeout"),
        Ran::Recoverable(_) => span.record("error.type", "tool_error"),
        _ => &span,
    };
    (index, token, ran)
}

fn from_outcome(outcome: ToolOutcome, resumed: Option<Box<Task>>) -> Ran {
    match outcome {
        ToolOutcome::Output(output) => Ran::Output(output),
        ToolOutcome::Task(task) => Ran::Task(Box::new(task)),
        ToolOutcome::Error(error) => {
            if let Some(question) = error.question() {
                Ran::Question {
                    question: Box::new(question.clone()),
                    resumed,
                }
            } else if error.is_fatal() {
                Ran::Fatal(error.into_boxed())
            } else {
                Ran::Recoverable(error.to_string())
            }
        }
    }
}

fn panicked(payload: Box<dyn Any + Send>) -> Box<dyn StdError + Send + Sync + 'static> {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned());
    format!("the tool panicked: {message}").into()
}

/// Makes a call's arguments safe to send back: empty or `null` become `{}`; anything that is not
/// one JSON object, or that holds more values than
/// [`MAX_JSON_VALUES`](crate::json_values::MAX_JSON_VALUES), is replaced by `{}` and the
/// error the model should read is returned.
pub(crate) fn check_arguments(call: &mut ToolCall) -> Result<(), String> {
    let trimmed = call.arguments.trim();
    if trimmed.is_empty() || trimmed == "null" {
        call.arguments = "{}".to_owned();
        return Ok(());
    }
    let problem = if let Some(count) = crate::json_values::too_many_values(trimmed) {
        format!(
            "held about {count} JSON values, more than the {} a call may send",
            crate::json_values::MAX_JSON_VALUES
        )
    } else {
        match serde_json::from_str::<serde::de::IgnoredAny>(trimmed) {
            Err(e) => format!("were not valid JSON ({e})"),
            Ok(_) if trimmed.starts_with('{') => return Ok(()),
            Ok(_) => "were not a JSON object".to_owned(),
        }
    };
    let sent = shortened(trimmed, QUOTED_CHARS);
    call.arguments = "{}".to_owned();
    Err(format!(
        "The arguments of this call {problem}, so it did not run. You sent `{sent}`. Call `{}` again with one JSON object of arguments.",
        shortened(&call.joined_name(), QUOTED_CHARS)
    ))
}

pub(crate) fn unknown_tool(name: &str, similar: &[&str]) -> String {
    let name = shortened(name, QUOTED_CHARS);
    if similar.is_empty() {
        format!(
            "There is no tool `{name}`: this chat has no tools at the moment. Answer without calling a tool."
        )
    } else {
        let names: Vec<String> = similar.iter().map(|n| format!("`{n}`")).collect();
        format!(
            "There is no tool `{name}`. Tools with similar names: {}.",
            names.join(", ")
        )
    }
}

/// The result of a call of a registered tool its request did not offer.
pub(crate) fn not_offered(name: &str, deferred: bool) -> String {
    if deferred {
        format!(
            "This call did not run: `{name}` is not available yet. Find it with the tool search first, then call it."
        )
    } else {
        format!(
            "This call did not run: `{name}` is not available for this answer. Call only the tools you were given."
        )
    }
}

pub(crate) fn over_cap(name: &str, cap: usize) -> String {
    let name = shortened(name, QUOTED_CHARS);
    format!(
        "This call did not run: at most {cap} tool call{} of one answer run. Call `{name}` again in your next answer, a few calls at a time.",
        if cap == 1 { "" } else { "s" }
    )
}

pub(crate) fn denied(name: &str, reason: Option<&str>) -> String {
    match reason {
        Some(reason) => format!("The user denied the `{name}` tool call: {reason}"),
        None => format!("The user denied the `{name}` tool call."),
    }
}

pub(crate) fn timed_out(limit: Duration) -> String {
    format!(
        "The call ran longer than its limit of {} and was cancelled.",
        human_duration(limit)
    )
}

pub(crate) const FAILED: &str =
    "The tool failed; the error was reported to the application and this turn stopped.";

pub(crate) fn not_run(failed_tool: &str) -> String {
    format!("This call did not run: the turn stopped because the call to `{failed_tool}` failed.")
}

pub(crate) fn stopped(failed_tool: &str) -> String {
    format!(
        "This call was stopped before it finished: the turn stopped because the call to `{failed_tool}` failed."
    )
}

pub(crate) const CANCELLED: &str = "This call was cancelled before it finished.";

pub(crate) const CANCELLED_BEFORE_RUN: &str = "This call was cancelled before it ran.";

pub(crate) const REWRITE_INVALID: &str = "This call did not run: the application rewrote its arguments into something that is not one JSON object.";

fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    if s != 0 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s != 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments past the value limit never reach a tool nor stay in the history: the model
    /// reads why.
    #[test]
    fn arguments_past_the_value_limit_become_an_empty_object() {
        let dense = format!(
            r#"{{"rows":[{}0]}}"#,
            "0,".repeat(crate::json_values::MAX_JSON_VALUES)
        );
        let mut call = ToolCall::new("c", "t", dense);
        let err = check_arguments(&mut call).unwrap_err();
        assert!(err.contains("JSON values"), "{}", shortened(&err, 300));
        assert!(err.len() < 1_000, "a short error: {} bytes", err.len());
        assert_eq!(call.arguments, "{}");
    }

    #[test]
    fn arguments_that_are_not_one_object_become_an_empty_object() {
        let mut call = ToolCall::new("c", "t", "");
        assert!(check_arguments(&mut call).is_ok());
        assert_eq!(call.arguments, "{}");

        let mut call = ToolCall::new("c", "t", r#"{"a": 1"#);
        let err = check_arguments(&mut call).unwrap_err();
        assert!(err.contains("were not valid JSON"), "{err}");
        assert!(err.contains(r#"You sent `{"a": 1`."#), "{err}");
        assert_eq!(call.arguments, "{}");

        let mut call = ToolCall::new("c", "t", "[1,2]");
        let err = check_arguments(&mut call).unwrap_err();
        assert!(err.contains("were not a JSON object"), "{err}");

        let mut call = ToolCall::new("c", "t", r#" {"a": [1, {"b": 2}]} "#);
        assert!(check_arguments(&mut call).is_ok());
        assert_eq!(call.arguments, r#" {"a": [1, {"b": 2}]} "#);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(600)), "10m");
        assert_eq!(human_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(human_duration(Duration::from_secs(90)), "90s");
        assert_eq!(human_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn long_arguments_are_cut_on_a_char_boundary() {
        let text = "é".repeat(300);
        let cut = shortened(&text, 200);
        assert_eq!(cut.chars().count(), 201);
    }
}
