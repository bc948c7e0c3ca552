//! What the OpenAI providers write and read, without a network: namespaces, tool choice,
//! strict schemas, definitions serialized once, Mistral's ids, provider data, refusals,
//! and the portability check.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::{Arc, OnceLock};

use llm_tools_core::{
    BoxFuture, Message, Namespace, ProviderData, RawArgs, Request, Tool, ToolCall, ToolChoice,
    ToolContext, ToolOutcome, ToolSpec,
};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::schema::{Dialect, FindingKind, check_portability};
use llm_tools_tests::fixtures::{AnyOfParams, Weather};
use serde_json::{Value, json};

/// A hand-written tool with a namespace chosen at run time.
struct Ns {
    spec: ToolSpec,
}

impl Ns {
    fn tool(ns: Namespace, name: &'static str) -> Arc<dyn Tool> {
        Arc::new(Self {
            spec: ToolSpec::new(name, "Finds things").with_namespace(Some(ns)),
        })
    }
}

impl Tool for Ns {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::error("unused") })
    }
}

const CRM: Namespace = Namespace::new("crm").description("Customer records");

fn responses() -> OpenAiResponses {
    OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap()
}

fn chat(config: OpenAiConfig) -> OpenAiChat {
    OpenAiChat::new(config.with_api_key("k")).unwrap()
}

fn body(bytes: Vec<u8>) -> Value {
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn responses_sends_namespaces_as_groups_and_strict_explicitly() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Weather),
        Ns::tool(CRM, "lookup"),
        Ns::tool(CRM, "orders"),
    ];
    let messages = [Message::user("hi")];
    let b = body(
        responses()
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    );
    let sent = b["tools"].as_array().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0]["name"], "weather");
    assert_eq!(sent[0]["strict"], true);
    assert_eq!(sent[0]["parameters"]["additionalProperties"], false);
    assert_eq!(sent[1]["type"], "namespace");
    assert_eq!(sent[1]["name"], "crm");
    assert_eq!(sent[1]["description"], "Customer records");
    let inner: Vec<&str> = sent[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(inner, ["lookup", "orders"]);
    assert_eq!(b["store"], false);
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));

    let non_strict = OpenAiResponses::new(
        OpenAiConfig::openai("m")
            .with_api_key("k")
            .with_strict(false),
    )
    .unwrap();
    let b = body(
        non_strict
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    );
    assert_eq!(b["tools"][0]["strict"], false);
}

#[test]
fn responses_refuses_what_it_cannot_send_before_any_request() {
    let messages = [Message::user("hi")];
    let undescribed: Vec<Arc<dyn Tool>> = vec![Ns::tool(Namespace::new("crm"), "lookup")];
    let e = responses()
        .request_body(&Request::new(&messages, &undescribed), false)
        .unwrap_err();
    assert!(e.message().contains("has no description"), "{e}");

    let reserved: Vec<Arc<dyn Tool>> = vec![Ns::tool(
        Namespace::new("computer").description("x"),
        "click",
    )];
    let e = responses()
        .request_body(&Request::new(&messages, &reserved), false)
        .unwrap_err();
    assert!(e.message().contains("reserved"), "{e}");

    let tools: Vec<Arc<dyn Tool>> = vec![Ns::tool(CRM, "lookup")];
    let choice = ToolChoice::tool("crm_lookup");
    let e = responses()
        .request_body(&Request::new(&messages, &tools).with_choice(&choice), false)
        .unwrap_err();
    assert!(e.message().contains("ToolChoice::Required"), "{e}");
}

