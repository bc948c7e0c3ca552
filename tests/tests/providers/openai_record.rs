//! Recording a provider's traffic and replaying the file offline: the public record/replay
//! path a user takes to test tool-using code in CI. The "live" side is a loopback server serving
//! real recorded traffic (no test talks to the internet).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use futures::StreamExt;
use llm_tools_core::chat::ChatEvent;
use llm_tools_core::{Chat, Role};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses, canonical_request};
use llm_tools_providers::record::{Recorder, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::{self, Weather};

const QUESTION: &str = "What's the weather in Berlin? (52.5200, 13.4050)";

fn source(name: &str) -> Recording {
    let dir = fixtures::recorded_dir("openai-responses")
        .expect("the recordings in tests/fixtures/recorded");
    Recording::load(dir.join(name)).unwrap()
}

/// Asks the weather question through a chat on `url`; returns the chat and its answer.
async fn weather(
    url: String,
    key: &str,
    recorder: Option<Recorder>,
    streaming: bool,
) -> (Chat, String) {
    let mut config = OpenAiConfig::openai("gpt-5-nano")
        .with_base_url(url)
        .with_api_key(key)
        .with_retry(RetryPolicy::none());
    if let Some(r) = recorder {
        config = config.with_recorder(r);
    }
    let mut chat = Chat::new(OpenAiResponses::new(config).unwrap());
    chat.with_tools(Weather).unwrap();
    let answer = if streaming {
        let mut stream = chat.ask_stream(QUESTION);
        let mut answer = None;
        while let Some(event) = stream.next().await {
            if let ChatEvent::Done(m) = event.unwrap() {
                answer = Some(m.text());
            }
        }
        drop(stream);
        answer.unwrap()
    } else {
        chat.ask(QUESTION).await.unwrap().text().unwrap()
    };
    (chat, answer)
}

#[tokio::test]
async fn a_recorded_conversation_replays_offline_with_the_key_hidden() {
    for (file, streaming) in [
        (
            "chat_function_calling_openai_gpt-5-nano_can_use_tools.json",
            false,
        ),
        // Only its first question (two requests) is asked here.
        (
            "chat_function_calling_openai_gpt-5-nano_can_use_tools_with_multi-turn_streaming_conversations.json",
            true,
        ),
    ] {
        let upstream = ReplayServer::start(source(file)).await.unwrap();
        let recorder = Recorder::new();
        let (_, answer) = weather(
            upstream.url(),
            "sk-live-secret",
            Some(recorder.clone()),
            streaming,
        )
        .await;

        let path =
            std::env::temp_dir().join(format!("llm-tools-record-{}-{file}", std::process::id()));
        recorder
            .save(&path, "openai", "openai-responses", "weather")
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(
            !text.contains("sk-live-secret"),
            "the key must not be recorded"
        );
        let saved = Recording::from_json(&text).unwrap();
        assert_eq!(saved.interactions.len(), 2);
        assert_eq!(
            saved.interactions[0].request.headers["authorization"],
            "Bearer <OPENAI_API_KEY>"
        );
        assert!(saved.interactions[0].request.url.ends_with("/responses"));
        if streaming {
            assert!(
                saved.interactions[0]
                    .response
                    .body
                    .contains("response.completed")
            );
        }

        // Offline: the saved file alone drives the same conversation to the same answer.
        let offline = ReplayServer::start(saved.clone()).await.unwrap();
        let (chat, replayed) = weather(offline.url(), "other-key", None, streaming).await;
        assert_eq!(replayed, answer);
        assert!(offline.is_done());
        assert!(chat.messages().iter().any(|m| m.role == Role::Tool));
        for (got, want) in offline.received().iter().zip(&saved.interactions) {
            assert_eq!(
                canonical_request(&got.body),
                canonical_request(&want.request.body)
            );
        }
    }
}
