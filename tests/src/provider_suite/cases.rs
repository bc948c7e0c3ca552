//! The cases, each run on every protocol: `async fn(&'static Protocol)`, panicking when the
//! protocol does not do what every protocol must.

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::chat::{Chat, ChatEvent};
use llm_tools_core::{Error, Message, Namespace, ProviderErrorKind, Role, StreamEvent, Tool, tool};
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::Value;

use super::{Call, INPUT_TOKENS, OUTPUT_TOKENS, Protocol};
use crate::fixtures::{BestLanguageToLearn, Weather};
use crate::serving::{provider_error, stream_turn};

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Finds a customer by email
#[tool(namespace = CRM)]
async fn lookup(email: String) -> String {
    format!("Customer {email}: Ada Lovelace, since 1843")
}

/// The suite's tools: `weather`, `lookup` in the `crm` namespace, and
/// `best_language_to_learn` (no parameters).
pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Weather),
        Arc::new(Lookup),
        Arc::new(BestLanguageToLearn),
    ]
}

const BERLIN: &str = r#"{"latitude":"52.52","longitude":"13.40"}"#;
const PARIS: &str = r#"{"latitude":"48.85","longitude":"2.35"}"#;
const ADA: &str = r#"{"email":"ada@example.com"}"#;
const BERLIN_WEATHER: &str = "Current weather at 52.52, 13.40: 15°C, Wind: 10 km/h";
const PARIS_WEATHER: &str = "Current weather at 48.85, 2.35: 15°C, Wind: 10 km/h";
const ADA_FOUND: &str = "Customer ada@example.com: Ada Lovelace, since 1843";

fn weather(id: &'static str, arguments: &'static str) -> Call<'static> {
    Call {
        id,
        namespace: None,
        name: "weather",
        arguments,
    }
}

fn crm_lookup(id: &'static str) -> Call<'static> {
    Call {
        id,
        namespace: Some("crm"),
        name: "lookup",
        arguments: ADA,
    }
}

/// How long one turn may take before it counts as a hang.
const TURN_LIMIT: Duration = Duration::from_secs(20);

async fn ask(chat: &mut Chat, text: &str) -> Result<llm_tools_core::chat::Outcome, Error> {
    tokio::time::timeout(TURN_LIMIT, chat.ask(text))
        .await
        .expect("the turn finished (no hang)")
}

async fn ask_streamed(chat: &mut Chat, text: &str) -> Result<(String, Vec<ChatEvent>), Error> {
    tokio::time::timeout(TURN_LIMIT, stream_turn(chat, text))
        .await
        .expect("the streamed turn finished (no hang)")
}

/// The bodies of the model requests `server` received (not a token exchange).
fn model_requests(server: &ReplayServer) -> Vec<Value> {
    server
        .received()
        .into_iter()
        .filter(|r| !r.path.contains("/token"))
        .map(|r| r.body)
        .collect()
}

/// A transcript message as the cases compare them: what it says, not how the wire carried it.
#[derive(Debug, PartialEq)]
struct Said {
    role: Role,
    text: String,
    /// Per call: id, own name, namespace, arguments (parsed, or the raw text as a string).
    calls: Vec<(String, String, Option<String>, Value)>,
    result_for: Option<String>,
    is_error: bool,
    usage: Option<(u64, u64)>,
}

fn said(messages: &[Message]) -> Vec<Said> {
    messages
        .iter()
        .map(|m| Said {
            role: m.role,
            text: m.text(),
            calls: m
                .tool_calls
                .iter()
                .map(|c| {
                    (
                        c.id.clone(),
                        c.name.clone(),
                        c.namespace.clone(),
                        serde_json::from_str(&c.arguments)
                            .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                    )
                })
                .collect(),
            result_for: m.tool_call_id.clone(),
            is_error: m.is_error,
            usage: m.usage.map(|u| (u.input_tokens, u.output_tokens)),
        })
        .collect()
}

/// A round whole and streamed: the chat, its server and (streamed) its events.
struct Round {
    whole: (ReplayServer, Chat),
    streamed: (ReplayServer, Chat, Vec<ChatEvent>),
}

/// Asks `question` once whole and once streamed (each on a chat of its own), the server
/// answering `calls` then `answer`; both must end with `answer`.
async fn round(p: &'static Protocol, calls: &[Call<'_>], answer: &str) -> Round {
    round_with_text(p, "", calls, answer).await
}