#[test]
fn chat_completions_joins_namespaced_names_and_maps_calls_back() {
    let tools: Vec<Arc<dyn Tool>> = vec![Ns::tool(CRM, "lookup")];
    let messages = [Message::user("hi")];
    let choice = ToolChoice::tool("crm_lookup");
    let provider = chat(OpenAiConfig::openai("m"));
    let b = body(
        provider
            .request_body(&Request::new(&messages, &tools).with_choice(&choice), false)
            .unwrap(),
    );
    assert_eq!(b["tools"][0]["function"]["name"], "crm_lookup");
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "crm_lookup"}})
    );

    let answer = json!({"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "crm_lookup", "arguments": ""}}]}}]});
    let r = provider
        .parse_response(answer.to_string().as_bytes(), &tools)
        .unwrap();
    let call = &r.message.tool_calls[0];
    assert_eq!(
        (call.name.as_str(), call.namespace.as_deref()),
        ("lookup", Some("crm"))
    );
    assert_eq!(call.arguments, "{}", "empty arguments mean no arguments");
    assert_eq!(
        r.finish_reason.as_deref(),
        Some("stop"),
        "calls are found even when the finish reason says stop"
    );
}

#[test]
fn choice_and_parallel_switch_per_endpoint() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let messages = [Message::user("hi")];
    let required = ToolChoice::Required;
    let request = Request::new(&messages, &tools)
        .with_choice(&required)
        .with_parallel_tool_calls(Some(false));
    let openai = body(
        chat(OpenAiConfig::openai("m"))
            .request_body(&request, true)
            .unwrap(),
    );
    assert_eq!(openai["tool_choice"], "required");
    assert_eq!(openai["parallel_tool_calls"], false);
    assert_eq!(openai["stream_options"], json!({"include_usage": true}));
    let mistral = body(
        chat(OpenAiConfig::mistral("m"))
            .request_body(&request, false)
            .unwrap(),
    );
    // One tool: Mistral gets it by name (its `any` is checked with two tools below).
    assert_eq!(
        mistral["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
    assert!(
        mistral["tools"][0]["function"].get("strict").is_none(),
        "Mistral gets non-strict tools"
    );
    let none = ToolChoice::None;
    let r = body(
        responses()
            .request_body(&Request::new(&messages, &tools).with_choice(&none), false)
            .unwrap(),
    );
    assert_eq!(r["tool_choice"], "none");
    let auto = body(
        responses()
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    );
    assert!(auto.get("tool_choice").is_none() && auto.get("parallel_tool_calls").is_none());
}

#[test]
fn mistral_gets_nine_character_ids_for_history_from_other_providers() {
    let messages = [
        Message::user("hi"),
        Message::assistant_with_calls("", vec![ToolCall::new("call_0fypS1hVX", "weather", "{}")]),
        Message::tool_result("call_0fypS1hVX", "15°C", false),
    ];
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let b = body(
        chat(OpenAiConfig::mistral("m"))
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    );
    let id = b["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(id.len(), 9);
    assert!(id.bytes().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(b["messages"][2]["tool_call_id"], id);
    let openai = body(
        chat(OpenAiConfig::openai("m"))
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    );
    assert_eq!(
        openai["messages"][1]["tool_calls"][0]["id"],
        "call_0fypS1hVX"
    );
}

#[test]
fn tool_definitions_are_serialized_once_and_shared_by_requests() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AnyOfParams)];
    let messages = [Message::user("hi")];
    let provider = responses();
    let first = provider
        .request_body(&Request::new(&messages, &tools), false)
        .unwrap();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    // The cache is filled: building again does not call the builder.
    let cached = tools[0]
        .spec()
        .cached_definition("openai-responses/strict", |_| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            serde_json::value::to_raw_value(&0)
        })
        .unwrap();
    assert_eq!(calls.into_inner(), 0);
    let b = body(first);
    assert_eq!(
        serde_json::from_str::<Value>(cached.get()).unwrap(),
        b["tools"][0]
    );
    let status = &b["tools"][0]["parameters"]["properties"]["status"];
    assert_eq!(
        status["type"],
        json!(["string", "null"]),
        "optional becomes nullable in strict mode"
    );
    assert_eq!(
        b["tools"][0]["parameters"]["required"],
        json!(["task", "status"])
    );
}

