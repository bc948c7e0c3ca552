//! The loop's tracing spans (OpenTelemetry GenAI attributes), seen by a subscriber of the test's
//! own. Alone in its test binary: tracing caches each callsite's interest globally, and a test
//! of another file hitting the same callsite without a subscriber, at the moment this one
//! installs its own, could leave the callsite switched off for it.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::sync::{Arc, Mutex};

use common::TestTool;
use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, Usage};
use serde_json::json;
use std::collections::HashMap;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A subscriber that keeps every span's name and fields.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<SpanRecord>>>);

type SpanRecord = (String, HashMap<String, String>);

struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut fields = HashMap::new();
        span.record(&mut Fields(&mut fields));
        let mut spans = self.0.lock().unwrap();
        spans.push((span.metadata().name().to_owned(), fields));
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut spans = self.0.lock().unwrap();
        let (_, fields) = &mut spans[span.into_u64() as usize - 1];
        values.record(&mut Fields(fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn requests_and_tool_calls_get_spans_with_gen_ai_attributes() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(spans.clone());
    let mut answer = Message::assistant("done");
    answer.usage = Some(Usage::new(12, 3));
    let model = ScriptedProvider::new()
        .with_model("model-x")
        .then_call("a", json!({}))
        .then(answer);
    let mut chat = Chat::new(model);
    chat.with_tools(TestTool::text("a", "A")).unwrap();
    let _ = common::runtime().block_on(async { chat.ask("go").await.unwrap() });

    let spans = spans.0.lock().unwrap();
    let chats: Vec<_> = spans.iter().filter(|(n, _)| n == "chat").collect();
    assert_eq!(chats.len(), 2);
    let (_, first) = chats[0];
    assert_eq!(first["gen_ai.operation.name"], "chat");
    assert_eq!(first["gen_ai.request.model"], "model-x");
    assert_eq!(first["gen_ai.provider.name"], "scripted");
    assert_eq!(first["otel.name"], "chat model-x");
    let (_, second) = chats[1];
    assert_eq!(second["gen_ai.usage.input_tokens"], "12");
    assert_eq!(second["gen_ai.usage.output_tokens"], "3");
    let (_, tool) = spans.iter().find(|(n, _)| n == "execute_tool").unwrap();
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "a");
    assert_eq!(tool["gen_ai.tool.call.id"], "call_1");
    assert_eq!(tool["otel.name"], "execute_tool a");
}
