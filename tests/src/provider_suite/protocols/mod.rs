//! The fixture of each protocol: its provider on the loopback server and its canonical answers
//! in its own wire format. The answers are written by hand from each API's documented format,
//! in the shape of the real traffic in `tests/fixtures/recorded/<protocol>/` (same fields, same
//! event order); the context-length refusals are the recorded ones
//! (`tests/fixtures/recorded/*-errors/`), or Ollama's documented one
//! (`tests/fixtures/documented/ollama_context_length.json`).

mod anthropic;
mod bedrock;
mod cohere;
mod gemini;
mod ollama;
mod openai;

pub use anthropic::ANTHROPIC;
pub use bedrock::BEDROCK;
pub use cohere::COHERE;
pub use gemini::{GEMINI, VERTEX};
pub use ollama::OLLAMA;
pub use openai::{CHAT_COMPLETIONS, RESPONSES};

use llm_tools_providers::record::RecordedResponse;

/// No preamble: the first request is a model request.
pub(crate) fn no_preamble() -> Vec<RecordedResponse> {
    Vec::new()
}

/// `s` cut in two at a character boundary near its middle (a streamed text or argument comes
/// in two fragments).
pub(crate) fn halves(s: &str) -> (&str, &str) {
    let mut at = s.len() / 2;
    while !s.is_char_boundary(at) {
        at += 1;
    }
    s.split_at(at)
}
