//! What the providers' benchmarks share: the thread-CPU measurement, a set of tools with a
//! realistic schema, a conversation with a tool round per question, network-sized chunks of a
//! streamed body, and reading a stream of events to its end.

mod thread_cpu;

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use llm_tools_core::{
    BoxFuture, EventStream, Message, RawArgs, StreamEvent, Tool, ToolCall, ToolContext,
    ToolOutcome, ToolSpec,
};
use serde_json::json;

pub(crate) use thread_cpu::ThreadCpu;

/// A tool that only has a spec: requests are built and answers read, nothing is called.
struct BenchTool(ToolSpec);

impl Tool for BenchTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::error("unused") })
    }
}

/// `n` tools (`tool_0`, `tool_1`, …) with a query, a bounded limit and a list of filters.
pub(crate) fn tools(n: usize) -> Vec<Arc<dyn Tool>> {
    (0..n)
        .map(|i| {
            let spec = ToolSpec::new(format!("tool_{i}"), format!("Tool number {i}: looks things up"))
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What to look for"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                        "filters": {"type": "array", "items": {"type": "object", "properties": {
                            "field": {"type": "string"}, "value": {"type": "string"}}, "required": ["field", "value"]}}
                    },
                    "required": ["query"]
                }));
            Arc::new(BenchTool(spec)) as Arc<dyn Tool>
        })
        .collect()
}

/// Fresh copies of the tools: empty definition caches.
pub(crate) fn uncached(tools: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    tools
        .iter()
        .map(|t| Arc::new(BenchTool(t.spec().clone())) as Arc<dyn Tool>)
        .collect()
}

/// A conversation of `n` messages: questions, a tool call each (ids starting with
/// `id_prefix`, as the protocol's own ids do), its result, an answer.
pub(crate) fn history(n: usize, id_prefix: &str) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a helpful assistant.")];
    let mut i = 0;
    while messages.len() < n {
        messages.push(Message::user(format!(
            "Question {i}: what is the status of order {i}?"
        )));
        let id = format!("{id_prefix}{i:024}");
        messages.push(Message::assistant_with_calls(
            "",
            vec![ToolCall::new(
                id.clone(),
                "tool_1",
                format!(r#"{{"query":"order {i}","limit":5}}"#),
            )],
        ));
        messages.push(Message::tool_result(
            id,
            format!("Order {i} shipped on day {i}."),
            false,
        ));
        messages.push(Message::assistant(format!("Order {i} has shipped.")));
        i += 1;
    }
    messages.truncate(n);
    messages
}

/// A question answered with `n` calls (ids starting with `id_prefix`) and their `n` results,
/// the results in the reverse order of the calls: what a request writes back after a round of
/// many calls (an answer past the chat's call cap, say, each call with its refusal).
#[allow(dead_code)] // not every benchmark writes one back
pub(crate) fn many_calls_round(n: usize, id_prefix: &str) -> Vec<Message> {
    let calls = (0..n)
        .map(|i| ToolCall::new(format!("{id_prefix}{i:024}"), "tool_1", "{}"))
        .collect();
    let mut messages = vec![
        Message::user("Check every order"),
        Message::assistant_with_calls("", calls),
    ];
    messages.extend((0..n).rev().map(|i| {
        Message::tool_result(
            format!("{id_prefix}{i:024}"),
            "This call did not run: at most 64 tool calls of one answer run.",
            true,
        )
    }));
    messages
}

/// Splits a body into network-sized chunks.
pub(crate) fn network_chunks(body: &str) -> Vec<Bytes> {
    byte_chunks(body.as_bytes())
}

/// Splits a body of any bytes (a binary event stream) into network-sized chunks.
pub(crate) fn byte_chunks(body: &[u8]) -> Vec<Bytes> {
    body.chunks(16 * 1024).map(Bytes::copy_from_slice).collect()
}

/// The chunks as the byte stream a response body would be (the chunks are reference-counted,
/// so a clone of them copies no bytes).
pub(crate) fn arriving(
    parts: Vec<Bytes>,
) -> impl futures::Stream<Item = Result<Bytes, llm_tools_core::ProviderError>> + Send + 'static {
    futures::stream::iter(parts.into_iter().map(Ok))
}

/// Reads a stream of events to its end, which must be the completed answer.
pub(crate) fn drain(rt: &tokio::runtime::Runtime, mut events: EventStream<'_>) {
    rt.block_on(async {
        let mut last = None;
        while let Some(e) = events.next().await {
            last = Some(e.unwrap());
        }
        assert!(matches!(last, Some(StreamEvent::Completed(_))));
    })
}
