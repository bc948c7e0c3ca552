//! Every protocol's answer reader and stream reassembly fed arbitrary bytes: a whole body, and
//! a stream cut into arbitrary chunks. No panic; the chunked stream's events equal those of the
//! same bytes in one chunk.
#![no_main]

mod common;

use std::sync::Arc;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use llm_tools_core::{BoxFuture, RawArgs, StreamEvent, Tool, ToolContext, ToolOutcome, ToolSpec};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};

/// A namespaced tool, so answers' names are mapped back as in a real chat.
struct Lookup(ToolSpec);

impl Tool for Lookup {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::error("unused") })
    }
}

/// `text` with the ids generated for calls that came without one (`call_` and 24 letters or
/// digits, fresh on every run) replaced by a placeholder, wherever they appear.
fn without_generated_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("call_") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 5..];
        let id_len = tail.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if id_len == 24 {
            out.push_str("call_<generated>");
            rest = &tail[24..];
        } else {
            out.push_str("call_");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// One provider's readers, behind one signature.
type Parse = Box<dyn Fn(&[u8], &[Arc<dyn Tool>]) -> Option<String> + Send + Sync>;
type Reassemble = Box<dyn Fn(Vec<bytes::Bytes>, &[Arc<dyn Tool>]) -> Vec<String> + Send + Sync>;

macro_rules! readers {
    ($p:expr) => {{
        let a = $p;
        let b = a.clone();
        let parse: Parse = Box::new(move |body, tools| {
            a.parse_response(body, tools).ok().map(|r| format!("{r:?}"))
        });
        let reassemble: Reassemble = Box::new(move |parts, tools| {
            let stream = futures::stream::iter(parts.into_iter().map(Ok));
            futures::executor::block_on(b.stream_events(stream, tools).collect::<Vec<_>>())
                .into_iter()
                .map(|e| match e {
                    Ok(StreamEvent::Completed(r)) => {
                        without_generated_ids(&format!("completed {:?}", r.message))
                    }
                    Ok(other) => format!("{other:?}"),
                    Err(e) => format!("error {:?}", e.kind()),
                })
                .collect()
        });
        (parse, reassemble)
    }};
}

/// Every provider's readers, built once (a provider builds an HTTP client).
static READERS: std::sync::LazyLock<Vec<(Parse, Reassemble)>> =
    std::sync::LazyLock::new(|| (0..7).map(provider).collect());

fn provider(which: u8) -> (Parse, Reassemble) {
    match which {
        0 => readers!(OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap()),
        1 => readers!(OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap()),
        2 => readers!(Anthropic::new(AnthropicConfig::new("m").with_api_key("k")).unwrap()),
        3 => readers!(Gemini::new(GeminiConfig::new("m").with_api_key("k")).unwrap()),
        4 => readers!(
            Bedrock::new(BedrockConfig::new("m").with_credentials(AwsCredentials::new("a", "s")))
                .unwrap()
        ),
        5 => readers!(Cohere::new(CohereConfig::new("m").with_api_key("k")).unwrap()),
        _ => readers!(Ollama::new(OllamaConfig::new("m")).unwrap()),
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&selector, rest)) = input.split_first() else {
        return;
    };
    let (sizes, data) = rest.split_at(rest.len().min(usize::from(selector >> 4)));
    let (parse, reassemble) = &READERS[usize::from(selector & 0x0f) % READERS.len()];
    const CRM: llm_tools_core::Namespace =
        llm_tools_core::Namespace::new("crm").description("Customer records");
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Lookup(
        ToolSpec::new("lookup", "Finds a customer").with_namespace(Some(CRM)),
    ))];
    let _ = parse(data, &tools);
    let whole = reassemble(vec![bytes::Bytes::copy_from_slice(data)], &tools);
    let chunked = reassemble(common::chunks(data, sizes), &tools);
    // Text deltas may be cut differently; what must agree is how the stream ends.
    assert_eq!(
        whole.last(),
        chunked.last(),
        "the stream ended differently when chunked"
    );
});
