//! The chat's [`ToolSource`]s: tools that may change between requests.

use std::sync::Arc;

use super::registry::Registry;
use crate::{
    error::Error,
    tool::{Tool, ToolSource},
};

/// One source a chat took, with the generation its registered tools came from.
struct Held {
    source: Arc<dyn ToolSource>,
    generation: u64,
    /// The joined names of the tools registered from it.
    names: Vec<String>,
}

/// The sources of one chat.
#[derive(Default)]
pub(crate) struct Sources {
    held: Vec<Held>,
}

fn joined_names(tools: &[Arc<dyn Tool>]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t.spec().joined_name().to_owned())
        .collect()
}

impl Sources {
    /// Registers the source's tools now (all or none) and keeps the source.
    pub(crate) fn add(
        &mut self,
        registry: &mut Registry,
        source: Arc<dyn ToolSource>,
    ) -> Result<(), Error> {
        let generation = source.generation();
        let tools = source.tools();
        let names = joined_names(&tools);
        registry.add(tools)?;
        self.held.push(Held {
            source,
            generation,
            names,
        });
        Ok(())
    }

    /// Brings every source up to date and swaps in the tools of those that changed.
    pub(crate) async fn refresh(&mut self, registry: &mut Registry) {
        for held in &mut self.held {
            held.source.refresh().await;
            let generation = held.source.generation();
            if generation == held.generation {
                continue;
            }
            held.generation = generation;
            let old: Vec<Arc<dyn Tool>> = held
                .names
                .iter()
                .filter_map(|name| registry.remove(name))
                .collect();
            let tools = held.source.tools();
            let names = joined_names(&tools);
            match registry.add(tools) {
                Ok(()) => {
                    tracing::info!(
                        target: "llm_tools::tools",
                        source = held.source.source_name(),
                        before = held.names.len(),
                        after = names.len(),
                        "the tools of a source changed"
                    );
                    held.names = names;
                }
                Err(error) => {
                    tracing::warn!(
                        target: "llm_tools::tools",
                        source = held.source.source_name(),
                        error = %error,
                        "the new tools of a source do not fit the chat; keeping the old ones"
                    );
                    // The old tools were registered together a moment ago, so they fit again.
                    let _ = registry.add(old);
                }
            }
        }
    }

    /// The first source named `name` (its [`ToolSource::source_name`]).
    pub(crate) fn find(&self, name: &str) -> Option<&Arc<dyn ToolSource>> {
        self.held
            .iter()
            .find(|held| held.source.source_name() == name)
            .map(|held| &held.source)
    }

    /// Lets go of the first source named `name` and of the tools registered from it.
    pub(crate) fn remove(
        &mut self,
        registry: &mut Registry,
        name: &str,
    ) -> Option<Arc<dyn ToolSource>> {
        let at = self
            .held
            .iter()
            .position(|held| held.source.source_name() == name)?;
        let held = self.held.remove(at);
        for joined in &held.names {
            registry.remove(joined);
        }
        Some(held.source)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }
}