/// Chat Completions keeps the last request's tool list: every request still sends its own
/// tools, as the list changes, shrinks and grows back, and as a tool is replaced by another of
/// the same name.
#[test]
fn each_request_sends_its_own_tools_while_the_last_list_is_kept() {
    let provider = chat(OpenAiConfig::openai("m"));
    let messages = [Message::user("hi")];
    let names = |tools: &[Arc<dyn Tool>]| -> Vec<(String, String)> {
        let b = body(
            provider
                .request_body(&Request::new(&messages, tools), false)
                .unwrap(),
        );
        b["tools"]
            .as_array()
            .map(|sent| {
                sent.iter()
                    .map(|t| {
                        let f = &t["function"];
                        (
                            f["name"].as_str().unwrap().to_owned(),
                            f["description"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let weather: Arc<dyn Tool> = Arc::new(Weather);
    let lookup = Ns::tool(CRM, "lookup");
    let both = vec![Arc::clone(&weather), Arc::clone(&lookup)];
    let first = names(&both);
    assert_eq!(first.len(), 2);
    assert_eq!(names(&both), first, "the same list again");
    assert_eq!(names(&both[..1]), first[..1], "a shorter list");
    let reversed = vec![Arc::clone(&lookup), Arc::clone(&weather)];
    assert_eq!(names(&reversed), [first[1].clone(), first[0].clone()]);
    assert_eq!(names(&both), first, "the first list back");
    assert!(names(&[]).is_empty(), "no tools, no list");
    // Another tool of the same name in the same place: its own description goes out.
    let other: Arc<dyn Tool> = Arc::new(Ns {
        spec: ToolSpec::new("lookup", "Looks things up elsewhere").with_namespace(Some(CRM)),
    });
    let replaced = names(&[Arc::clone(&weather), other]);
    assert_eq!(
        replaced[1],
        (
            "crm_lookup".to_owned(),
            "Looks things up elsewhere".to_owned()
        )
    );
}

#[test]
fn provider_data_goes_back_only_to_its_protocol_and_refusals_are_read() {
    let mut reply = Message::assistant("ok");
    reply.provider_data = Some(ProviderData::new(
        "openai-responses",
        json!({"output": [{"type": "reasoning", "summary": [], "encrypted_content": "enc"}, {"type": "message"}]}),
    ));
    let messages = [Message::user("hi"), reply];
    let b = body(
        responses()
            .request_body(&Request::new(&messages, &[]), false)
            .unwrap(),
    );
    assert_eq!(
        b["input"][1],
        json!({"type": "reasoning", "summary": [], "encrypted_content": "enc"})
    );
    assert_eq!(b["input"][2]["role"], "assistant");
    let c = body(
        chat(OpenAiConfig::openai("m"))
            .request_body(&Request::new(&messages, &[]), false)
            .unwrap(),
    );
    assert_eq!(
        c["messages"][1],
        json!({"role": "assistant", "content": "ok"})
    );

    let refused = json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}], "status": "completed"});
    let r = responses()
        .parse_response(refused.to_string().as_bytes(), &[])
        .unwrap();
    assert_eq!(
        r.message.refusal.as_deref(),
        Some("I can't help with that.")
    );
}

struct Map;
impl Tool for Map {
    fn spec(&self) -> &ToolSpec {
        static SPEC: OnceLock<ToolSpec> = OnceLock::new();
        SPEC.get_or_init(|| {
            ToolSpec::new("tag", "Tags things").with_parameters(json!({
                "type": "object",
                "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "name": {"type": "string", "minLength": 2}
                },
                "required": ["labels", "name"]
            }))
        })
    }
    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::error("unused") })
    }
}

/// The OpenAI dialects (the other providers' dialects have their own tests).
const OPENAI: &[Dialect] = &[Dialect::OpenAiResponses, Dialect::OpenAiChat];

#[test]
fn portability_report_names_tools_that_cannot_be_strict() {
    let fine: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(AnyOfParams)];
    assert!(check_portability(&fine, OPENAI).is_clean());

    let tools: Vec<Arc<dyn Tool>> =
        vec![Arc::new(Map), Ns::tool(Namespace::new("browser"), "open")];
    let report = check_portability(&tools, OPENAI);
    assert!(!report.is_portable());
    assert_eq!(report.not_strict(Dialect::OpenAiResponses), ["tag"]);
    let tag: Vec<_> = report
        .for_tool("tag")
        .filter(|f| f.dialect == Dialect::OpenAiChat)
        .collect();
    assert!(
        tag.iter()
            .any(|f| f.kind == FindingKind::NotStrict && f.path == "/properties/labels")
    );
    let rejected: Vec<_> = report
        .for_tool("browser_open")
        .filter(|f| f.kind == FindingKind::Rejected)
        .collect();
    assert!(
        rejected
            .iter()
            .all(|f| f.dialect == Dialect::OpenAiResponses)
    );
    assert_eq!(rejected.len(), 2, "{report}");
}

