//! Each provider and preset takes its API key (and what else it reads) from the environment:
//! OpenAI from `OPENAI_API_KEY` (with `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`), xAI, DeepSeek,
//! OpenRouter and Mistral from their own variables, Azure from `AZURE_OPENAI_API_KEY` (with
//! `OPENAI_API_VERSION`), Anthropic from `ANTHROPIC_API_KEY` (host from `ANTHROPIC_BASE_URL`),
//! Gemini from `GEMINI_API_KEY` and else `GOOGLE_API_KEY`; each sends it in its own header, to
//! its own host; with no key, building the provider is a clear error naming the variable.
//!
//! The environment of a running test cannot be changed safely (other tests read it from other
//! threads), so each case runs this test binary again as a child process with the environment it
//! needs, and the child sends one request to a loopback server and checks the key that arrived.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::process::Command;

use llm_tools_core::chat::Chat;
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::serving::exchange;
use serde_json::json;

/// Every variable a case may set; the child starts with none of them but those its case sets.
const VARIABLES: [&str; 14] = [
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENAI_API_VERSION",
    "AZURE_OPENAI_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OLLAMA_API_BASE",
];

/// One run of the child: the provider, its environment, and what it must see.
#[derive(Default)]
struct Case {
    provider: &'static str,
    env: &'static [(&'static str, &'static str)],
    /// The value of the key's header in the request; `None`: building the provider fails.
    sent: Option<&'static str>,
    /// What the error names when there is no key.
    missing: &'static str,
    /// The preset's default base URL (checked when not empty).
    base: &'static str,
    /// The path the request goes to (the preset's own when `None`).
    path: Option<&'static str>,
    /// Other headers the request must carry: `name=value;…`.
    headers: &'static str,
}

/// A test's full name for the child's `--exact` filter: `<module>::<test>`, this file being a
/// module of its area's test binary.
fn full_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// Runs the child test with the case's environment.
fn run_child(case: Case) {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child.arg(full_name("child_sends_the_key_from_its_environment"));
    child.args(["--exact", "--ignored", "--nocapture", "--test-threads=1"]);
    for var in VARIABLES {
        child.env_remove(var);
    }
    child.envs(case.env.iter().copied());
    child.env("LLM_TOOLS_TEST_PROVIDER", case.provider);
    child.env("LLM_TOOLS_TEST_EXPECTED_KEY", case.sent.unwrap_or(""));
    child.env("LLM_TOOLS_TEST_MISSING", case.missing);
    child.env("LLM_TOOLS_TEST_EXPECTED_BASE", case.base);
    child.env("LLM_TOOLS_TEST_EXPECTED_PATH", case.path.unwrap_or(""));
    child.env("LLM_TOOLS_TEST_EXPECTED_HEADERS", case.headers);
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child for {} with {:?} failed:\n{stdout}\n{}",
        case.provider,
        case.env,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child test did not run:\n{stdout}"
    );
}

#[test]
fn openai_reads_its_key_organization_and_project() {
    run_child(Case {
        provider: "openai",
        env: &[
            ("OPENAI_API_KEY", "sk-env"),
            ("OPENAI_ORG_ID", "org-1"),
            ("OPENAI_PROJECT_ID", "proj-1"),
        ],
        sent: Some("Bearer sk-env"),
        base: "https://api.openai.com/v1",
        headers: "openai-organization=org-1;openai-project=proj-1",
        ..Case::default()
    });
}

#[test]
fn openai_without_a_key_is_an_error_naming_openai_api_key() {
    run_child(Case {
        provider: "openai",
        missing: "OPENAI_API_KEY",
        ..Case::default()
    });
}

#[test]
fn each_compatible_preset_reads_its_own_key_and_has_its_own_host() {
    for (provider, var, base) in [
        ("xai", "XAI_API_KEY", "https://api.x.ai/v1"),
        ("deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com"),
        (
            "openrouter",
            "OPENROUTER_API_KEY",
            "https://openrouter.ai/api/v1",
        ),
        ("mistral", "MISTRAL_API_KEY", "https://api.mistral.ai/v1"),
    ] {
        let env: &'static [(&'static str, &'static str)] =
            Box::leak(vec![(var, "preset-key")].into_boxed_slice());
        run_child(Case {
            provider,
            env,
            sent: Some("Bearer preset-key"),
            base,
            ..Case::default()
        });
        run_child(Case {
            provider,
            missing: var,
            ..Case::default()
        });
    }
}

#[test]
fn azure_sends_its_key_as_api_key_and_the_api_version_in_the_query() {
    run_child(Case {
        provider: "azure",
        env: &[("AZURE_OPENAI_API_KEY", "azure-key")],
        sent: Some("azure-key"),
        path: Some("/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"),
        ..Case::default()
    });
    run_child(Case {
        provider: "azure",
        env: &[
            ("AZURE_OPENAI_API_KEY", "azure-key"),
            ("OPENAI_API_VERSION", "2025-04-01-preview"),
        ],
        sent: Some("azure-key"),
        path: Some(
            "/openai/deployments/my-deployment/chat/completions?api-version=2025-04-01-preview",
        ),
        ..Case::default()
    });
}

#[test]
fn anthropic_reads_anthropic_api_key() {
    run_child(Case {
        provider: "anthropic",
        env: &[("ANTHROPIC_API_KEY", "sk-ant-env")],
        sent: Some("sk-ant-env"),
        base: "https://api.anthropic.com/v1",
        headers: "anthropic-version=2023-06-01",
        ..Case::default()
    });
}