/// [`round`] with `preamble`, the text the model writes before its calls.
async fn round_with_text(
    p: &'static Protocol,
    preamble: &str,
    calls: &[Call<'_>],
    answer: &str,
) -> Round {
    let (server, mut chat) = p
        .serve(
            vec![(p.answer)(preamble, calls), (p.answer)(answer, &[])],
            0,
        )
        .await;
    let outcome = ask(&mut chat, "Question?").await.expect("the whole round");
    assert_eq!(
        outcome.text().as_deref(),
        Some(answer),
        "the whole round's answer"
    );
    let whole = (server, chat);

    let (server, mut chat) = p
        .serve(
            vec![
                p.stream_response(&(p.stream)(preamble, calls)),
                p.stream_response(&(p.stream)(answer, &[])),
            ],
            0,
        )
        .await;
    let (text, events) = ask_streamed(&mut chat, "Question?")
        .await
        .expect("the streamed round");
    assert_eq!(
        text,
        format!("{preamble}{answer}"),
        "the streamed round's text deltas"
    );
    Round {
        whole,
        streamed: (server, chat, events),
    }
}

impl Round {
    /// Both ways: each transcript and what its server received.
    fn both(&self) -> [(&'static str, &Chat, &ReplayServer); 2] {
        [
            ("whole", &self.whole.1, &self.whole.0),
            ("streamed", &self.streamed.1, &self.streamed.0),
        ]
    }

    fn same_transcript(&self) {
        assert_eq!(
            said(self.whole.1.messages()),
            said(self.streamed.1.messages()),
            "the whole and the streamed round leave the same transcript"
        );
    }

    /// Per call of the streamed round, in order: its argument fragments put together, which
    /// must be its arguments.
    fn fragments_add_up(&self) {
        let mut streamed: Vec<String> = Vec::new();
        for e in &self.streamed.2 {
            match e {
                ChatEvent::Model(StreamEvent::ToolCallStarted { index, .. }) => {
                    assert_eq!(*index, streamed.len(), "calls start in order");
                    streamed.push(String::new());
                }
                ChatEvent::Model(StreamEvent::ToolCallDelta { index, fragment }) => {
                    streamed
                        .get_mut(*index)
                        .expect("a fragment of a call that started")
                        .push_str(fragment);
                }
                _ => {}
            }
        }
        let parse = |a: &str| match a {
            "" => Value::Object(serde_json::Map::new()),
            a => serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.to_owned())),
        };
        let streamed: Vec<Value> = streamed.iter().map(|a| parse(a)).collect();
        let called: Vec<Value> = self.streamed.1.messages()[1]
            .tool_calls
            .iter()
            .map(|c| parse(&c.arguments))
            .collect();
        assert_eq!(
            streamed, called,
            "the streamed fragments add up to the calls' arguments"
        );
    }

    /// The calls that started in the streamed round: index, id, name, namespace.
    fn started(&self) -> Vec<(usize, String, String, Option<String>)> {
        self.streamed
            .2
            .iter()
            .filter_map(|e| match e {
                ChatEvent::Model(StreamEvent::ToolCallStarted {
                    index,
                    id,
                    name,
                    namespace,
                }) => Some((*index, id.clone(), name.clone(), namespace.clone())),
                _ => None,
            })
            .collect()
    }
}

/// What the second request of a round carries back of the model's calls: each call's id, name
/// on the wire and arguments, as the transcript holds them.
fn calls_go_back(p: &Protocol, way: &str, chat: &Chat, request: &Value) {
    let expected: Vec<(String, String, Value)> = chat.messages()[1]
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                c.joined_name(),
                serde_json::from_str(&c.arguments)
                    .unwrap_or_else(|_| Value::String(c.arguments.clone())),
            )
        })
        .collect();
    assert_eq!(
        (p.calls_sent)(request),
        expected,
        "{way}: the calls go back in the protocol's format: {request}"
    );
}