fn sse(chunks: &[Value]) -> Vec<Result<bytes::Bytes, llm_tools_core::ProviderError>> {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    // Split inside events, as a network would.
    body.as_bytes()
        .chunks(37)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect()
}

#[tokio::test]
async fn chat_stream_fragments_reassemble_by_index() {
    use futures::StreamExt;
    use llm_tools_core::StreamEvent;
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Ns::tool(CRM, "lookup")];
    let delta = |d: Value, finish: Value| json!({"choices": [{"index": 0, "delta": d, "finish_reason": finish}]});
    let chunks = [
        delta(
            json!({"role": "assistant", "content": "Checking"}),
            Value::Null,
        ),
        // The id comes only with the first fragment of each index.
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"latitude\":\"1\","}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "crm_lookup", "arguments": ""}}]}),
            Value::Null,
        ),
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"longitude\":\"2\"}"}}]}),
            Value::Null,
        ),
        // The last fragment and the finish reason in the same chunk.
        delta(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": ""}}]}),
            json!("tool_calls"),
        ),
        json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
    ];
    let provider = chat(OpenAiConfig::openai("m"));
    let events: Vec<StreamEvent> = provider
        .stream_events(futures::stream::iter(sse(&chunks)), &tools)
        .map(Result::unwrap)
        .collect()
        .await;
    let started: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted {
                index,
                id,
                name,
                namespace,
            } => Some((*index, id.as_str(), name.as_str(), namespace.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        started,
        [
            (0, "call_a", "weather", None),
            (1, "call_b", "lookup", Some("crm".to_owned()))
        ]
    );
    let ready: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallReady { index } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(ready, [0, 1]);
    let Some(StreamEvent::Completed(response)) = events.last() else {
        panic!("the last event is Completed: {events:?}")
    };
    let m = &response.message;
    assert_eq!(m.text(), "Checking");
    assert_eq!(
        m.tool_calls[0].arguments,
        r#"{"latitude":"1","longitude":"2"}"#
    );
    assert_eq!(
        m.tool_calls[1].arguments, "{}",
        "empty arguments mean no arguments"
    );
    assert_eq!(m.tool_calls[1].namespace.as_deref(), Some("crm"));
    assert_eq!(m.usage.map(|u| u.input_tokens), Some(7));
}

#[tokio::test]
async fn azure_sends_its_key_header_and_api_version_and_openai_its_org_headers() {
    use llm_tools_core::Provider;
    use llm_tools_providers::record::RecordedResponse;
    use llm_tools_providers::replay::ReplayServer;
    use llm_tools_tests::serving::exchange;
    let answer = || {
        exchange(
            "https://api.openai.com/v1/chat/completions",
            RecordedResponse::json(
                200,
                r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}"#,
            ),
        )
    };
    let server = ReplayServer::with_interactions(vec![answer(), answer()])
        .await
        .unwrap();
    let messages = [Message::user("hi")];

    let azure = OpenAiConfig::azure(server.url(), "my-deployment").with_api_key("az-key");
    OpenAiChat::new(azure)
        .unwrap()
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap();
    let openai = OpenAiConfig::openai("m")
        .with_base_url(server.url())
        .with_api_key("sk-key")
        .with_organization("org_1")
        .with_project("proj_1")
        .with_header("X-Custom", "yes");
    OpenAiChat::new(openai)
        .unwrap()
        .complete(Request::new(&messages, &[]))
        .await
        .unwrap();

    let received = server.received();
    assert!(
        received[0]
            .path
            .starts_with("/openai/deployments/my-deployment/chat/completions?api-version="),
        "{}",
        received[0].path
    );
    assert_eq!(received[0].header("api-key"), Some("az-key"));
    assert_eq!(received[0].header("authorization"), None);
    assert_eq!(received[0].body["model"], "my-deployment");
    assert_eq!(received[1].header("authorization"), Some("Bearer sk-key"));
    assert_eq!(received[1].header("openai-organization"), Some("org_1"));
    assert_eq!(received[1].header("openai-project"), Some("proj_1"));
    assert_eq!(received[1].header("x-custom"), Some("yes"));
}

