//! Tools written by hand for the chat tests: each is a real `Tool` whose behaviour is a closure,
//! so one test can make a tool that pauses, asks, fails or panics exactly when it needs to.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::panic)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use llm_tools_core::{
    BoxFuture, Message, Namespace, RawArgs, Role, Task, Tool, ToolCall, ToolContext, ToolOutcome,
    ToolOutput, ToolSpec,
};

type CallFn = dyn Fn(String, ToolContext) -> BoxFuture<'static, ToolOutcome> + Send + Sync;
type ResumeFn = dyn Fn(Task, String, ToolContext) -> BoxFuture<'static, ToolOutcome> + Send + Sync;
type ApprovalFn = dyn Fn(&ToolCall) -> bool + Send + Sync;

/// A tool whose `call`, `resume`, `cancel` and approval rule are closures; it counts its runs.
pub struct TestTool {
    spec: ToolSpec,
    call: Arc<CallFn>,
    resume: Option<Arc<ResumeFn>>,
    approval: Option<Arc<ApprovalFn>>,
    pub calls: Arc<AtomicUsize>,
    pub resumes: Arc<AtomicUsize>,
    pub cancelled: Arc<Mutex<Vec<Task>>>,
}

impl TestTool {
    pub fn new<F, Fut>(name: &'static str, f: F) -> Self
    where
        F: Fn(String, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutcome> + Send + 'static,
    {
        Self {
            spec: ToolSpec::new(name, format!("The {name} tool")),
            call: Arc::new(move |args, ctx| Box::pin(f(args, ctx))),
            resume: None,
            approval: None,
            calls: Arc::default(),
            resumes: Arc::default(),
            cancelled: Arc::default(),
        }
    }

    /// A tool answering with fixed text.
    pub fn text(name: &'static str, text: &'static str) -> Self {
        Self::new(name, move |_, _| async move {
            ToolOutcome::Output(ToolOutput::text(text))
        })
    }

    /// A tool answering with `name(<arguments>)`.
    pub fn echo(name: &'static str) -> Self {
        Self::new(name, move |args, _| async move {
            ToolOutcome::Output(ToolOutput::text(format!("{name}({args})")))
        })
    }

    pub fn with_resume<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Task, String, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolOutcome> + Send + 'static,
    {
        self.resume = Some(Arc::new(move |task, args, ctx| {
            Box::pin(f(task, args, ctx))
        }));
        self
    }

    pub fn with_approval(mut self, f: impl Fn(&ToolCall) -> bool + Send + Sync + 'static) -> Self {
        self.approval = Some(Arc::new(f));
        self
    }

    pub fn spec_mut(mut self, f: impl FnOnce(ToolSpec) -> ToolSpec) -> Self {
        self.spec = f(self.spec);
        self
    }

    pub fn namespace(self, ns: &'static str) -> Self {
        self.spec_mut(|s| s.with_namespace(Some(Namespace::new(ns))))
    }

    pub fn sequential(self) -> Self {
        self.spec_mut(|s| s.with_sequential(true))
    }

    pub fn needs_approval(self) -> Self {
        self.spec_mut(|s| s.with_needs_approval(true))
    }

    pub fn max_run_time(self, d: Duration) -> Self {
        self.spec_mut(|s| s.with_max_run_time(Some(d)))
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn resumes(&self) -> usize {
        self.resumes.load(Ordering::SeqCst)
    }

    /// Shares the tool with the chat while the test keeps its counters.
    pub fn shared(self) -> Arc<TestTool> {
        Arc::new(self)
    }
}

impl Tool for TestTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        (self.call)(args.as_str().to_owned(), ctx)
    }

    fn resume<'a>(
        &'a self,
        task: Task,
        args: RawArgs<'a>,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        self.resumes.fetch_add(1, Ordering::SeqCst);
        match &self.resume {
            Some(f) => f(task, args.as_str().to_owned(), ctx),
            None => Box::pin(async { ToolOutcome::error("no resume") }),
        }
    }

    fn cancel<'a>(
        &'a self,
        task: Task,
        _args: RawArgs<'a>,
        _ctx: ToolContext,
    ) -> BoxFuture<'a, ()> {
        self.cancelled.lock().unwrap().push(task);
        Box::pin(async {})
    }

    fn needs_approval(&self, call: &ToolCall) -> bool {
        match &self.approval {
            Some(f) => f(call),
            None => self.spec.needs_approval(),
        }
    }
}

/// The invariant every provider needs: each assistant message with tool calls is followed by
/// exactly one result per call, in call order, before any other message.
pub fn assert_results_follow_calls(messages: &[Message]) {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m.role == Role::Tool {
            panic!("tool result at {i} answers no call: {messages:#?}");
        }
        if m.role == Role::Assistant && m.has_tool_calls() {
            for (k, call) in m.tool_calls.iter().enumerate() {
                let Some(result) = messages.get(i + 1 + k) else {
                    panic!("call {} has no result yet: {messages:#?}", call.id);
                };
                assert_eq!(
                    result.role,
                    Role::Tool,
                    "message {} should be a result",
                    i + 1 + k
                );
                assert_eq!(result.tool_call_id.as_deref(), Some(call.id.as_str()));
                let parsed: serde_json::Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|e| panic!("call {} kept invalid arguments: {e}", call.id));
                assert!(
                    parsed.is_object(),
                    "call {} arguments are not an object",
                    call.id
                );
            }
            i += 1 + m.tool_calls.len();
        } else {
            i += 1;
        }
    }
}

/// The text of the result of the call with this id.
pub fn result_of<'a>(messages: &'a [Message], call_id: &str) -> &'a Message {
    messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id))
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// The text of every tool result of a transcript, in order.
pub fn tool_result_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(Message::text)
        .collect()
}

/// Checks a turn ended with the model's answer, and returns it.
pub fn answered(outcome: llm_tools_core::chat::Outcome) -> Message {
    match outcome {
        llm_tools_core::chat::Outcome::Done(m) => m,
        other => panic!("expected an answer, got {other:?}"),
    }
}
