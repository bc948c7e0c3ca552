//! Tools that return search results for the model to cite (`SearchResult`), replayed from the
//! recordings in `tests/fixtures/recorded/tool-citations` (Anthropic, Bedrock with Claude,
//! Cohere) through a loopback HTTP server, the real provider and the real chat loop: the tool's
//! results go out in each protocol's own form (`search_result`, `searchResult`, `document`),
//! exactly as recorded, and the answer comes back with its text and typed citations naming the
//! result's source, title and passage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::{Path, PathBuf};

use llm_tools_core::chat::{Chat, ChatState};
use llm_tools_core::{Message, Part, SearchResult, tool};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::recorded_provider;
use serde_json::Value;

const SOURCE: &str = "https://example.com/ruby-facts";
const TITLE: &str = "Ruby Facts";
const PASSAGE: &str = "The Ruby programming language was created by Yukihiro Matsumoto in 1993.";

/// Searches the company knowledge base
///
/// # Arguments
/// * `query` - What to look for
#[tool]
async fn knowledge_base(query: String) -> Vec<SearchResult> {
    assert!(!query.is_empty(), "the model sends a query");
    vec![SearchResult::new(SOURCE, TITLE, PASSAGE)]
}

fn recording(provider: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recorded/tool-citations");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("chat_citations_with_{provider}_")))
        })
        .unwrap_or_else(|| panic!("no citations recording of {provider} in {}", dir.display()))
}

/// The user's question of the recorded first request (at the same place in the three
/// protocols).
fn question(body: &Value) -> String {
    body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Where a protocol puts the content of the (one) tool result in a request.
fn tool_result_content<'a>(protocol: &str, body: &'a Value) -> &'a Value {
    let message = &body["messages"][2];
    match protocol {
        "anthropic-messages" => &message["content"][0]["content"],
        "bedrock-converse" => &message["content"][0]["toolResult"]["content"],
        "cohere-v2" => &message["content"],
        other => panic!("no tool result layout for {other}"),
    }
}

/// The recorded answer's text.
fn recorded_text(protocol: &str, body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap();
    let texts = |blocks: &Value| -> String {
        blocks
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect()
    };
    match protocol {
        "anthropic-messages" => texts(&v["content"]),
        "bedrock-converse" => v["output"]["message"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| match b.get("citationsContent") {
                Some(cited) => texts(&cited["content"]),
                None => b["text"].as_str().unwrap_or_default().to_owned(),
            })
            .collect(),
        "cohere-v2" => texts(&v["message"]["content"]),
        other => panic!("no answer layout for {other}"),
    }
}

async fn replay(provider: &str) -> (Recording, Message, Vec<Value>, ChatState) {
    let recording = Recording::load(recording(provider)).unwrap();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    chat.with_tools(KnowledgeBase).unwrap();
    let ask = question(&recording.interactions[0].request.body);
    let answer = chat
        .ask(ask)
        .await
        .unwrap()
        .into_message()
        .expect("the turn ends with an answer");
    let sent = server.received().into_iter().map(|r| r.body).collect();
    (recording, answer, sent, chat.state().clone())
}

async fn check(provider: &str) {
    let (recording, answer, sent, state) = replay(provider).await;
    let protocol = recording.protocol.as_str();
    assert_eq!(sent.len(), 2, "{provider}: one request per recorded turn");

    // The tool's search result went out in the protocol's own form, exactly as recorded.
    let recorded = &recording.interactions[1].request.body;
    assert_eq!(
        tool_result_content(protocol, &sent[1]),
        tool_result_content(protocol, recorded),
        "{provider}: the tool result as sent"
    );

    // The answer's text and its typed citations.
    let text = recorded_text(protocol, &recording.interactions[1].response.body);
    assert!(!text.is_empty());
    assert_eq!(answer.text(), text, "{provider}: the answer's text");
    let first = answer
        .citations
        .first()
        .expect("the answer cites the result");
    assert_eq!(first.url.as_deref(), Some(SOURCE), "{provider}");
    assert_eq!(first.title.as_deref(), Some(TITLE), "{provider}");
    assert!(
        first
            .cited_text
            .as_deref()
            .is_some_and(|t| t.contains("Yukihiro Matsumoto")),
        "{provider}: {first:?}"
    );

    // The result is kept as a search result in the history, and in the saved state.
    let result = &state.messages()[2];
    let kept = result.content.iter().find_map(Part::as_search_result);
    assert_eq!(kept, Some(&SearchResult::new(SOURCE, TITLE, PASSAGE)));
    let saved = serde_json::to_string(&state).unwrap();
    let restored: ChatState = serde_json::from_str(&saved).unwrap();
    assert_eq!(restored.messages()[2], *result);
}

#[tokio::test]
async fn anthropic_sends_search_result_blocks_and_cites_them() {
    check("anthropic").await;
}

#[tokio::test]
async fn bedrock_sends_search_result_blocks_and_cites_them() {
    check("bedrock").await;
}

#[tokio::test]
async fn cohere_sends_documents_and_cites_them() {
    check("cohere").await;
}
