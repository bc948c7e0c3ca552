//! One suite of provider cases every protocol must pass, written once and run against each
//! protocol the providers crate speaks (`tests/tests/providers/provider_suite.rs`, one test per
//! protocol), as [`crate::store_suite`] is run against every store.
//!
//! Each case drives the real provider, through the real HTTP client and the real [`Chat`]
//! loop, against the loopback replay server serving the protocol's own wire format:
//!
//! | case | what every protocol must do |
//! |---|---|
//! | `a_tool_round_goes_whole_and_streamed_with_one_transcript` | call → result sent back in the protocol's format → final answer; the whole and the streamed turn leave the same transcript |
//! | `several_calls_in_one_answer_keep_their_order_and_ids` | three calls in one answer: same order and ids in the transcript, the events and the results sent back |
//! | `namespaced_tools_map_back_to_their_namespace` | a call to `crm_lookup` comes back as `lookup` in `crm` and runs the namespaced tool |
//! | `text_before_calls_is_kept_whole_and_streamed` | the text the model writes before its calls is one answer with them, and goes back with them |
//! | `two_rounds_in_one_turn_send_the_whole_history_back` | call → result → another call → result → answer: the last request carries both rounds' calls and results, in order |
//! | `a_call_without_arguments_runs_with_an_empty_object` | `{}` whole, no argument text at all streamed: the call's arguments are `{}`, the tool runs |
//! | `the_canonical_answers_have_the_recorded_shape` | the hand-written answers (whole and streamed, text and calls) use only fields the protocol's recorded traffic has, or documented ones the fixture names |
//! | `usage_is_read_whole_and_streamed` | the answer's token counts |
//! | `text_in_many_scripts_arrives_intact_whole_and_streamed` | over a kilobyte of multi-byte characters, whose stream the replay server splits inside characters (server-sent events go in chunks of 211 bytes) |
//! | `rate_limits_and_server_errors_are_retryable_and_a_bad_request_is_not` | 429, 500 and 503 retryable, 400 not, each with the provider's message, whole and streamed; a retried 503 and 429 end in the answer, whole and streamed |
//! | `a_context_length_refusal_is_context_length_exceeded` | a recorded refusal of a too long conversation is `ContextLengthExceeded`, whole and streamed, not retried |
//! | `a_truncated_stream_is_an_error_never_a_panic_or_a_hang` | a stream cut at every event boundary before the answer is whole, or inside any event, is a `Stream` (or `Decode`) error and appends nothing, and the chat goes on; a stream missing only its [`Protocol::optional_tail`] is the whole answer |
//! | `an_error_in_the_middle_of_a_stream_is_an_error_with_its_message` | an error event after some text (overloaded, throttled: each protocol's own form) is a `Stream` error with the provider's message, retryable where its kind says so; nothing is appended and the chat goes on |
//! | `an_unknown_tool_reaches_the_chat_as_an_unknown_tool` | a call to a tool the chat lacks gets the chat's "There is no tool" error result, both ways |
//! | `arguments_that_are_not_json_are_handled_the_same` | where the protocol carries arguments as text, text that is not JSON is the call's error result and the loop goes on; where it carries them as JSON inside the body, the body does not decode (`Decode`) and nothing is appended |
//!
//! Every case can fail: each checks what the chat and the server saw, never only that nothing
//! panicked. Each case runs as its own task with a time limit, so a panic or a hang fails the
//! suite naming the protocol and the case, and the other cases still run. Run it with
//! `cargo test -p llm-tools-tests --test providers provider_suite::`.
//!
//! The protocols: OpenAI Chat Completions ([`CHAT_COMPLETIONS`]), OpenAI Responses
//! ([`RESPONSES`]), Anthropic Messages ([`ANTHROPIC`]), Gemini ([`GEMINI`]) and Gemini on
//! Vertex AI ([`VERTEX`]), Bedrock Converse ([`BEDROCK`]), Cohere v2 ([`COHERE`]) and Ollama's
//! native API ([`OLLAMA`]). Their answers are written by hand from each API's documented format
//! and held to the fields of its recorded traffic (`tests/fixtures/recorded/`) by
//! `the_canonical_answers_have_the_recorded_shape`; the context-length refusals are the
//! recorded ones.
//!
//! # Adding a protocol
//!
//! Write one [`Protocol`] value (see the ones in `protocols/`): how to build its provider against
//! the loopback server (and what to serve first, like Vertex AI's token), how it writes a whole
//! answer and a streamed one (text and calls), an error body and an error inside a stream, its
//! context-length refusal (from `tests/fixtures/recorded/*-errors/` where one was recorded),
//! where a request carries the calls and results back (and marks an error result), where its
//! recordings are, and what it carries as text. Then add one test to
//! `tests/tests/providers/provider_suite.rs` calling [`run_all`] with it.
//!
//! # Adding a case
//!
//! Write one `async fn(&'static Protocol)` in `cases.rs` and add one line to [`CASES`]. A case a
//! protocol fails because of a bug goes into that protocol's [`Protocol::known_failures`], with
//! why and what its failure says, until the bug is fixed: it still runs, and must fail so.
#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_used,
    clippy::print_stdout
)] // a test suite, which names each case as it runs