/// The results in a transcript: call id, text, whether an error.
fn results(chat: &Chat) -> Vec<(String, String, bool)> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            (
                m.tool_call_id.clone().unwrap_or_default(),
                m.text(),
                m.is_error,
            )
        })
        .collect()
}

pub(super) async fn a_tool_round_goes_whole_and_streamed_with_one_transcript(p: &'static Protocol) {
    let round = round(
        p,
        &[weather("call_berlin_1", BERLIN)],
        "It is 15°C in Berlin.",
    )
    .await;
    for (way, chat, server) in round.both() {
        let roles: Vec<Role> = chat.messages().iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant],
            "{way}"
        );
        let call = &chat.messages()[1].tool_calls;
        assert_eq!(call.len(), 1, "{way}: {call:?}");
        assert_eq!(
            (
                call[0].id.as_str(),
                call[0].name.as_str(),
                call[0].namespace.as_deref()
            ),
            ("call_berlin_1", "weather", None),
            "{way}"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&call[0].arguments).ok(),
            serde_json::from_str::<Value>(BERLIN).ok(),
            "{way}"
        );
        assert_eq!(
            results(chat),
            [("call_berlin_1".to_owned(), BERLIN_WEATHER.to_owned(), false)],
            "{way}"
        );
        let requests = model_requests(server);
        assert_eq!(requests.len(), 2, "{way}: one request per answer");
        assert!((p.results_sent)(&requests[0]).is_empty(), "{way}");
        assert_eq!(
            (p.results_sent)(&requests[1]),
            [("call_berlin_1".to_owned(), BERLIN_WEATHER.to_owned())],
            "{way}: the result goes back in the protocol's format: {}",
            requests[1]
        );
        calls_go_back(p, way, chat, &requests[1]);
        if let Some(marked) = p.errors_marked {
            assert_eq!(
                marked(&requests[1]),
                [false],
                "{way}: a result is not marked as an error"
            );
        }
    }
    round.fragments_add_up();
    let started: Vec<String> = round.started().into_iter().map(|(_, id, ..)| id).collect();
    assert_eq!(started, ["call_berlin_1"]);
    round.same_transcript();
}

pub(super) async fn several_calls_in_one_answer_keep_their_order_and_ids(p: &'static Protocol) {
    let calls = [
        weather("call_a", BERLIN),
        crm_lookup("call_b"),
        weather("call_c", PARIS),
    ];
    let round = round(p, &calls, "Berlin and Paris are mild; Ada is a customer.").await;
    let expected = [
        ("call_a".to_owned(), BERLIN_WEATHER.to_owned()),
        ("call_b".to_owned(), ADA_FOUND.to_owned()),
        ("call_c".to_owned(), PARIS_WEATHER.to_owned()),
    ];
    for (way, chat, server) in round.both() {
        let asked: Vec<(String, String)> = chat.messages()[1]
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.joined_name()))
            .collect();
        assert_eq!(
            asked,
            [
                ("call_a".to_owned(), "weather".to_owned()),
                ("call_b".to_owned(), "crm_lookup".to_owned()),
                ("call_c".to_owned(), "weather".to_owned())
            ],
            "{way}"
        );
        let got: Vec<(String, String)> = results(chat)
            .into_iter()
            .map(|(id, text, error)| {
                assert!(!error, "{way}: {id}: {text}");
                (id, text)
            })
            .collect();
        assert_eq!(
            got, expected,
            "{way}: each result follows its call, in order"
        );
        let requests = model_requests(server);
        assert_eq!(
            (p.results_sent)(&requests[1]),
            expected,
            "{way}: the results go back in order: {}",
            requests[1]
        );
        calls_go_back(p, way, chat, &requests[1]);
    }
    round.fragments_add_up();
    let started: Vec<(usize, String)> = round
        .started()
        .into_iter()
        .map(|(index, id, ..)| (index, id))
        .collect();
    assert_eq!(
        started,
        [
            (0, "call_a".to_owned()),
            (1, "call_b".to_owned()),
            (2, "call_c".to_owned())
        ]
    );
    round.same_transcript();
}

