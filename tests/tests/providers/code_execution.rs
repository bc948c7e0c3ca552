//! Code runs are reported with what they gave back. Gemini's: each `executableCode` part becomes a use of
//! `code_execution` (its language and code), and the `codeExecutionResult` that follows gives
//! that use its output (outcome and output), in whole and streamed answers; the parts go back
//! unchanged in later turns. Replayed from `tests/fixtures/documented/gemini_code_execution.json`
//! (built from the Gemini API reference's part formats: no recording of Gemini code execution
//! exists) through the loopback server, the real HTTP client and the chat loop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::PathBuf;

use futures::StreamExt as _;
use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{Message, ProviderTool, ServerToolUse, StreamEvent};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::recorded_provider;
use serde_json::{Value, json};

fn recording() -> Recording {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/documented/gemini_code_execution.json");
    Recording::load(path).unwrap()
}

/// The question of request `i` (its last user turn).
fn question(recording: &Recording, i: usize) -> String {
    let contents = recording.interactions[i].request.body["contents"]
        .as_array()
        .unwrap();
    contents.last().unwrap()["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The code runs a list of parts shows, as the uses they must become.
fn runs_of(parts: &[Value]) -> Vec<(Value, Value)> {
    let mut runs: Vec<(Value, Value)> = Vec::new();
    for p in parts {
        if let Some(code) = p.get("executableCode") {
            runs.push((
                json!({"language": code["language"], "code": code["code"]}),
                Value::Null,
            ));
        }
        if let Some(result) = p.get("codeExecutionResult") {
            runs.last_mut().unwrap().1 =
                json!({"outcome": result["outcome"], "output": result["output"]});
        }
    }
    runs
}

fn check_runs(uses: &[ServerToolUse], parts: &[Value]) {
    let expected = runs_of(parts);
    assert!(!expected.is_empty());
    let got: Vec<(Value, Value)> = uses
        .iter()
        .inspect(|u| assert_eq!(u.name, "code_execution"))
        .map(|u| (u.input.clone(), u.output.clone()))
        .collect();
    assert_eq!(got, expected);
}

/// The model parts of the answer to request `i`, whole or from its stream's chunks.
fn answer_parts(recording: &Recording, i: usize) -> Vec<Value> {
    let body = &recording.interactions[i].response.body;
    let chunks: Vec<Value> = if body.trim_start().starts_with('{') {
        vec![serde_json::from_str(body).unwrap()]
    } else {
        body.split("\r\n\r\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    };
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

async fn streamed(chat: &mut Chat, ask: String) -> Message {
    let mut stream = chat.ask_stream(ask);
    let mut text = String::new();
    let mut done = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            ChatEvent::Model(StreamEvent::TextDelta(t)) => text.push_str(&t),
            ChatEvent::Done(m) => done = Some(m),
            _ => {}
        }
    }
    let answer = done.unwrap();
    assert_eq!(answer.text(), text);
    answer
}

#[tokio::test]
async fn code_runs_are_reported_whole_and_streamed_and_go_back_unchanged() {
    let recording = recording();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    chat.with_provider_tool(ProviderTool::CodeExecution);

    // A whole answer: one run, its code and its result.
    let first = chat
        .ask(question(&recording, 0))
        .await
        .unwrap()
        .into_message()
        .unwrap();
    assert_eq!(
        first.text(),
        "I will write and run Python code to find the first 50 primes and sum them.The sum of the first 50 prime numbers is 5117."
    );
    check_runs(&first.server_tool_uses, &answer_parts(&recording, 0));
    assert_eq!(first.server_tool_uses[0].output["outcome"], "OUTCOME_OK");

    // A streamed answer: two runs, the first failed, each part in its own chunk.
    let second = streamed(&mut chat, question(&recording, 1)).await;
    check_runs(&second.server_tool_uses, &answer_parts(&recording, 1));
    assert_eq!(second.server_tool_uses.len(), 2);
    assert_eq!(
        second.server_tool_uses[0].output["outcome"],
        "OUTCOME_FAILED"
    );

    let ok = chat.ask(question(&recording, 2)).await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));

    // Every request sends the earlier model turns back as the documented traffic does: the
    // code and result parts unchanged, in place.
    let received = server.received();
    assert_eq!(received.len(), 3);
    assert!(received[1].path.contains("streamGenerateContent"));
    for (i, (sent, turn)) in received.iter().zip(&recording.interactions).enumerate() {
        assert_eq!(
            sent.body["contents"], turn.request.body["contents"],
            "request {i}"
        );
        assert_eq!(sent.body["tools"], json!([{"code_execution": {}}]));
    }
}

/// Anthropic's code run (the recorded `bash_code_execution` turn): the use carries its result
/// block's content as its output.
#[tokio::test]
async fn an_anthropic_code_run_carries_its_result() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/recorded/provider-tools/chat_code_execution_with_anthropic_claude-haiku-4-5_runs_code_server-side_and_returns_the_result_blocks.json",
    );
    let recording = Recording::load(path).unwrap();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server).unwrap());
    chat.with_provider_tool(ProviderTool::CodeExecution);
    let ask = recording.interactions[0].request.body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = chat.ask(ask).await.unwrap().into_message().unwrap();
    let recorded: Value = serde_json::from_str(&recording.interactions[0].response.body).unwrap();
    let blocks = recorded["content"].as_array().unwrap();
    let result = blocks
        .iter()
        .find(|b| b["type"] == "bash_code_execution_tool_result")
        .unwrap();
    assert_eq!(answer.server_tool_uses.len(), 1);
    let run = &answer.server_tool_uses[0];
    assert_eq!(run.name, "bash_code_execution");
    assert_eq!(run.input, blocks[0]["input"]);
    assert_eq!(run.output, result["content"]);
    assert_eq!(
        run.output["stdout"],
        "123456789 * 987654321 = 121932631112635269\n"
    );
}

