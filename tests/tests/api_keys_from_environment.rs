//! Each provider's default configuration takes its API key from the environment: OpenAI from
//! `OPENAI_API_KEY`, Anthropic from `ANTHROPIC_API_KEY`, Gemini from `GEMINI_API_KEY` and else
//! `GOOGLE_API_KEY`; with none set, building the provider is a clear error naming the variable.
//!
//! The environment of a running test cannot be changed safely (other tests read it from other
//! threads), so each case runs this test binary again as a child process with the environment it
//! needs, and the child sends one request to a loopback server and checks the key that arrived.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::process::Command;

use llm_tools_core::chat::Chat;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::serving::exchange;
use serde_json::json;

/// Every variable a case may set; the child starts with none of them but those its case sets.
const KEY_VARIABLES: [&str; 4] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// Runs the child test for `provider` with `set` in its environment, expecting the key
/// `expected` in the request (or, with `None`, an error naming `missing` when the provider is built).
fn run_child(provider: &str, set: &[(&str, &str)], expected: Option<&str>, missing: &str) {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.args([
        "child_sends_the_key_from_its_environment",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for var in KEY_VARIABLES.iter().chain(&["ANTHROPIC_BASE_URL"]) {
        child.env_remove(var);
    }
    child.envs(set.iter().copied());
    child.env("LLM_TOOLS_TEST_PROVIDER", provider);
    child.env("LLM_TOOLS_TEST_EXPECTED_KEY", expected.unwrap_or(""));
    child.env("LLM_TOOLS_TEST_MISSING", missing);
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child for {provider} with {set:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child test did not run:\n{stdout}"
    );
}

#[test]
fn openai_reads_openai_api_key() {
    run_child(
        "openai",
        &[("OPENAI_API_KEY", "sk-env")],
        Some("Bearer sk-env"),
        "",
    );
}

#[test]
fn openai_without_a_key_is_an_error_naming_openai_api_key() {
    run_child("openai", &[], None, "OPENAI_API_KEY");
}

#[test]
fn anthropic_reads_anthropic_api_key() {
    run_child(
        "anthropic",
        &[("ANTHROPIC_API_KEY", "sk-ant-env")],
        Some("sk-ant-env"),
        "",
    );
}

#[test]
fn anthropic_without_a_key_is_an_error_naming_anthropic_api_key() {
    run_child("anthropic", &[], None, "ANTHROPIC_API_KEY");
}

#[test]
fn gemini_reads_gemini_api_key_before_google_api_key() {
    run_child(
        "gemini",
        &[
            ("GEMINI_API_KEY", "gemini-env"),
            ("GOOGLE_API_KEY", "google-env"),
        ],
        Some("gemini-env"),
        "",
    );
}

#[test]
fn gemini_falls_back_to_google_api_key() {
    run_child(
        "gemini",
        &[("GOOGLE_API_KEY", "google-env")],
        Some("google-env"),
        "",
    );
}

#[test]
fn gemini_ignores_a_blank_gemini_api_key() {
    run_child(
        "gemini",
        &[("GEMINI_API_KEY", "  "), ("GOOGLE_API_KEY", "google-env")],
        Some("google-env"),
        "",
    );
}

#[test]
fn gemini_without_a_key_is_an_error_naming_both_variables() {
    run_child("gemini", &[], None, "GEMINI_API_KEY (or GOOGLE_API_KEY)");
}

/// The child side: run only by [`run_child`], which sets its environment.
#[tokio::test]
#[ignore = "run by the other tests of this file in a child process with its own environment"]
async fn child_sends_the_key_from_its_environment() {
    let provider = std::env::var("LLM_TOOLS_TEST_PROVIDER").unwrap();
    let expected = std::env::var("LLM_TOOLS_TEST_EXPECTED_KEY").unwrap();
    let missing = std::env::var("LLM_TOOLS_TEST_MISSING").unwrap();
    let (url, header, answer) = match provider.as_str() {
        "openai" => (
            "https://api.openai.com/v1/responses",
            "authorization",
            json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-nano",
                "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hello!", "annotations": []}]}],
                "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}),
        ),
        "anthropic" => (
            "https://api.anthropic.com/v1/messages",
            "x-api-key",
            json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2}}),
        ),
        "gemini" => (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
            "x-goog-api-key",
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello!"}]},
                "finishReason": "STOP"}]}),
        ),
        other => panic!("unknown provider {other}"),
    };
    let server = ReplayServer::with_interactions(vec![exchange(
        url,
        RecordedResponse::json(200, answer.to_string()),
    )])
    .await
    .unwrap();
    let built = match provider.as_str() {
        "openai" => {
            OpenAiResponses::new(OpenAiConfig::openai("gpt-5-nano").with_base_url(server.url()))
                .map(Chat::new)
        }
        "anthropic" => {
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_base_url(server.url()))
                .map(Chat::new)
        }
        _ => Gemini::new(GeminiConfig::new("gemini-2.5-flash").with_base_url(server.url()))
            .map(Chat::new),
    };
    if expected.is_empty() {
        let Err(error) = built else {
            panic!("a provider without a key is an error");
        };
        let text = error.to_string();
        assert!(text.contains(&missing), "{text:?} should name {missing}");
        assert!(server.received().is_empty());
        return;
    }
    let mut chat = built.unwrap();
    let outcome = chat.ask("Hi").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Hello!"));
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].header(header), Some(expected.as_str()));
}