pub(super) async fn namespaced_tools_map_back_to_their_namespace(p: &'static Protocol) {
    let round = round(p, &[crm_lookup("call_crm")], "Ada is a customer.").await;
    for (way, chat, server) in round.both() {
        let call = &chat.messages()[1].tool_calls[0];
        assert_eq!(
            (
                call.name.as_str(),
                call.namespace.as_deref(),
                call.joined_name()
            ),
            ("lookup", Some("crm"), "crm_lookup".to_owned()),
            "{way}"
        );
        assert_eq!(
            results(chat),
            [("call_crm".to_owned(), ADA_FOUND.to_owned(), false)],
            "{way}: the namespaced tool ran"
        );
        calls_go_back(p, way, chat, &model_requests(server)[1]);
    }
    let started: Vec<(String, Option<String>)> = round
        .started()
        .into_iter()
        .map(|(_, _, name, ns)| (name, ns))
        .collect();
    assert_eq!(started, [("lookup".to_owned(), Some("crm".to_owned()))]);
    round.same_transcript();
}

pub(super) async fn usage_is_read_whole_and_streamed(p: &'static Protocol) {
    let (_server, mut chat) = p.serve(vec![(p.answer)("Hello.", &[])], 0).await;
    let outcome = ask(&mut chat, "Hi").await.expect("answered");
    let usage = outcome
        .message()
        .and_then(|m| m.usage)
        .expect("usage whole");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (INPUT_TOKENS, OUTPUT_TOKENS)
    );

    let (_server, mut chat) = p
        .serve(vec![p.stream_response(&(p.stream)("Hello.", &[]))], 0)
        .await;
    ask_streamed(&mut chat, "Hi").await.expect("answered");
    let usage = chat.messages()[1].usage.expect("usage streamed");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (INPUT_TOKENS, OUTPUT_TOKENS),
        "streamed"
    );
}

pub(super) async fn rate_limits_and_server_errors_are_retryable_and_a_bad_request_is_not(
    p: &'static Protocol,
) {
    for (status, retryable) in [(429, true), (500, true), (503, true), (400, false)] {
        let message = format!("the provider says {status}: try again later, or not");
        for streamed in [false, true] {
            let (server, mut chat) = p.serve(vec![(p.error)(status, &message)], 0).await;
            let e = if streamed {
                ask_streamed(&mut chat, "Hi")
                    .await
                    .map(|_| ())
                    .expect_err("an error")
            } else {
                ask(&mut chat, "Hi")
                    .await
                    .map(|_| ())
                    .expect_err("an error")
            };
            let e = provider_error(e);
            let how = format!("{status}, streamed: {streamed}: {e}");
            assert_eq!(e.kind(), ProviderErrorKind::Http, "{how}");
            assert_eq!(e.status(), Some(status), "{how}");
            assert_eq!(e.is_retryable(), retryable, "{how}");
            assert_eq!(e.message(), message, "{how}: the provider's message");
            assert_eq!(chat.messages().len(), 1, "{how}: only the question");
            assert_eq!(model_requests(&server).len(), 1, "{how}");
        }
    }
    let (server, mut chat) = p
        .serve(
            vec![
                (p.error)(503, "busy"),
                (p.error)(429, "slow down"),
                (p.answer)("At last.", &[]),
            ],
            2,
        )
        .await;
    let outcome = ask(&mut chat, "Hi")
        .await
        .expect("answered after two retries");
    assert_eq!(outcome.text().as_deref(), Some("At last."));
    assert_eq!(model_requests(&server).len(), 3);

    let (server, mut chat) = p
        .serve(
            vec![
                (p.error)(503, "busy"),
                (p.error)(429, "slow down"),
                p.stream_response(&(p.stream)("At last.", &[])),
            ],
            2,
        )
        .await;
    let (text, _) = ask_streamed(&mut chat, "Hi")
        .await
        .expect("streamed, answered after two retries");
    assert_eq!(text, "At last.");
    assert_eq!(model_requests(&server).len(), 3, "streamed");
}

