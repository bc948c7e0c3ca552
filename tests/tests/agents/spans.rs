//! The sub-agent's tracing spans nest in the parent call's span.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use llm_tools_core::agent::Agent;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::tool;
use serde_json::json;
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// A span's name and its ancestors' names, nearest first.
type Opened = (String, Vec<String>);

/// Every span opened.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Opened>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spans {
    fn on_new_span(&self, _attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let ancestors = ctx
            .span(id)
            .map(|span| span.scope().skip(1).map(|s| s.name().to_owned()).collect())
            .unwrap_or_default();
        let name = ctx
            .span(id)
            .map(|s| s.name().to_owned())
            .unwrap_or_default();
        self.0.lock().unwrap().push((name, ancestors));
    }
}

/// Looks something up
#[tool]
async fn lookup() -> &'static str {
    "found"
}

#[test]
fn the_sub_agent_s_spans_are_inside_the_parent_call_s_span() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                let helper = Agent::new(
                    "helper",
                    ScriptedProvider::new()
                        .then_call("lookup", json!({}))
                        .then_text("found it"),
                )
                .with_tools(Lookup);
                let mut chat = Agent::new(
                    "lead",
                    ScriptedProvider::new()
                        .then_call("helper", json!({"input": "look"}))
                        .then_text("done"),
                )
                .with_tools(helper.as_tool("helper", "Helps"))
                .chat()
                .unwrap();
                let _ = chat.ask("go").await.unwrap();
            });
    });
    let spans = spans.0.lock().unwrap();
    // The sub-agent's own tool call runs in a span whose ancestors include the parent's call
    // of the sub-agent tool: two `execute_tool` spans, one inside the other.
    let inner = spans
        .iter()
        .filter(|(name, _)| name == "execute_tool")
        .find(|(_, ancestors)| ancestors.iter().any(|a| a == "execute_tool"));
    assert!(inner.is_some(), "spans: {spans:?}");
}