#[test]
fn anthropic_reads_its_host_from_anthropic_base_url() {
    run_child(Case {
        provider: "anthropic",
        env: &[
            ("ANTHROPIC_API_KEY", "sk-ant-env"),
            ("ANTHROPIC_BASE_URL", "https://gateway.example/"),
        ],
        sent: Some("sk-ant-env"),
        base: "https://gateway.example/v1",
        ..Case::default()
    });
}

#[test]
fn anthropic_without_a_key_is_an_error_naming_anthropic_api_key() {
    run_child(Case {
        provider: "anthropic",
        missing: "ANTHROPIC_API_KEY",
        ..Case::default()
    });
}

#[test]
fn gemini_reads_gemini_api_key_before_google_api_key() {
    run_child(Case {
        provider: "gemini",
        env: &[
            ("GEMINI_API_KEY", "gemini-env"),
            ("GOOGLE_API_KEY", "google-env"),
        ],
        sent: Some("gemini-env"),
        base: "https://generativelanguage.googleapis.com/v1beta",
        ..Case::default()
    });
}

#[test]
fn gemini_falls_back_to_google_api_key() {
    run_child(Case {
        provider: "gemini",
        env: &[("GOOGLE_API_KEY", "google-env")],
        sent: Some("google-env"),
        ..Case::default()
    });
}

#[test]
fn gemini_ignores_a_blank_gemini_api_key() {
    run_child(Case {
        provider: "gemini",
        env: &[("GEMINI_API_KEY", "  "), ("GOOGLE_API_KEY", "google-env")],
        sent: Some("google-env"),
        ..Case::default()
    });
}

#[test]
fn gemini_without_a_key_is_an_error_naming_both_variables() {
    run_child(Case {
        provider: "gemini",
        missing: "GEMINI_API_KEY (or GOOGLE_API_KEY)",
        ..Case::default()
    });
}

/// The child side: run only by [`run_child`], which sets its environment.
#[tokio::test]
#[ignore = "run by the other tests of this file in a child process with its own environment"]
async fn child_sends_the_key_from_its_environment() {
    let provider = std::env::var("LLM_TOOLS_TEST_PROVIDER").unwrap();
    let expected = std::env::var("LLM_TOOLS_TEST_EXPECTED_KEY").unwrap();
    let missing = std::env::var("LLM_TOOLS_TEST_MISSING").unwrap();
    let chat_completion = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
    let responses = json!({"id": "resp_1", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hello!", "annotations": []}]}],
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}});
    let answer = match provider.as_str() {
        "openai" | "xai" => responses,
        "anthropic" => json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2}}),
        "gemini" => {
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello!"}]},
            "finishReason": "STOP"}]})
        }
        _ => chat_completion,
    };
    let server = ReplayServer::with_interactions(vec![exchange(
        "https://provider.example/",
        RecordedResponse::json(200, answer.to_string()),
    )])
    .await
    .unwrap();
    let url = server.url();
    // Each preset: its default base URL, checked before the test points it at the server, the
    // header its key travels in, and the path its request goes to.
    let (default_base, header, path, built) = match provider.as_str() {
        "openai" => {
            let config = OpenAiConfig::openai("gpt-5-nano");
            let base = config.base_url().to_owned();
            let chat = OpenAiResponses::new(config.with_base_url(&url)).map(Chat::new);
            (base, "authorization", "/responses", chat)
        }
        "xai" => {
            let config = OpenAiConfig::xai("grok-4");
            let base = config.base_url().to_owned();
            let chat = OpenAiResponses::new(config.with_base_url(&url)).map(Chat::new);
            (base, "authorization", "/responses", chat)
        }
        "deepseek" | "openrouter" | "mistral" => {
            let config = match provider.as_str() {
                "deepseek" => OpenAiConfig::deepseek("deepseek-chat"),
                "openrouter" => OpenAiConfig::openrouter("openai/gpt-5-nano"),
                _ => OpenAiConfig::mistral("mistral-small-latest"),
            };
            let base = config.base_url().to_owned();
            let chat = OpenAiChat::new(config.with_base_url(&url)).map(Chat::new);
            (base, "authorization", "/chat/completions", chat)
        }
        "azure" => {
            // The endpoint is the server itself: the deployment path and the API version come
            // from the preset.
            let config = OpenAiConfig::azure(&url, "my-deployment");
            let base = config.base_url().to_owned();
            let chat = OpenAiChat::new(config).map(Chat::new);
            (
                base,
                "api-key",
                "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21",
                chat,
            )
        }
        "anthropic" => {
            let config = AnthropicConfig::new("claude-haiku-4-5");
            let base = config.base_url().to_owned();
            let chat = Anthropic::new(config.with_base_url(&url)).map(Chat::new);
            (base, "x-api-key", "/messages", chat)
        }
        "gemini" => {
            let config = GeminiConfig::new("gemini-2.5-flash");
            let base = config.base_url().to_owned();
            let chat = Gemini::new(config.with_base_url(&url)).map(Chat::new);
            (
                base,
                "x-goog-api-key",
                "/models/gemini-2.5-flash:generateContent",
                chat,
            )
        }
        other => panic!("unknown provider {other}"),
    };
    let expected_base = std::env::var("LLM_TOOLS_TEST_EXPECTED_BASE").unwrap();
    if !expected_base.is_empty() {
        assert_eq!(default_base, expected_base);
    }
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
    let expected_path = std::env::var("LLM_TOOLS_TEST_EXPECTED_PATH").unwrap();
    if expected_path.is_empty() {
        assert_eq!(received[0].path, path);
    } else {
        assert_eq!(received[0].path, expected_path);
    }
    for pair in std::env::var("LLM_TOOLS_TEST_EXPECTED_HEADERS")
        .unwrap()
        .split(';')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap();
        assert_eq!(received[0].header(name), Some(value), "header {name}");
    }
}