#[test]
fn a_missing_key_is_a_configuration_error_before_any_request() {
    let config = OpenAiConfig::mistral("mistral-small-latest");
    if std::env::var("MISTRAL_API_KEY").is_ok() {
        return;
    }
    let e = OpenAiChat::new(config).unwrap_err();
    assert!(e.to_string().contains("MISTRAL_API_KEY"), "{e}");
    // Local servers need none.
    assert!(OpenAiChat::new(OpenAiConfig::ollama("qwen3")).is_ok());
}

#[test]
fn gemini_thought_signatures_through_the_compatible_endpoint_go_back_with_their_calls() {
    let p = chat(OpenAiConfig::compatible(
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini-2.5-flash",
    ));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let answer = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "weather", "arguments": "{\"latitude\":\"1\",\"longitude\":\"2\"}"},
            "extra_content": {"google": {"thought_signature": "sig-A"}}}]}}]});
    let response = p
        .parse_response(answer.to_string().as_bytes(), &tools)
        .unwrap();
    let call = &response.message.tool_calls[0];
    assert_eq!(
        call.provider_data,
        Some(json!({"extra_content": {"google": {"thought_signature": "sig-A"}}}))
    );
    let history = [
        Message::user("Weather?"),
        response.message.clone(),
        Message::tool_result("call_1", "15°C", false),
    ];
    let sent = body(
        p.request_body(&Request::new(&history, &tools), false)
            .unwrap(),
    );
    assert_eq!(
        sent["messages"][1]["tool_calls"][0]["extra_content"],
        json!({"google": {"thought_signature": "sig-A"}})
    );
    // A call without one sends none.
    let plain = [Message::assistant_with_calls(
        "",
        vec![ToolCall::new("c", "weather", "{}")],
    )];
    let sent = body(
        p.request_body(&Request::new(&plain, &tools), false)
            .unwrap(),
    );
    assert!(
        sent["messages"][0]["tool_calls"][0]
            .get("extra_content")
            .is_none()
    );
}

#[tokio::test]
async fn streamed_thought_signatures_are_kept_on_their_calls() {
    use futures::StreamExt;
    let p = chat(OpenAiConfig::compatible(
        "http://127.0.0.1:9/v1",
        "gemini-2.5-flash",
    ));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_9", "type": "function",
            "function": {"name": "weather", "arguments": "{\"latitude\":\"1\","},
            "extra_content": {"google": {"thought_signature": "sig-S"}}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"longitude\":\"2\"}"}}]}, "finish_reason": "tool_calls"}]}),
    ];
    let sse: String = chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n";
    let bytes = futures::stream::iter([Ok(bytes::Bytes::from(sse))]);
    let events: Vec<_> = p.stream_events(bytes, &tools).collect().await;
    let Some(Ok(llm_tools_core::StreamEvent::Completed(done))) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(
        done.message.tool_calls[0].provider_data,
        Some(json!({"extra_content": {"google": {"thought_signature": "sig-S"}}}))
    );
}

#[test]
fn mistral_sends_a_required_call_with_one_tool_as_that_tool() {
    let p = chat(OpenAiConfig::mistral("mistral-small-latest"));
    let one: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let messages = [Message::user("Weather?")];
    let sent = body(
        p.request_body(
            &Request::new(&messages, &one).with_choice(&ToolChoice::Required),
            false,
        )
        .unwrap(),
    );
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
    let two: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(AnyOfParams)];
    let sent = body(
        p.request_body(
            &Request::new(&messages, &two).with_choice(&ToolChoice::Required),
            false,
        )
        .unwrap(),
    );
    assert_eq!(sent["tool_choice"], "any");
}

#[test]
fn azure_foundry_posts_to_models_chat_completions_with_its_api_version() {
    let c =
        OpenAiConfig::azure_foundry("https://res.services.ai.azure.com", "Phi-4").with_api_key("k");
    assert_eq!(c.base_url(), "https://res.services.ai.azure.com/models");
    let p = OpenAiChat::new(c).unwrap();
    assert_eq!(
        p.http().base_url(),
        "https://res.services.ai.azure.com/models"
    );
}

#[test]
fn the_canonical_form_ignores_the_order_of_tools() {
    let a = json!({"tools": [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}]});
    let b = json!({"tools": [
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}]});
    assert_eq!(
        llm_tools_providers::openai::canonical_request(&a),
        llm_tools_providers::openai::canonical_request(&b)
    );
}