pub(super) async fn a_context_length_refusal_is_context_length_exceeded(p: &'static Protocol) {
    let (refusal, message) = (p.context_length)();
    for streamed in [false, true] {
        // Retries allowed: a refusal of the length must not use them.
        let (server, mut chat) = p.serve(vec![refusal.clone()], 2).await;
        let e = if streamed {
            ask_streamed(&mut chat, "A very long question")
                .await
                .map(|_| ())
                .expect_err("refused")
        } else {
            ask(&mut chat, "A very long question")
                .await
                .map(|_| ())
                .expect_err("refused")
        };
        let e = provider_error(e);
        let how = format!("streamed: {streamed}: {e}");
        assert_eq!(e.kind(), ProviderErrorKind::ContextLengthExceeded, "{how}");
        assert_eq!(e.status(), Some(refusal.status), "{how}");
        assert!(!e.is_retryable(), "{how}");
        assert_eq!(e.message(), message, "{how}");
        assert_eq!(model_requests(&server).len(), 1, "{how}: not retried");
    }
}

/// Serves `body` then a whole answer, asks streamed (which must fail with one of `kinds`,
/// appending nothing but the question), then asks again (which must be answered).
async fn a_cut_stream_fails(
    p: &'static Protocol,
    body: RecordedResponse,
    what: &str,
    kinds: &[ProviderErrorKind],
) {
    let (_server, mut chat) = p.serve(vec![body, (p.answer)("Still here.", &[])], 0).await;
    let e = match ask_streamed(&mut chat, "Hi").await {
        Ok((text, _)) => panic!(
            "{what}: the cut stream was taken as an answer: {text:?}, transcript {:?}",
            said(chat.messages())
        ),
        Err(e) => provider_error(e),
    };
    assert!(kinds.contains(&e.kind()), "{what}: {:?} {e}", e.kind());
    assert_eq!(chat.messages().len(), 1, "{what}: only the question");
    let outcome = ask(&mut chat, "Still there?")
        .await
        .expect("the chat goes on");
    assert_eq!(outcome.text().as_deref(), Some("Still here."), "{what}");
}

fn calls_in(answer: &str) -> bool {
    answer == "calls"
}

pub(super) async fn a_truncated_stream_is_an_error_never_a_panic_or_a_hang(p: &'static Protocol) {
    let text = "Hello there, friend.";
    let calls = [weather("call_a", BERLIN), crm_lookup("call_b")];
    for (answer, events) in [
        ("text", (p.stream)(text, &[])),
        ("calls", (p.stream)("", &calls)),
    ] {
        let whole_after = events.len() - p.optional_tail;
        for k in 1..whole_after {
            let what = format!(
                "{answer}: the stream ends after event {k} of {}",
                events.len()
            );
            a_cut_stream_fails(
                p,
                p.stream_response(&events[..k]),
                &what,
                &[ProviderErrorKind::Stream],
            )
            .await;
        }
        for k in whole_after..events.len() {
            // Only the optional tail is missing: the answer is whole (its calls run, and the
            // next answer is asked for).
            let next = p.stream_response(&(p.stream)("Done.", &[]));
            let (_server, mut chat) = p
                .serve(vec![p.stream_response(&events[..k]), next], 0)
                .await;
            let what = format!(
                "{answer}: the stream ends after event {k} of {}, in its optional tail",
                events.len()
            );
            let (streamed, _) = ask_streamed(&mut chat, "Hi")
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let calls_ran = results(&chat).len();
            if calls_in(answer) {
                assert_eq!((streamed.as_str(), calls_ran), ("Done.", 2), "{what}");
            } else {
                assert_eq!((streamed.as_str(), calls_ran), (text, 0), "{what}");
            }
        }
        for k in 0..events.len() {
            let mut cut = events[..k].concat();
            cut.extend_from_slice(&events[k][..events[k].len() / 2]);
            let body =
                crate::provider_suite::wire::bytes_response(200, p.stream_content_type, &cut)
                    .disconnected();
            let what = format!(
                "{answer}: the connection drops inside event {} of {}",
                k + 1,
                events.len()
            );
            a_cut_stream_fails(
                p,
                body,
                &what,
                &[ProviderErrorKind::Stream, ProviderErrorKind::Decode],
            )
            .await;
        }
    }
}

