//! The floor: the scenario's conversations written by hand with reqwest and serde_json, no
//! framework. Same HTTP client settings as the providers (timeouts, one pooled connection),
//! same messages, same tool bodies; tool definitions written once, typed request and answer
//! structs, arguments decoded straight into a struct.
//!
//! ```sh
//! e2e-floor --url http://127.0.0.1:PORT [--conversations 200] [--warmup 20] [--stream]
//! ```

use std::borrow::Cow;
use std::process::ExitCode;
use std::time::Duration;

use e2e_bench::client::{self, Client};
use e2e_bench::scenario::{self, Units};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

fn main() -> ExitCode {
    client::main(Floor::new)
}

struct Floor {
    http: reqwest::Client,
    url: String,
    tools: Box<RawValue>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Message {
    User {
        content: &'static str,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<CallOut>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Serialize)]
struct CallOut {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut,
}

#[derive(Serialize)]
struct FunctionOut {
    name: String,
    arguments: String,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'static str,
    messages: &'a [Message],
    tools: &'a RawValue,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: AnswerIn<'a>,
}

#[derive(Deserialize)]
struct AnswerIn<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Vec<CallIn<'a>>,
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    function: FunctionIn<'a>,
}

#[derive(Deserialize)]
struct FunctionIn<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<ChunkChoice<'a>>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Vec<CallDelta<'a>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    index: usize,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Args {
    city: String,
    days: u32,
    units: Units,
}

/// The model's answer: text, or tool calls (id, name, arguments).
struct Answer {
    text: String,
    calls: Vec<(String, String, String)>,
}

impl Floor {
    fn new(args: &e2e_bench::cli::ClientArgs) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(600))
            .build()
            .map_err(|e| e.to_string())?;
        let tools = serde_json::value::to_raw_value(&scenario::tool_definitions())
            .map_err(|e| e.to_string())?;
        Ok(Self {
            http,
            url: format!("{}/v1/chat/completions", args.url),
            tools,
        })
    }

    async fn request(&self, messages: &[Message], stream: bool) -> Result<Answer, String> {
        let body = serde_json::to_vec(&ChatRequest {
            model: scenario::MODEL,
            messages,
            tools: &self.tools,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        })
        .map_err(|e| e.to_string())?;
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body);
        if !stream {
            request = request.timeout(Duration::from_secs(600));
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(format!("HTTP {status}: {text}"));
        }
        if stream {
            read_stream(response).await
        } else {
            let bytes = response.bytes().await.map_err(|e| e.to_string())?;
            let completion: Completion<'_> =
                serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
            let message = completion
                .choices
                .into_iter()
                .next()
                .ok_or("no choices")?
                .message;
            Ok(Answer {
                text: message.content.map(Cow::into_owned).unwrap_or_default(),
                calls: message
                    .tool_calls
                    .into_iter()
                    .map(|c| {
                        (
                            c.id.into_owned(),
                            c.function.name.into_owned(),
                            c.function.arguments.into_owned(),
                        )
                    })
                    .collect(),
            })
        }
    }
}

/// Reads an SSE answer: `data:` lines of chunks until `[DONE]`, tool calls reassembled by index.
async fn read_stream(response: reqwest::Response) -> Result<Answer, String> {
    let mut answer = Answer {
        text: String::new(),
        calls: Vec::new(),
    };
    let mut buffer: Vec<u8> = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(bytes) = body.next().await {
        buffer.extend_from_slice(&bytes.map_err(|e| e.to_string())?);
        let mut consumed = 0;
        while let Some(end) = find_event_end(&buffer[consumed..]) {
            let event = &buffer[consumed..consumed + end];
            consumed += end + 2;
            let Some(data) = event.strip_prefix(b"data: ") else {
                continue;
            };
            if data == b"[DONE]" {
                return Ok(answer);
            }
            let chunk: Chunk<'_> = serde_json::from_slice(data).map_err(|e| e.to_string())?;
            for choice in chunk.choices {
                let Some(delta) = choice.delta else { continue };
                if let Some(text) = delta.content {
                    answer.text.push_str(&text);
                }
                for call in delta.tool_calls {
                    if call.index == answer.calls.len() {
                        answer
                            .calls
                            .push((String::new(), String::new(), String::new()));
                    }
                    let slot = answer
                        .calls
                        .get_mut(call.index)
                        .ok_or("a tool call index out of order")?;
                    if let Some(id) = call.id {
                        slot.0.push_str(&id);
                    }
                    if let Some(function) = call.function {
                        if let Some(name) = function.name {
                            slot.1.push_str(&name);
                        }
                        if let Some(arguments) = function.arguments {
                            slot.2.push_str(&arguments);
                        }
                    }
                }
            }
        }
        buffer.drain(..consumed);
    }
    Err("the stream ended before [DONE]".into())
}

fn find_event_end(buffer: &[u8]) -> Option<usize> {
    buffer.windows(2).position(|w| w == b"\n\n")
}

async fn run_tool(name: &str, arguments: &str) -> Result<String, String> {
    let args: Args = serde_json::from_str(arguments).map_err(|e| e.to_string())?;
    let known = name
        .strip_prefix("tool_")
        .and_then(|n| n.parse::<usize>().ok())
        .is_some_and(|n| n < scenario::TOOLS);
    if !known {
        return Err(format!("no tool `{name}`"));
    }
    Ok(scenario::forecast(name, &args.city, args.days, args.units).await)
}

impl Client for Floor {
    const NAME: &'static str = "floor";

    async fn conversation(&mut self, stream: bool) -> Result<String, String> {
        let mut messages = vec![Message::User {
            content: scenario::PROMPT,
        }];
        for _ in 0..=scenario::ROUNDS + 1 {
            let answer = self.request(&messages, stream).await?;
            if answer.calls.is_empty() {
                return Ok(answer.text);
            }
            let mut results = Vec::with_capacity(answer.calls.len());
            for (id, name, arguments) in &answer.calls {
                let content = run_tool(name, arguments).await?;
                results.push(Message::Tool {
                    tool_call_id: id.clone(),
                    content,
                });
            }
            messages.push(Message::Assistant {
                content: (!answer.text.is_empty()).then_some(answer.text),
                tool_calls: answer
                    .calls
                    .into_iter()
                    .map(|(id, name, arguments)| CallOut {
                        id,
                        kind: "function",
                        function: FunctionOut { name, arguments },
                    })
                    .collect(),
            });
            messages.extend(results);
        }
        Err("the model never gave a final answer".into())
    }
}
