//! Every recording in `tests/fixtures/recorded/bedrock-converse` replayed from a loopback HTTP
//! server through the real Bedrock provider (SigV4-signed, event-stream framed) and the real
//! chat loop, with the recordings' tools: each request we send means what the recorded one
//! meant (messages, tool uses and results with their attachments, tool specs, tool choice),
//! every answer's text and tool calls come out as recorded, and every request carries a SigV4
//! signature for the configured key, region and service. Streaming recordings run through
//! `ask_stream`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt;
use llm_tools_core::{Attachment, Tool, ToolChoice, tool};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig, canonical_request};
use llm_tools_providers::framing::{self, Framing};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::chat_replay::{self, Protocol, Scenario};
use llm_tools_tests::fixtures;
use serde_json::Value;

/// Returns the file a recording's tool returned: its text and one attachment.
struct Fetch {
    text: String,
    attachment: Attachment,
}

/// Fetches the requested image
struct ImageFetch(Fetch);

#[tool]
impl ImageFetch {
    /// Fetches the requested image
    async fn execute(&self) -> (String, Vec<Attachment>) {
        (self.0.text.clone(), vec![self.0.attachment.clone()])
    }
}

/// Fetches the requested PDF report
struct PdfFetch(Fetch);

#[tool]
impl PdfFetch {
    /// Fetches the requested PDF report
    async fn execute(&self) -> (String, Vec<Attachment>) {
        (self.0.text.clone(), vec![self.0.attachment.clone()])
    }
}

/// What the recording's tool returned, read from the last request's tool result.
fn fetched(recording: &Recording) -> Option<Fetch> {
    let last = &recording.interactions.last()?.request.body;
    let result = last["messages"]
        .as_array()?
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find_map(|b| b.get("toolResult"))?;
    let content = result["content"].as_array()?;
    let text = content.iter().find_map(|c| c["text"].as_str())?.to_owned();
    let media = content.iter().find(|c| c.get("text").is_none())?;
    let (kind, block) = media.as_object()?.iter().next()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["source"]["bytes"].as_str()?)
        .ok()?;
    let format = block["format"].as_str()?;
    let attachment = match kind.as_str() {
        "image" => Attachment::bytes(format!("image/{format}"), bytes),
        _ => Attachment::bytes("application/pdf", bytes)
            .with_filename(format!("{}.pdf", block["name"].as_str()?)),
    };
    Some(Fetch { text, attachment })
}

fn tools_for(recording: &Recording, names: &[String]) -> Vec<Arc<dyn Tool>> {
    let mut tools = fixtures::tools_named(names);
    for name in names {
        match name.as_str() {
            "image_fetch" => tools.push(Arc::new(ImageFetch(fetched(recording).unwrap()))),
            "pdf_fetch" => tools.push(Arc::new(PdfFetch(fetched(recording).unwrap()))),
            _ => {}
        }
    }
    tools
}

/// The JSON events of a recorded answer: one body, or the payloads of an event stream.
fn events(response: &RecordedResponse) -> Vec<(String, Value)> {
    let body = response.body_bytes();
    if body.first() == Some(&b'{') {
        return vec![(String::new(), serde_json::from_slice(&body).unwrap())];
    }
    let frames = framing::frames(
        Framing::AwsEventStream,
        "recording",
        futures::stream::iter([Ok(Bytes::from(body))]),
    );
    futures::executor::block_on(frames.collect::<Vec<_>>())
        .into_iter()
        .map(|f| {
            let f = f.unwrap();
            (
                f.event.unwrap_or_default().into_owned(),
                serde_json::from_str(&f.data).unwrap(),
            )
        })
        .collect()
}

/// The text and tool calls of a recorded answer.
fn answer(response: &RecordedResponse) -> (String, Vec<(String, Value)>) {
    let mut text = String::new();
    let mut calls = Vec::new();
    // Streamed tool inputs by block index: (name, input fragments).
    let mut open: Vec<(u64, String, String)> = Vec::new();
    for (event, v) in events(response) {
        match event.as_str() {
            "" => {
                for block in v["output"]["message"]["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    if let Some(t) = block["text"].as_str() {
                        text.push_str(t);
                    } else if let Some(u) = block.get("toolUse") {
                        calls.push((u["name"].as_str().unwrap().to_owned(), u["input"].clone()));
                    }
                }
            }
            "contentBlockStart" => {
                if let Some(u) = v["start"].get("toolUse") {
                    let index = v["contentBlockIndex"].as_u64().unwrap();
                    open.push((index, u["name"].as_str().unwrap().to_owned(), String::new()));
                }
            }
            "contentBlockDelta" => {
                let index = v["contentBlockIndex"].as_u64().unwrap();
                if let Some(t) = v["delta"]["text"].as_str() {
                    text.push_str(t);
                } else if let Some(f) = v["delta"]["toolUse"]["input"].as_str()
                    && let Some(call) = open.iter_mut().find(|(i, ..)| *i == index)
                {
                    call.2.push_str(f);
                }
            }
            "contentBlockStop" => {
                let index = v["contentBlockIndex"].as_u64().unwrap();
                if let Some(at) = open.iter().position(|(i, ..)| *i == index) {
                    let (_, name, input) = open.remove(at);
                    let input = if input.is_empty() {
                        serde_json::json!({})
                    } else {
                        serde_json::from_str(&input).unwrap()
                    };
                    calls.push((name, input));
                }
            }
            _ => {}
        }
    }
    (text, calls)
}