pub(super) async fn an_unknown_tool_reaches_the_chat_as_an_unknown_tool(p: &'static Protocol) {
    let round = round(
        p,
        &[weather("call_u", BERLIN)].map(|c| Call {
            name: "wether",
            ..c
        }),
        "Sorry, no weather.",
    )
    .await;
    for (way, chat, server) in round.both() {
        let results = results(chat);
        assert_eq!(results.len(), 1, "{way}");
        let (id, text, error) = &results[0];
        assert_eq!(id, "call_u", "{way}");
        assert!(error, "{way}: an error result");
        assert!(
            text.contains("There is no tool `wether`") && text.contains("`weather`"),
            "{way}: {text}"
        );
        let requests = model_requests(server);
        assert_eq!(
            (p.results_sent)(&requests[1]),
            [(id.clone(), text.clone())],
            "{way}"
        );
        calls_go_back(p, way, chat, &requests[1]);
        if let Some(marked) = p.errors_marked {
            assert_eq!(
                marked(&requests[1]),
                [true],
                "{way}: the error result is marked as one: {}",
                requests[1]
            );
        }
    }
    round.same_transcript();
}

pub(super) async fn arguments_that_are_not_json_are_handled_the_same(p: &'static Protocol) {
    const BROKEN: &str = r#"{"latitude": "52.52", "longitude": "#;
    let calls = [weather("call_bad", BROKEN)];
    let mut transcripts = Vec::new();
    for (streamed, as_text) in [
        (false, p.text_arguments.whole),
        (true, p.text_arguments.streamed),
    ] {
        let first = if streamed {
            p.stream_response(&(p.stream)("", &calls))
        } else {
            (p.answer)("", &calls)
        };
        let last = if streamed {
            p.stream_response(&(p.stream)("Those were not coordinates.", &[]))
        } else {
            (p.answer)("Those were not coordinates.", &[])
        };
        let (server, mut chat) = p.serve(vec![first, last], 0).await;
        let result = if streamed {
            ask_streamed(&mut chat, "Weather?")
                .await
                .map(|(text, _)| text)
        } else {
            ask(&mut chat, "Weather?")
                .await
                .map(|o| o.text().unwrap_or_default())
        };
        let how = format!("streamed: {streamed}");
        if as_text {
            // The model's text reaches the chat, which answers the call with an error result.
            assert_eq!(
                result.expect("answered").as_str(),
                "Those were not coordinates.",
                "{how}"
            );
            let results = results(&chat);
            assert_eq!(results.len(), 1, "{how}");
            assert!(results[0].2, "{how}: an error result");
            assert!(
                results[0].1.contains("not valid JSON"),
                "{how}: {}",
                results[0].1
            );
            let requests = model_requests(&server);
            assert_eq!(
                (p.results_sent)(&requests[1]),
                [("call_bad".to_owned(), results[0].1.clone())],
                "{how}"
            );
            if let Some(marked) = p.errors_marked {
                assert_eq!(
                    marked(&requests[1]),
                    [true],
                    "{how}: the error result is marked as one"
                );
            }
            let sent = (p.calls_sent)(&requests[1]);
            // What goes back as the call's arguments is an empty object on every protocol: the
            // text that is not JSON stays in the transcript and the error result quotes it.
            assert_eq!(
                sent,
                [(
                    "call_bad".to_owned(),
                    "weather".to_owned(),
                    serde_json::json!({})
                )],
                "{how}: {}",
                requests[1]
            );
            transcripts.push(said(chat.messages()));
        } else {
            // The arguments are JSON inside the body: a body that is not JSON does not decode.
            let e = provider_error(result.expect_err("a body that does not decode"));
            assert!(
                matches!(
                    e.kind(),
                    ProviderErrorKind::Decode | ProviderErrorKind::Stream
                ),
                "{how}: {:?} {e}",
                e.kind()
            );
            assert_eq!(chat.messages().len(), 1, "{how}: only the question");
        }
    }
    if let [whole, streamed] = &transcripts[..] {
        assert_eq!(whole, streamed, "the same transcript both ways");
    }
}

pub(super) async fn text_before_calls_is_kept_whole_and_streamed(p: &'static Protocol) {
    let round = round_with_text(
        p,
        "Let me check the weather.",
        &[weather("call_t", BERLIN)],
        "It is 15°C.",
    )
    .await;
    for (way, chat, server) in round.both() {
        let m = &chat.messages()[1];
        assert_eq!(
            (m.text().as_str(), m.tool_calls.len()),
            ("Let me check the weather.", 1),
            "{way}: the text and the call are one answer"
        );
        calls_go_back(p, way, chat, &model_requests(server)[1]);
    }
    round.same_transcript();
}

