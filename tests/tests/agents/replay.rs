//! A parent and a sub-agent on two real protocols, replayed from recorded traffic: the parent
//! on OpenAI Responses calls `weather`, which is a sub-agent on Anthropic Messages that calls
//! its own `weather` tool and answers; the parent answers from the sub-agent's answer.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use llm_tools_core::agent::Agent;
use llm_tools_core::{Role, Tool, tool};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::{recorded_answer_text, recorded_dir};
use llm_tools_tests::recorded_provider;
use serde_json::Value;

fn recording(protocol: &str, name: &str) -> Recording {
    let dir = recorded_dir(protocol).expect("the recordings folder");
    Recording::load(dir.join(name)).expect("the recording loads")
}

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude
/// * `longitude` - Longitude
#[tool]
async fn weather(latitude: String, longitude: String) -> String {
    format!("Current weather at {latitude}, {longitude}: 15°C, wind 10 km/h")
}

/// The parent's `weather` tool: the arguments as the parent's model sent them.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Place {
    /// Latitude
    #[allow(dead_code)]
    latitude: Value,
    /// Longitude
    #[allow(dead_code)]
    longitude: Value,
}

#[tokio::test]
async fn a_parent_on_openai_runs_a_sub_agent_on_anthropic_from_recordings() {
    let parent_rec = recording(
        "openai-responses",
        "chat_function_calling_openai_gpt-5-nano_can_use_tools.json",
    );
    let child_rec = recording(
        "anthropic-messages",
        "chat_function_calling_anthropic_claude-haiku-4-5_can_use_tools.json",
    );
    let parent_server = ReplayServer::start(parent_rec.clone()).await.unwrap();
    let child_server = ReplayServer::start(child_rec.clone()).await.unwrap();
    let parent_provider: Arc<dyn llm_tools_core::Provider> =
        recorded_provider::for_recording(&parent_rec, &parent_server)
            .unwrap()
            .into();
    let child_provider: Arc<dyn llm_tools_core::Provider> =
        recorded_provider::for_recording(&child_rec, &child_server)
            .unwrap()
            .into();

    let forecaster = Agent::with_shared_provider("forecaster", child_provider).with_tools(Weather);
    let sub_agent =
        forecaster.as_tool_with::<Place>("weather", "Gets current weather for a location");
    assert_eq!(sub_agent.spec().name(), "weather");
    let lead = Agent::with_shared_provider("lead", parent_provider).with_tools(sub_agent);
    let mut chat = lead.chat().unwrap();

    let answer = chat
        .ask("What's the weather in Berlin? (52.5200, 13.4050)")
        .await
        .unwrap();
    assert_eq!(answer.text(), Some(recorded_answer_text(&parent_rec, 1)));
    // Every recorded exchange of both was served: two requests each.
    assert!(parent_server.is_done() && child_server.is_done());
    // The parent's tool result is the sub-agent's (Anthropic's) answer.
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .unwrap();
    let recorded: Value = serde_json::from_str(&child_rec.interactions[1].response.body).unwrap();
    assert_eq!(result, recorded["content"][0]["text"].as_str().unwrap());
    assert!(result.contains("15°C"));
    // The sub-agent's first request carried the parent's arguments as its message, and its
    // second the result of its own tool.
    let child_requests = child_server.received();
    assert!(
        child_requests[0].body["messages"][0]["content"]
            .to_string()
            .contains("52.5200")
    );
    assert!(
        child_requests[1]
            .body
            .to_string()
            .contains("15°C, wind 10 km/h")
    );
    // The parent's usage includes the sub-agent's tokens (Anthropic's 633 + 748 input).
    assert!(chat.usage().input_tokens >= 633 + 748);
}
