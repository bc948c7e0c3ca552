//! Approvals of served calls: a tool that needs approval (`#[tool(needs_approval)]`, or a
//! per-call rule) never runs unapproved. The application's hook decides when there is one
//! ([`ToolServer::approve_with`](crate::ToolServer::approve_with)); otherwise, or when the hook
//! says [`Decision::AskTheClient`], the client's user is asked through elicitation (in place on
//! sessions opened with `initialize`, as an input request on 2026-07-28); a client that cannot
//! ask (no elicitation capability) is refused with a tool error.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use llm_tools_core::{BoxFuture, Tool, ToolCall};
use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::json;

use crate::elicitation;

/// The key of the approval among a 2026-07-28 call's input requests and responses.
pub(super) const APPROVAL_KEY: &str = "approval";

/// What the application's hook decides about a call that needs approval.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The call runs.
    Approve,
    /// The call does not run; the client gets a tool error that gives the reason.
    Deny {
        /// Why, as the client (and its model) reads it.
        reason: String,
    },
    /// The client's user decides, through elicitation, as when there is no hook.
    AskTheClient,
}

impl Decision {
    /// A denial with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny {
            reason: reason.into(),
        }
    }
}

/// The application's hook, boxed.
pub(super) type Approver = Arc<dyn Fn(&ToolCall) -> BoxFuture<'static, Decision> + Send + Sync>;

/// Boxes a hook.
pub(super) fn approver<F, Fut>(decide: F) -> Approver
where
    F: Fn(&ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    Arc::new(move |call: &ToolCall| Box::pin(decide(call)) as BoxFuture<'static, Decision>)
}

/// Whether `call` needs approval; a rule that panics means it does.
pub(super) fn needs_approval(tool: &dyn Tool, call: &ToolCall) -> bool {
    std::panic::catch_unwind(AssertUnwindSafe(|| tool.needs_approval(call))).unwrap_or(true)
}

/// What the approval step of a call concluded.
pub(super) enum Approval {
    /// The call may run.
    Granted,
    /// The call does not run: the tool error the client gets.
    Refused(String),
    /// 2026-07-28: the client must ask its user and send the call again with the answer.
    Ask(InputRequests),
}

/// How a request can ask its client's user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Asking {
    /// In place: an elicitation request to the client while the call waits.
    InPlace,
    /// 2026-07-28: input requests in the call's result; the client calls again with answers.
    InputRequests,
    /// Neither: served without a session while naming an older version.
    Cannot,
}

impl Asking {
    pub(super) fn of(modern: bool, cannot_ask: bool) -> Self {
        match (modern, cannot_ask) {
            (true, _) => Self::InputRequests,
            (false, true) => Self::Cannot,
            (false, false) => Self::InPlace,
        }
    }
}

/// Decides whether `call` runs: by the hook, else by the client's user. `answered` is a
/// 2026-07-28 client's answer to the approval it was asked for in the previous round.
pub(super) async fn approve(
    approver: Option<&Approver>,
    call: &ToolCall,
    context: &RequestContext<RoleServer>,
    asking: Asking,
    answered: Option<&serde_json::Value>,
) -> Approval {
    if let Some(answer) = answered {
        return match serde_json::from_value::<ElicitResult>(answer.clone()) {
            Ok(result) => user_decision(call, &result),
            Err(_) => Approval::Refused(denied(call, "the approval could not be read")),
        };
    }
    if let Some(approver) = approver {
        // The hook may panic while it makes its future, or while the future runs.
        let decided = match std::panic::catch_unwind(AssertUnwindSafe(|| approver(call))) {
            Ok(deciding) => AssertUnwindSafe(deciding).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        match decided {
            Ok(Decision::Approve) => return Approval::Granted,
            Ok(Decision::Deny { reason }) => return Approval::Refused(denied(call, &reason)),
            Ok(_) => {}
            Err(_) => {
                tracing::error!(target: "llm_tools::mcp", tool = call.name.as_str(), call_id = call.id.as_str(), "the approval hook panicked");
                return Approval::Refused(denied(call, "the server could not decide"));
            }
        }
    }
    if !elicitation::can_elicit(context) {
        return Approval::Refused(format!(
            "`{}` needs approval before it runs, and this MCP client cannot ask its user \
             (it declared no elicitation capability); the call did not run",
            call.joined_name()
        ));
    }
    let request = match approval_request(call) {
        Ok(request) => request,
        Err(message) => return Approval::Refused(message),
    };
    if asking == Asking::Cannot {
        return Approval::Refused(format!(
            "`{}` needs approval before it runs, and this request cannot carry the question: it \
             was served without a session while naming a protocol version older than \
             2026-07-28, whose calls ask in place; the call did not run",
            call.joined_name()
        ));
    }
    if asking == Asking::InputRequests {
        let mut requests = InputRequests::new();
        requests.insert(
            APPROVAL_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(request)),
        );
        return Approval::Ask(requests);
    }
    ask_in_place(&context.peer, call, request).await
}

async fn ask_in_place(
    peer: &Peer<RoleServer>,
    call: &ToolCall,
    request: ElicitRequestParams,
) -> Approval {
    match peer.create_elicitation(request).await {
        Ok(result) => user_decision(call, &result),
        Err(e) => Approval::Refused(denied(call, &format!("asking the user failed: {e}"))),
    }
}

/// The user's answer: approved only when they accepted with `approve: true`.
fn user_decision(call: &ToolCall, result: &ElicitResult) -> Approval {
    let approved = matches!(result.action, rmcp::model::ElicitationAction::Accept)
        && result
            .content
            .as_ref()
            .and_then(|content| content.get("approve"))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
    if approved {
        Approval::Granted
    } else if matches!(result.action, rmcp::model::ElicitationAction::Accept) {
        Approval::Refused(denied(call, "the user did not approve it"))
    } else {
        Approval::Refused(denied(call, "the user declined"))
    }
}

fn denied(call: &ToolCall, reason: &str) -> String {
    format!(
        "the call to `{}` was denied: {reason}; it did not run",
        call.joined_name()
    )
}

/// The question the user is asked: the tool, its arguments as sent, approve or not.
fn approval_request(call: &ToolCall) -> Result<ElicitRequestParams, String> {
    let name = call.joined_name();
    let message = format!(
        "The tool `{name}` wants to run with these arguments:\n{}\nApprove this call?",
        call.arguments
    );
    let value = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve",
                    "description": format!("Run `{name}` with the arguments shown"),
                    "default": false
                }
            },
            "required": ["approve"]
        }
    });
    serde_json::from_value(value).map_err(|e| format!("the approval cannot be asked over MCP: {e}"))
}