mod cases;
mod protocols;
mod shape;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::chat::Chat;
use llm_tools_core::{BoxFuture, Provider};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::RecordedResponse;
use llm_tools_providers::replay::ReplayServer;
use serde_json::Value;

pub use protocols::{
    ANTHROPIC, BEDROCK, CHAT_COMPLETIONS, COHERE, GEMINI, OLLAMA, RESPONSES, VERTEX,
};

/// The input tokens every protocol's canonical answers report.
pub const INPUT_TOKENS: u64 = 21;
/// The output tokens every protocol's canonical answers report.
pub const OUTPUT_TOKENS: u64 = 8;

/// A tool call in a canonical answer.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The call's id.
    pub id: &'a str,
    /// The tool's namespace, if any.
    pub namespace: Option<&'a str>,
    /// The tool's own name.
    pub name: &'a str,
    /// The arguments as the model wrote them (JSON text, or not, for the cases that test that).
    pub arguments: &'a str,
}

impl Call<'_> {
    /// `{namespace}_{name}`: the name protocols without namespaces carry.
    pub fn joined(&self) -> String {
        match self.namespace {
            Some(ns) => format!("{ns}_{}", self.name),
            None => self.name.to_owned(),
        }
    }
}

/// Where a protocol carries a call's arguments as text the model wrote (a JSON string, or
/// fragments of one), so arguments that are not JSON reach the chat as the call's problem.
/// Elsewhere they are JSON inside the body, and bad arguments are a bad body.
#[derive(Clone, Copy, Debug)]
pub struct TextArguments {
    /// In a whole answer.
    pub whole: bool,
    /// In a streamed answer.
    pub streamed: bool,
}

/// A case a protocol is known to fail because of a bug. The case still runs and must fail
/// with a message containing [`KnownFailure::fails_with`]: a known failure that passes, or
/// fails some other way, fails the suite (remove it, or look at the new failure).
#[derive(Clone, Copy, Debug)]
pub struct KnownFailure {
    /// The case's name, as in [`CASES`].
    pub case: &'static str,
    /// The bug, said precisely.
    pub why: &'static str,
    /// What the case's failure says.
    pub fails_with: &'static str,
}