pub(super) async fn a_call_without_arguments_runs_with_an_empty_object(p: &'static Protocol) {
    // Whole answers carry `{}`; streamed ones carry no argument text at all where the protocol
    // streams text (empty fragments), `{}` where it streams objects.
    let call = Call {
        id: "call_empty",
        namespace: None,
        name: "best_language_to_learn",
        arguments: "{}",
    };
    let whole = {
        let (server, mut chat) = p
            .serve(vec![(p.answer)("", &[call]), (p.answer)("Ruby.", &[])], 0)
            .await;
        let outcome = ask(&mut chat, "Which language?").await.expect("answered");
        assert_eq!(outcome.text().as_deref(), Some("Ruby."));
        (server, chat)
    };
    let empty = Call {
        arguments: if p.text_arguments.streamed { "" } else { "{}" },
        ..call
    };
    let streamed = {
        let (server, mut chat) = p
            .serve(
                vec![
                    p.stream_response(&(p.stream)("", &[empty])),
                    p.stream_response(&(p.stream)("Ruby.", &[])),
                ],
                0,
            )
            .await;
        let (text, _) = ask_streamed(&mut chat, "Which language?")
            .await
            .expect("answered");
        assert_eq!(text, "Ruby.");
        (server, chat)
    };
    for (way, (server, chat)) in [("whole", &whole), ("streamed", &streamed)] {
        let c = &chat.messages()[1].tool_calls;
        assert_eq!(c.len(), 1, "{way}");
        assert_eq!(
            serde_json::from_str::<Value>(&c[0].arguments).ok(),
            Some(serde_json::json!({})),
            "{way}: no arguments are an empty object: {:?}",
            c[0].arguments
        );
        assert_eq!(
            results(chat),
            [("call_empty".to_owned(), "Ruby".to_owned(), false)],
            "{way}: the tool ran"
        );
        calls_go_back(p, way, chat, &model_requests(server)[1]);
    }
    assert_eq!(said(whole.1.messages()), said(streamed.1.messages()));
}