/// Gemini's `id`s pair a result with its code even when another run comes between them
/// (from the reference: "The server returns the CodeExecutionResult with the matching id").
#[test]
fn gemini_results_find_their_code_by_id() {
    use llm_tools_providers::gemini::{Gemini, GeminiConfig};
    let gemini =
        Gemini::new(GeminiConfig::new("gemini-3-flash-preview").with_api_key("k")).unwrap();
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"executableCode": {"id": "a", "language": "PYTHON", "code": "print(1)"}},
        {"executableCode": {"id": "b", "language": "PYTHON", "code": "print(2)"}},
        {"codeExecutionResult": {"id": "b", "outcome": "OUTCOME_OK", "output": "2\n"}},
        {"codeExecutionResult": {"id": "a", "outcome": "OUTCOME_OK", "output": "1\n"}},
        // A result whose code is not in the answer is still a run.
        {"codeExecutionResult": {"outcome": "OUTCOME_DEADLINE_EXCEEDED"}},
        {"text": "1 and 2."}]}, "finishReason": "STOP"}]});
    let m = gemini
        .parse_response(answer.to_string().as_bytes(), &[])
        .unwrap()
        .message;
    let runs: Vec<(Option<&str>, &Value, &Value)> = m
        .server_tool_uses
        .iter()
        .map(|u| (u.id.as_deref(), &u.input["code"], &u.output["output"]))
        .collect();
    assert_eq!(
        runs,
        [
            (Some("a"), &json!("print(1)"), &json!("1\n")),
            (Some("b"), &json!("print(2)"), &json!("2\n")),
            (None, &Value::Null, &Value::Null),
        ]
    );
    assert_eq!(
        m.server_tool_uses[2].output["outcome"],
        "OUTCOME_DEADLINE_EXCEEDED"
    );
    assert_eq!(m.text(), "1 and 2.");
}