/// One protocol's fixture: how to reach its provider and how it writes the canonical answers.
pub struct Protocol {
    /// The protocol's name, as failures print it.
    pub name: &'static str,
    /// The provider talking to `server`, with `retry`.
    pub provider: fn(&ReplayServer, RetryPolicy) -> Arc<dyn Provider>,
    /// Answers served before the first model request of each provider (Vertex AI's token
    /// exchange).
    pub preamble: fn() -> Vec<RecordedResponse>,
    /// A whole answer with this text (none when empty) and these calls.
    pub answer: fn(&str, &[Call<'_>]) -> RecordedResponse,
    /// A streamed answer with this text and these calls: its events (or lines, or frames), in
    /// order, each whole.
    pub stream: fn(&str, &[Call<'_>]) -> Vec<Vec<u8>>,
    /// The content type of a stream.
    pub stream_content_type: &'static str,
    /// An error answer of this status with this message, in the protocol's error format.
    pub error: fn(u16, &str) -> RecordedResponse,
    /// The protocol's refusal of a conversation longer than the context window, and its message.
    pub context_length: fn() -> (RecordedResponse, String),
    /// The tool results a request body carries back: per result, the call id and its text.
    pub results_sent: fn(&Value) -> Vec<(String, String)>,
    /// Per tool result a request body carries back (in the order of `results_sent`), whether it
    /// is marked as an error; `None` where the protocol has no mark (Chat Completions,
    /// Responses, Ollama).
    pub errors_marked: Option<fn(&Value) -> Vec<bool>>,
    /// The model's calls a request body carries back: per call, its id, the name on the wire
    /// (joined, or `namespace_name` where the protocol has namespaces) and its arguments (a
    /// string of JSON read as JSON; text that is not JSON as a string).
    pub calls_sent: fn(&Value) -> Vec<(String, String, Value)>,
    /// Where arguments are text.
    pub text_arguments: TextArguments,
    /// An error event in the middle of a stream, of a transient kind (overloaded, a server
    /// error, throttling), with this message, in the protocol's documented form; `None` where
    /// the protocol documents none.
    pub stream_error: Option<fn(&str) -> Vec<u8>>,
    /// Whether the protocol's stream error says it may be retried (its kind is transient); `None`
    /// where its error event has no kind (Ollama's `{"error": "…"}`).
    pub stream_error_retryable: Option<bool>,
    /// How many events at the end of a stream the provider may go without, by design: the
    /// answer is whole before them (Chat Completions after the finish reason, without the usage
    /// chunk and `[DONE]`; Bedrock after `messageStop`, without `metadata`). A stream cut
    /// earlier must be an error.
    pub optional_tail: usize,
    /// The folders of `tests/fixtures/recorded/` holding this protocol's real traffic: every
    /// field the canonical answers write must be one these answers have, or be in
    /// [`Protocol::documented_fields`]. Empty where nothing was recorded (Ollama's native API).
    pub recorded: &'static [&'static str],
    /// Fields the canonical answers write that the recordings lack, each from the API's
    /// documentation (paths as `a.b[].c`; a stream event's under `<its type>`).
    pub documented_fields: &'static [&'static str],
    /// Cases this protocol fails because of known bugs.
    pub known_failures: &'static [KnownFailure],
}

impl std::fmt::Debug for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Protocol {
    /// A streamed answer's events as one response body.
    pub fn stream_response(&self, events: &[Vec<u8>]) -> RecordedResponse {
        wire::bytes_response(200, self.stream_content_type, &events.concat())
    }

    /// A server serving the preamble then `responses`, and a chat on it with the suite's tools
    /// and `retries` quick retries.
    pub async fn serve(
        &'static self,
        responses: Vec<RecordedResponse>,
        retries: u32,
    ) -> (ReplayServer, Chat) {
        let mut all = (self.preamble)();
        all.extend(responses);
        let interactions = all
            .into_iter()
            .map(|r| crate::serving::exchange("https://provider.example/any", r))
            .collect();
        let server = ReplayServer::with_interactions(interactions)
            .await
            .expect("the replay server starts");
        let retry = RetryPolicy::default()
            .with_max_retries(retries)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(4));
        let mut chat = Chat::with_shared_provider((self.provider)(&server, retry));
        chat.with_tools(cases::tools()).expect("the suite's tools");
        (server, chat)
    }
}

/// One case: its name and the test.
pub type Case = (
    &'static str,
    fn(&'static Protocol) -> BoxFuture<'static, ()>,
);

macro_rules! case {
    ($name:ident) => {
        (stringify!($name), |protocol| {
            Box::pin(cases::$name(protocol))
        })
    };
}

/// Every case of the suite.
pub const CASES: &[Case] = &[
    case!(a_tool_round_goes_whole_and_streamed_with_one_transcript),
    case!(several_calls_in_one_answer_keep_their_order_and_ids),
    case!(namespaced_tools_map_back_to_their_namespace),
    case!(text_before_calls_is_kept_whole_and_streamed),
    case!(two_rounds_in_one_turn_send_the_whole_history_back),
    case!(a_call_without_arguments_runs_with_an_empty_object),
    case!(usage_is_read_whole_and_streamed),
    case!(text_in_many_scripts_arrives_intact_whole_and_streamed),
    case!(the_canonical_answers_have_the_recorded_shape),
    case!(rate_limits_and_server_errors_are_retryable_and_a_bad_request_is_not),
    case!(a_context_length_refusal_is_context_length_exceeded),
    case!(a_truncated_stream_is_an_error_never_a_panic_or_a_hang),
    case!(an_error_in_the_middle_of_a_stream_is_an_error_with_its_message),
    case!(an_unknown_tool_reaches_the_chat_as_an_unknown_tool),
    case!(arguments_that_are_not_json_are_handled_the_same),
];

/// How long one case may take before it counts as a hang.
const CASE_LIMIT: Duration = Duration::from_secs(60);

/// Runs every case of [`CASES`] on `protocol`, each as its own task with a time limit (its known
/// failures must fail as known); prints each name.
///
/// # Panics
///
/// After every case ran, when any failed: the message names the protocol and each failed case.
pub async fn run_all(protocol: &'static Protocol) {
    run_cases(CASES, protocol).await;
}

/// Runs `cases` on `protocol` as [`run_all`] does.
///
/// # Panics
///
/// When any case failed, naming the protocol and each failed case.
pub async fn run_cases(cases: &[Case], protocol: &'static Protocol) {
    let mut failures = Vec::new();
    for (name, case) in cases {
        let known = protocol.known_failures.iter().find(|k| k.case == *name);
        println!("provider suite: {}: {name}", protocol.name);
        let run = tokio::spawn(tokio::time::timeout(CASE_LIMIT, case(protocol)));
        let failure = match run.await {
            Ok(Ok(())) => None,
            Ok(Err(_)) => Some(format!("did not finish within {CASE_LIMIT:?} (a hang)")),
            Err(e) => Some(match e.try_into_panic() {
                Ok(payload) => payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "a panic".to_owned()),
                Err(e) => e.to_string(),
            }),
        };
        match (known, failure) {
            (None, None) => {}
            (None, Some(message)) => failures.push(format!("{}: {name}: {message}", protocol.name)),
            (Some(k), Some(message)) if message.contains(k.fails_with) => {
                println!(
                    "provider suite: {}: {name}: a known failure: {}",
                    protocol.name, k.why
                );
            }
            (Some(_), Some(message)) => failures.push(format!(
                "{}: {name}: a known failure failed another way: {message}",
                protocol.name
            )),
            (Some(k), None) => failures.push(format!(
                "{}: {name}: a known failure now passes ({}): remove it from known_failures",
                protocol.name, k.why
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "the provider suite failed on {}, {} of {} cases:\n\n{}",
        protocol.name,
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
