//! Hooks on tool calls and their results, and the approval resolver.
//!
//! A hook sees a call right before it runs ([`Chat::on_tool_call`](super::Chat::on_tool_call),
//! [`Chat::on_tool_call_async`](super::Chat::on_tool_call_async)) and may let it run, veto it
//! with a reason the model reads, rewrite its arguments, or stop the turn
//! ([`ToolCallAction`]). A result hook ([`Chat::on_tool_result_async`](super::Chat::on_tool_result_async))
//! sees what a run produced before anything else does and may keep it, rewrite it or stop the
//! turn ([`ToolResultAction`]).
//!
//! **Why both a sync and an async registration.** The async form is the primary one: a hook
//! that asks a policy service, a database or a person needs to await. The sync form stays
//! (it is public API, and most hooks are a `match` on the tool name) and is a thin adapter onto
//! the same chain: sync and async hooks run in one chain, in registration order, each seeing
//! the arguments the one before left. A sync hook is called in place, with no future and no
//! allocation, so a chat whose hooks are all sync pays what it paid before, and a chat with no
//! hooks pays nothing (the hook phase is skipped).
//!
//! **Where hooks run.** A call's hooks run inside its claim: the claim is granted (and, in a
//! durable chat, written to the store) first, then the hooks run, then the tool. A rewrite is
//! written with the call before the tool starts, so a process that dies after the rewrite
//! resumes with the rewritten arguments, and two processes never both run hooks for one claim.
//! Hooks run on a call's first run (a new or approved call, or one whose claim expired), not
//! when a task resumes or a call runs again after an answered question.
//!
//! **Bounds.** Every hook and the resolver are bounded by [`Chat::with_hook_timeout`](super::Chat::with_hook_timeout)
//! (30 seconds by default). A call hook that panics or runs out of time vetoes the call (the
//! model reads that the application's check failed); a result hook that does withholds the
//! result (the model reads that it was withheld) and stops the turn, so a failing redaction
//! never lets a result through; a resolver that does leaves the call for a person. None of
//! them brings the chat down.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;

use crate::message::{Message, Role, ToolCall};

/// How long a hook or the approval resolver may take by default.
pub(crate) const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// What an [`on_tool_result_async`](super::Chat::on_tool_result_async) hook decides for a
/// result a run produced.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per result, moved once
pub enum ToolResultAction {
    /// Keep the result as it is.
    Keep,
    /// Replace it with this message (a tool result; its call id is set to the call's).
    Rewrite(Message),
    /// Keep the result, then stop the turn: the calls not run yet are closed, and the turn
    /// ends with [`Outcome::Stopped`](super::Outcome::Stopped) and
    /// [`StopReason::Hook`](super::StopReason::Hook).
    Stop(String),
}

/// What the [approval resolver](super::Chat::with_approval_resolver) decides for a call that
/// needs approval.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Approve the call, with its arguments as they are (the approval is bound to them).
    Approve,
    /// Deny it; the model gets the reason as an error result.
    Deny(String),
    /// Leave it to a person: the call stays pending (`pending_approvals`).
    Ask,
}

/// What an [`on_tool_call`](super::Chat::on_tool_call) callback decides for a call about to run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolCallAction {
    /// Run the call as it is.
    Run,
    /// Do not run it; the model gets this reason as an error result.
    Veto(String),
    /// Run it with these JSON arguments instead (the transcript keeps the rewritten ones). A
    /// call that needed approval needs it again unless the approval covers the new arguments.
    Rewrite(String),
    /// Do not run it, and stop the turn: the model gets the reason as an error result, the
    /// calls not run yet are closed, and the turn ends with
    /// [`Outcome::Stopped`](super::Outcome::Stopped) and [`StopReason::Hook`](super::StopReason::Hook).
    Stop(String),
}

pub(crate) type SyncCallHook = Arc<dyn Fn(&ToolCall) -> ToolCallAction + Send + Sync>;
pub(crate) type AsyncCallHook =
    Arc<dyn Fn(ToolCall) -> BoxFuture<'static, ToolCallAction> + Send + Sync>;
pub(crate) type ResultHook =
    Arc<dyn Fn(ToolCall, Message) -> BoxFuture<'static, ToolResultAction> + Send + Sync>;
pub(crate) type Resolver = Arc<dyn Fn(ToolCall) -> BoxFuture<'static, Decision> + Send + Sync>;

/// One `on_tool_call` registration.
#[derive(Clone)]
pub(crate) enum CallHook {
    Sync(SyncCallHook),
    Async(AsyncCallHook),
}

pub(crate) fn boxed_call_hook<F, Fut>(f: F) -> AsyncCallHook
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolCallAction> + Send + 'static,
{
    Arc::new(move |call| Box::pin(f(call)))
}