/// The input and output tokens a recorded answer reports (the stream's `metadata`).
fn recorded_usage(response: &RecordedResponse) -> (u64, u64) {
    events(response)
        .into_iter()
        .find_map(|(_, v)| {
            let u = v.get("usage")?;
            Some((u["inputTokens"].as_u64()?, u["outputTokens"].as_u64()?))
        })
        .unwrap_or_default()
}

const BEDROCK: Protocol = Protocol {
    canonical: canonical_request,
    answer,
};

fn scenario(recording: &Recording) -> Scenario {
    let first = &recording.interactions[0].request;
    let last = &recording.interactions.last().unwrap().request.body;
    let canonical_first = canonical_request(&first.body);
    let names: Vec<String> = canonical_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let tools = tools_for(recording, &names);
    assert_eq!(tools.len(), names.len(), "the recording's tools: {names:?}");
    let choice = match &canonical_first["tool_choice"] {
        Value::String(s) if s == "required" => ToolChoice::Required,
        Value::Object(o) => ToolChoice::tool(o["tool"].as_str().unwrap()),
        _ => ToolChoice::Auto,
    };
    Scenario {
        instructions: chat_replay::instructions(&canonical_first),
        asks: chat_replay::asks(&canonical_request(last)),
        tools,
        choice,
        calls: None,
        stream: first.url.ends_with("/converse-stream"),
    }
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let url = &recording.interactions[0].request.url;
    let model = url
        .split("/model/")
        .nth(1)
        .and_then(|m| m.rsplit_once('/'))
        .map(|(model, _)| model)
        .unwrap();
    let provider = Bedrock::new(
        BedrockConfig::new(model)
            .with_region("eu-west-3")
            .with_endpoint(server.url())
            .with_credentials(AwsCredentials::new("AKIDTEST", "test-secret"))
            .with_retry(RetryPolicy::none()),
    )
    .map_err(|e| e.to_string())?;
    // A recording of the same question asked in separate chats (streamed, then not) is run
    // as that many chats, whose answers must report the same usage as recorded.
    let independent = recording.interactions.len() > 1
        && recording
            .interactions
            .iter()
            .all(|i| i.request.body["messages"].as_array().map(Vec::len) == Some(1));
    let mut streamed = Vec::new();
    let transcript = if independent {
        let mut transcript = Vec::new();
        for interaction in &recording.interactions {
            let mut one = recording.clone();
            one.interactions = vec![interaction.clone()];
            let scenario = scenario(&one);
            streamed.push(scenario.stream);
            transcript.extend(chat_replay::run(provider.clone(), &scenario, &server).await?);
        }
        transcript
    } else {
        let scenario = scenario(&recording);
        streamed.push(scenario.stream);
        chat_replay::run(provider, &scenario, &server).await?
    };
    chat_replay::check(&BEDROCK, &recording, &server, &transcript)?;
    if independent {
        let usages: Vec<_> = transcript
            .iter()
            .filter(|m| m.role == llm_tools_core::Role::Assistant)
            .map(|m| m.usage)
            .collect();
        for (usage, interaction) in usages.iter().zip(&recording.interactions) {
            let recorded = recorded_usage(&interaction.response);
            if usage.map(|u| (u.input_tokens, u.output_tokens)) != Some(recorded) {
                return Err(format!("usage {usage:?}, recorded {recorded:?}"));
            }
        }
    }
    for (i, r) in server.received().into_iter().enumerate() {
        let stream = streamed
            .get(i)
            .or(streamed.first())
            .copied()
            .unwrap_or(false);
        let auth = r.header("authorization").unwrap_or_default();
        if !auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
            || !auth.contains("/eu-west-3/bedrock/aws4_request")
            || r.header("x-amz-date").is_none()
        {
            return Err(format!("request not signed: {:?}", r.headers));
        }
        let accept = r.header("accept").unwrap_or_default();
        let expected = if stream {
            "application/vnd.amazon.eventstream"
        } else {
            "application/json"
        };
        if accept != expected {
            return Err(format!("accept {accept}, expected {expected}"));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bedrock_recording_replays_through_the_chat_loop() {
    chat_replay::replay_every("bedrock-converse", 13, async |path| replay(path).await).await;
}
