//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent, Usage};
use std::borrow::Cow;
use std::collections::VecDeque;

use super::response::*;

/// Reassembles a Gemini stream: each chunk's parts as they come, the answer complete when the
/// stream ends after a finish reason.
pub struct GeminiAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    parts: Parts,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    refusal: Option<String>,
    grounding: Option<GroundingIn>,
    /// The values the parts keep (thoughts, parts of other kinds).
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
    done: bool,
}

impl GeminiAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            parts: Parts::default(),
            usage: None,
            finish_reason: None,
            refusal: None,
            grounding: None,
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
            done: false,
        }
    }
}

impl Assembler for GeminiAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let Some(chunk) = self.unreadable.read::<ChunkIn<'_>>(&self.name, data)? else {
            return Ok(());
        };
        if let Some(error) = wire::value_of(chunk.error) {
            return Err(error_of(&self.name, &error));
        }
        if self.model.is_none() {
            self.model = chunk.model_version.map(Cow::into_owned);
        }
        if let Some(reason) = block_reason(chunk.prompt_feedback) {
            self.refusal = Some(reason);
            self.finish_reason
                .get_or_insert_with(|| "BLOCKED".to_owned());
        }
        if let Some(u) = chunk.usage_metadata.take(&self.name, &mut self.unreadable) {
            self.usage = Some(u.usage());
        }
        if let Some(candidate) = chunk.candidate {
            if let Some(content) = candidate.content {
                take_parts(
                    &self.name,
                    &self.names,
                    &content.parts,
                    &mut self.parts,
                    &mut self.kept,
                    out,
                )?;
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish_reason = Some(reason);
            }
            if let Some(grounding) = candidate
                .grounding_metadata
                .take(&self.name, &mut self.unreadable)
            {
                self.grounding = Some(grounding);
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let Some(reason) = self.finish_reason.take() else {
            return Err(wire::cut_short(&self.name, "no finish reason"));
        };
        let parts = std::mem::take(&mut self.parts);
        if BLOCKED.contains(&reason.as_str()) && parts.texts.is_empty() && parts.calls.is_empty() {
            self.refusal = Some(format!("the answer was withheld ({reason})"));
        }
        if let Some(u) = self.usage {
            out.push_back(StreamEvent::Usage(u));
        }
        let mut message = parts.message(self.usage, self.refusal.take());
        if let Some(grounding) = self.grounding.take() {
            grounding.apply(&mut message);
        }
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(Some(reason))
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
        Ok(())
    }
}