pub(crate) fn boxed_result_hook<F, Fut>(f: F) -> ResultHook
where
    F: Fn(ToolCall, Message) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResultAction> + Send + 'static,
{
    Arc::new(move |call, result| Box::pin(f(call, result)))
}

pub(crate) fn boxed_resolver<F, Fut>(f: F) -> Resolver
where
    F: Fn(ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    Arc::new(move |call| Box::pin(f(call)))
}

/// Why a hook gave no decision.
enum Failed {
    Panicked,
    TimedOut(Duration),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Panicked => f.write_str("panicked"),
            Failed::TimedOut(limit) => write!(f, "did not decide within {limit:?}"),
        }
    }
}

/// Awaits a hook's future, bounded by `limit`, a panic caught.
async fn bounded<T>(
    make: impl FnOnce() -> BoxFuture<'static, T>,
    limit: Duration,
) -> Result<T, Failed> {
    let future = std::panic::catch_unwind(AssertUnwindSafe(make)).map_err(|_| Failed::Panicked)?;
    let future = AssertUnwindSafe(future).catch_unwind();
    if tokio::runtime::Handle::try_current().is_err() {
        // No timer outside a Tokio runtime: unbounded, but a panic is still caught.
        return future.await.map_err(|_| Failed::Panicked);
    }
    match tokio::time::timeout(limit, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) => Err(Failed::Panicked),
        Err(_) => Err(Failed::TimedOut(limit)),
    }
}

/// Runs the `on_tool_call` chain on `call`: a rewrite is what the next hook sees, a veto or a
/// stop ends the chain. Returns `Run`, `Veto`, `Stop`, or `Rewrite` with the last arguments.
pub(crate) async fn on_tool_call(
    hooks: &[CallHook],
    call: &ToolCall,
    limit: Duration,
) -> ToolCallAction {
    let mut rewritten: Option<ToolCall> = None;
    for hook in hooks {
        let current = rewritten.as_ref().unwrap_or(call);
        let action = match hook {
            CallHook::Sync(f) => std::panic::catch_unwind(AssertUnwindSafe(|| f(current)))
                .map_err(|_| Failed::Panicked),
            CallHook::Async(f) => {
                let current = current.clone();
                bounded(|| f(current), limit).await
            }
        };
        match action {
            Ok(ToolCallAction::Run) => {}
            Ok(ToolCallAction::Rewrite(arguments)) => {
                rewritten.get_or_insert_with(|| call.clone()).arguments = arguments;
            }
            Ok(other) => return other,
            Err(failed) => {
                tracing::warn!(target: "llm_tools::tool", call_id = call.id.as_str(), tool = %call.joined_name(), "an on_tool_call hook {failed}; the call is vetoed");
                return ToolCallAction::Veto(format!(
                    "This call did not run: the application's check of it failed (its on_tool_call hook {failed})."
                ));
            }
        }
    }
    match rewritten {
        Some(c) => ToolCallAction::Rewrite(c.arguments),
        None => ToolCallAction::Run,
    }
}

/// Runs the `on_tool_result_async` chain on a run's result: returns the result to keep and,
/// when a hook stops the turn (or fails), why.
pub(crate) async fn on_tool_result(
    hooks: &[ResultHook],
    call: &ToolCall,
    mut result: Message,
    limit: Duration,
) -> (Message, Option<String>) {
    for hook in hooks {
        let (c, r) = (call.clone(), result.clone());
        match bounded(|| hook(c, r), limit).await {
            Ok(ToolResultAction::Keep) => {}
            Ok(ToolResultAction::Rewrite(mut message)) => {
                message.role = Role::Tool;
                message.tool_call_id = Some(call.id.clone());
                result = message;
            }
            Ok(ToolResultAction::Stop(reason)) => return (result, Some(reason)),
            Err(failed) => {
                tracing::warn!(target: "llm_tools::tool", call_id = call.id.as_str(), tool = %call.joined_name(), "an on_tool_result hook {failed}; the result is withheld and the turn stops");
                let text = format!(
                    "This call's result was withheld: the application's check of it failed (its on_tool_result hook {failed})."
                );
                return (
                    Message::tool_result(call.id.as_str(), text, true),
                    Some(format!("an on_tool_result hook {failed}")),
                );
            }
        }
    }
    (result, None)
}

/// Asks the resolver about `call`, bounded by `limit`; a resolver that fails leaves the call
/// for a person.
pub(crate) async fn resolve(resolver: &Resolver, call: &ToolCall, limit: Duration) -> Decision {
    let c = call.clone();
    match bounded(|| resolver(c), limit).await {
        Ok(decision) => decision,
        Err(failed) => {
            tracing::warn!(target: "llm_tools::tool", call_id = call.id.as_str(), tool = %call.joined_name(), "the approval resolver {failed}; the call waits for a person");
            Decision::Ask
        }
    }
}