pub(super) async fn the_canonical_answers_have_the_recorded_shape(p: &'static Protocol) {
    if p.recorded.is_empty() {
        println!(
            "provider suite: {}: no recorded traffic to compare with",
            p.name
        );
        return;
    }
    let recorded = super::shape::recorded_paths(p.recorded);
    assert!(!recorded.is_empty(), "recordings in {:?}", p.recorded);
    let answers: [(&str, &[Call<'_>]); 3] = [
        ("Hello.", &[]),
        ("", &[weather("call_a", BERLIN), crm_lookup("call_b")]),
        ("Let me check.", &[weather("call_a", BERLIN)]),
    ];
    let mut ours = std::collections::BTreeSet::new();
    for (text, calls) in answers {
        super::shape::paths(&(p.answer)(text, calls), &mut ours);
        super::shape::paths(&p.stream_response(&(p.stream)(text, calls)), &mut ours);
    }
    let unrecorded: Vec<&String> = ours
        .iter()
        .filter(|path| !recorded.contains(*path) && !p.documented_fields.contains(&path.as_str()))
        .collect();
    assert!(
        unrecorded.is_empty(),
        "fields the recordings of {:?} never have (name them in documented_fields if the API documents them): {unrecorded:#?}",
        p.recorded
    );
}

pub(super) async fn an_error_in_the_middle_of_a_stream_is_an_error_with_its_message(
    p: &'static Protocol,
) {
    let Some(error_event) = p.stream_error else {
        println!(
            "provider suite: {}: no documented error event in a stream",
            p.name
        );
        return;
    };
    let message = "The model is overloaded; the answer stopped here.";
    let events = (p.stream)("Hello there, friend.", &[]);
    // The stream's opening and first text, then the error.
    let mut body = events[..2].concat();
    body.extend(error_event(message));
    let (_server, mut chat) = p
        .serve(
            vec![
                crate::provider_suite::wire::bytes_response(200, p.stream_content_type, &body),
                (p.answer)("Still here.", &[]),
            ],
            0,
        )
        .await;
    let e = match ask_streamed(&mut chat, "Hi").await {
        Ok((text, _)) => panic!("the stream's error was taken as an answer: {text:?}"),
        Err(e) => provider_error(e),
    };
    assert_eq!(e.kind(), ProviderErrorKind::Stream, "{e}");
    assert_eq!(e.message(), message, "the provider's message: {e}");
    if let Some(retryable) = p.stream_error_retryable {
        assert_eq!(e.is_retryable(), retryable, "retryable: {e}");
    }
    assert_eq!(chat.messages().len(), 1, "only the question");
    let outcome = ask(&mut chat, "Still there?")
        .await
        .expect("the chat goes on");
    assert_eq!(outcome.text().as_deref(), Some("Still here."));
}

pub(super) async fn two_rounds_in_one_turn_send_the_whole_history_back(p: &'static Protocol) {
    let first = [weather("call_r1", BERLIN)];
    let second = [crm_lookup("call_r2")];
    let answer = "Berlin is mild and Ada is a customer.";
    let whole = {
        let (server, mut chat) = p
            .serve(
                vec![
                    (p.answer)("", &first),
                    (p.answer)("", &second),
                    (p.answer)(answer, &[]),
                ],
                0,
            )
            .await;
        let outcome = ask(&mut chat, "Question?").await.expect("answered");
        assert_eq!(outcome.text().as_deref(), Some(answer));
        (server, chat)
    };
    let streamed = {
        let (server, mut chat) = p
            .serve(
                vec![
                    p.stream_response(&(p.stream)("", &first)),
                    p.stream_response(&(p.stream)("", &second)),
                    p.stream_response(&(p.stream)(answer, &[])),
                ],
                0,
            )
            .await;
        let (text, _) = ask_streamed(&mut chat, "Question?")
            .await
            .expect("answered");
        assert_eq!(text, answer);
        (server, chat)
    };
    for (way, (server, chat)) in [("whole", &whole), ("streamed", &streamed)] {
        let roles: Vec<Role> = chat.messages().iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Assistant,
                Role::Tool,
                Role::Assistant
            ],
            "{way}"
        );
        let requests = model_requests(server);
        assert_eq!(requests.len(), 3, "{way}");
        assert_eq!(
            (p.results_sent)(&requests[2]),
            [
                ("call_r1".to_owned(), BERLIN_WEATHER.to_owned()),
                ("call_r2".to_owned(), ADA_FOUND.to_owned())
            ],
            "{way}: the last request carries both rounds' results: {}",
            requests[2]
        );
        let calls: Vec<(String, String)> = (p.calls_sent)(&requests[2])
            .into_iter()
            .map(|(id, name, _)| (id, name))
            .collect();
        assert_eq!(
            calls,
            [
                ("call_r1".to_owned(), "weather".to_owned()),
                ("call_r2".to_owned(), "crm_lookup".to_owned())
            ],
            "{way}: and both rounds' calls"
        );
    }
    assert_eq!(said(whole.1.messages()), said(streamed.1.messages()));
}

pub(super) async fn text_in_many_scripts_arrives_intact_whole_and_streamed(p: &'static Protocol) {
    // Over a kilobyte of two-, three- and four-byte characters: the replay server sends
    // server-sent events in chunks of 211 bytes, so chunks end inside characters.
    let text: String = "Grüße aus Köln, 東京は晴れ ☀️, 15 °C 😀🌍; "
        .repeat(24)
        .trim_end()
        .to_owned();
    let (_server, mut chat) = p.serve(vec![(p.answer)(&text, &[])], 0).await;
    let outcome = ask(&mut chat, "Hi").await.expect("answered");
    assert_eq!(outcome.text().as_deref(), Some(text.as_str()), "whole");

    let (_server, mut chat) = p
        .serve(vec![p.stream_response(&(p.stream)(&text, &[]))], 0)
        .await;
    let (streamed, _) = ask_streamed(&mut chat, "Hi").await.expect("answered");
    assert_eq!(streamed, text, "the streamed deltas");
    assert_eq!(chat.messages()[1].text(), text, "streamed");
}
