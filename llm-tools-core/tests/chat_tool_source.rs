//! Tool sources: tools that change between requests (an MCP server's list, a plugin registry).
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::TestTool;
use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{BoxFuture, Tool, ToolSource};
use serde_json::json;

/// A source whose list the test swaps; `refresh` counts its calls and can install a staged list,
/// as an MCP client does when the server announced a change.
#[derive(Default)]
struct Swappable {
    tools: Mutex<Vec<Arc<dyn Tool>>>,
    staged: Mutex<Option<Vec<Arc<dyn Tool>>>>,
    generation: AtomicU64,
    refreshes: AtomicUsize,
}

impl Swappable {
    fn with(tools: Vec<Arc<dyn Tool>>) -> Arc<Self> {
        let source = Self::default();
        *source.tools.lock().unwrap() = tools;
        Arc::new(source)
    }

    /// The list `refresh` installs next.
    fn stage(&self, tools: Vec<Arc<dyn Tool>>) {
        *self.staged.lock().unwrap() = Some(tools);
    }
}

impl ToolSource for Swappable {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.lock().unwrap().clone()
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        self.refreshes.fetch_add(1, Ordering::Relaxed);
        if let Some(tools) = self.staged.lock().unwrap().take() {
            *self.tools.lock().unwrap() = tools;
            self.generation.fetch_add(1, Ordering::Release);
        }
        Box::pin(async {})
    }

    fn source_name(&self) -> &str {
        "swappable"
    }
}

fn tool(name: &'static str) -> Arc<dyn Tool> {
    Arc::new(TestTool::echo(name))
}

#[tokio::test]
async fn a_changed_list_is_offered_from_the_next_request_on() {
    let model = ScriptedProvider::new()
        .then_call("first", json!({}))
        .then_call("second", json!({}))
        .then_text("done");
    let source = Swappable::with(vec![tool("first")]);
    let mut chat = Chat::new(model.clone());
    chat.with_tool_source(Arc::clone(&source)).unwrap();
    assert_eq!(chat.tools().len(), 1);

    // The list changes while the first round runs: the second request offers the new tools, and
    // the model's call to one of them runs.
    source.stage(vec![tool("first"), tool("second")]);
    let outcome = chat.ask("go").await.unwrap();
    assert_eq!(common::answered(outcome).text(), "done");

    let requests = model.requests();
    assert_eq!(requests[0].tools, ["first", "second"]);
    assert_eq!(requests[2].tools, ["first", "second"]);
    assert_eq!(chat.messages()[4].text(), "second({})");
    assert!(source.refreshes.load(Ordering::Relaxed) >= 3);
}

#[tokio::test]
async fn a_removed_tool_is_no_longer_offered_and_a_call_to_it_is_an_unknown_tool() {
    let model = ScriptedProvider::new()
        .then_text("hello")
        .then_call("gone", json!({}))
        .then_text("sorry");
    let source = Swappable::with(vec![tool("kept"), tool("gone")]);
    let mut chat = Chat::new(model.clone());
    chat.with_tool_source(Arc::clone(&source)).unwrap();
    let _ = chat.ask("hi").await.unwrap();

    source.stage(vec![tool("kept")]);
    let _ = chat.ask("again").await.unwrap();
    let requests = model.requests();
    assert_eq!(requests[0].tools, ["kept", "gone"]);
    assert_eq!(requests[1].tools, ["kept"]);
    let result = &chat.messages()[4];
    assert!(result.is_error, "{result:?}");
    assert!(result.text().contains("gone"), "{}", result.text());
}

#[tokio::test]
async fn a_new_list_that_clashes_with_another_tool_keeps_the_old_one() {
    let model = ScriptedProvider::new().then_text("one").then_text("two");
    let source = Swappable::with(vec![tool("remote_a")]);
    let mut chat = Chat::new(model.clone());
    chat.with_tools(TestTool::echo("local")).unwrap();
    chat.with_tool_source(Arc::clone(&source)).unwrap();
    let _ = chat.ask("hi").await.unwrap();

    // `local` is taken by the chat's own tool: the whole new list is refused.
    source.stage(vec![tool("remote_b"), tool("local")]);
    let _ = chat.ask("again").await.unwrap();
    let mut offered = model.requests()[1].tools.clone();
    offered.sort();
    assert_eq!(offered, ["local", "remote_a"]);
}

#[test]
fn a_first_list_that_clashes_is_refused_and_adds_nothing() {
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_tools(TestTool::echo("taken")).unwrap();
    let source = Swappable::with(vec![tool("fresh"), tool("taken")]);
    let err = chat.with_tool_source(source).unwrap_err();
    assert!(err.to_string().contains("taken"), "{err}");
    assert_eq!(chat.tools().len(), 1);
}

#[tokio::test]
async fn replacing_the_tools_lets_go_of_the_source() {
    let model = ScriptedProvider::new().then_text("one");
    let source = Swappable::with(vec![tool("remote")]);
    let mut chat = Chat::new(model.clone());
    chat.with_tool_source(Arc::clone(&source)).unwrap();
    chat.replace_tools(TestTool::echo("local")).unwrap();
    source.stage(vec![tool("remote"), tool("remote_two")]);
    let _ = chat.ask("hi").await.unwrap();
    assert_eq!(model.requests()[0].tools, ["local"]);
    assert_eq!(source.refreshes.load(Ordering::Relaxed), 0);
}