#[test]
fn search_results_go_as_text_where_the_protocol_has_no_search_result_block() {
    let result = llm_tools_core::SearchResult::new(
        "https://example.com/ruby-facts",
        "Ruby Facts",
        "Ruby was created by Matz.",
    )
    .with_passage("It first appeared in 1995.");
    let expected = "Ruby Facts (https://example.com/ruby-facts)\nRuby was created by Matz.\nIt first appeared in 1995.";
    assert_eq!(result.to_text(), expected);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let messages = [
        Message::user("Who made Ruby?"),
        Message::assistant_with_calls("", vec![ToolCall::new("call_1", "weather", "{}")]),
        Message::tool_result_parts(
            "call_1",
            vec![llm_tools_core::Part::SearchResult(result)],
            false,
        ),
    ];
    let request = Request::new(&messages, &tools);
    let b = body(
        chat(OpenAiConfig::openai("m"))
            .request_body(&request, false)
            .unwrap(),
    );
    assert_eq!(b["messages"][2]["content"], expected);
    let b = body(responses().request_body(&request, false).unwrap());
    assert_eq!(b["input"][2]["output"], expected);
}

/// An answer with reasoning and a call, as Chat Completions servers write it: the reasoning
/// in `field` (`reasoning_content`: DeepSeek; `reasoning`: Ollama, OpenRouter), or (`None`) in
/// `thinking` chunks of the content (Mistral's Magistral).
fn reasoned_call(field: Option<&str>) -> Vec<u8> {
    let mut message = json!({"role": "assistant", "content": "",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]});
    match field {
        Some(field) => message[field] = json!("Weather first."),
        None => {
            message["content"] = json!([
                {"type": "thinking", "thinking": [{"type": "text", "text": "Weather first."}]},
                {"type": "text", "text": ""}
            ])
        }
    }
    json!({"id": "c1", "model": "m", "choices": [{"index": 0, "message": message,
        "finish_reason": "tool_calls"}]})
    .to_string()
    .into_bytes()
}

/// The assistant message of the next request after `answer`, sent with `config`.
fn sent_back(answer: &[u8], config: OpenAiConfig) -> Value {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let provider = chat(config);
    let m = provider.parse_response(answer, &tools).unwrap().message;
    let messages = [
        Message::user("Weather in Paris?"),
        m,
        Message::tool_result("call_1", "15°C", false),
    ];
    body(
        provider
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    )["messages"][1]
        .clone()
}

#[test]
fn reasoning_goes_back_under_the_field_it_came_in() {
    for field in ["reasoning_content", "reasoning"] {
        let sent = sent_back(&reasoned_call(Some(field)), OpenAiConfig::openai("m"));
        assert_eq!(sent[field], "Weather first.", "{sent}");
        let other = if field == "reasoning" {
            "reasoning_content"
        } else {
            "reasoning"
        };
        assert!(sent.get(other).is_none(), "{sent}");
    }
}

#[test]
fn reasoning_from_thinking_chunks_is_read_but_goes_back_in_no_field() {
    let answer = reasoned_call(None);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let m = chat(OpenAiConfig::mistral("magistral-small-latest"))
        .parse_response(&answer, &tools)
        .unwrap()
        .message;
    let kept = m.provider_data.as_ref().unwrap();
    assert_eq!(kept.data["reasoning"], "Weather first.");
    // Mistral refuses a message with a field it does not know (422 `extra_forbidden`).
    for config in [
        OpenAiConfig::mistral("magistral-small-latest"),
        OpenAiConfig::openai("m"),
    ] {
        let sent = sent_back(&answer, config);
        assert!(sent.get("reasoning_content").is_none(), "{sent}");
        assert!(sent.get("reasoning").is_none(), "{sent}");
        assert_eq!(sent["tool_calls"][0]["function"]["name"], "weather");
    }
}

#[test]
fn mistral_sends_no_reasoning_field_even_from_another_servers_answer() {
    let sent = sent_back(
        &reasoned_call(Some("reasoning_content")),
        OpenAiConfig::mistral("magistral-small-latest"),
    );
    assert!(sent.get("reasoning_content").is_none(), "{sent}");
    assert_eq!(sent["tool_calls"][0]["function"]["name"], "weather");
}
