//! The chat's tools, keyed by joined name.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use crate::{error::Error, message::ToolCall, tool::Tool};

/// What a chat that searches deferred tools itself has found, the tool a request forces, and
/// the search tool offered while some deferred tools are left to find.
pub(crate) struct Search<'a> {
    pub(crate) found: &'a [String],
    pub(crate) forced: Option<&'a str>,
    pub(crate) tool: &'a Arc<dyn Tool>,
}

/// The tools of one chat, in registration order (the order requests list them), with an index
/// by joined name. Tools are shared (`Arc`), so cloning a registry copies no schema.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// Seeded per map, which makes names chosen to collide harder to arrange.
    index: HashMap<String, usize, foldhash::fast::RandomState>,
    /// Tools the chat offers beside the user's (the file tools of a chat with a file store);
    /// a user's tool of the same name takes the place of one.
    extras: &'static [Arc<dyn Tool>],
    /// How many of the tools are deferred, so a request knows without looking at each.
    deferred: usize,
}

impl Registry {
    /// Adds tools: all of them, or none when one is invalid or has a joined name already taken
    /// (by a registered tool or by another of `new`).
    pub(crate) fn add(&mut self, new: Vec<Arc<dyn Tool>>) -> Result<(), Error> {
        // One pass: each name goes into the index as it is checked, so a name taken by an
        // earlier tool of `new` is found there too; a refusal takes the pass's names back out.
        let first = self.tools.len();
        self.index.reserve(new.len());
        for (i, tool) in new.iter().enumerate() {
            let spec = tool.spec();
            let refused = match spec.validate() {
                Err(e) => Some(e),
                // One hash of the name: looked up and, when free, taken at once.
                Ok(()) => match self.index.entry(spec.joined_name().to_owned()) {
                    Entry::Occupied(taken) => {
                        let at = *taken.get();
                        let existing = self
                            .tools
                            .get(at)
                            .or_else(|| new.get(at.wrapping_sub(first)))
                            .map_or("", |t| t.type_name());
                        Some(Error::DuplicateTool {
                            name: spec.joined_name().to_owned(),
                            existing: existing.to_owned(),
                            new: tool.type_name().to_owned(),
                        })
                    }
                    Entry::Vacant(free) => {
                        free.insert(first + i);
                        None
                    }
                },
            };
            if let Some(error) = refused {
                for added in &new[..i] {
                    self.index.remove(added.spec().joined_name());
                }
                return Err(error);
            }
        }
        self.tools.reserve(new.len());
        for tool in new {
            self.deferred += usize::from(tool.spec().defer());
            self.tools.push(tool);
        }
        Ok(())
    }

    /// Removes the tool with this joined name.
    pub(crate) fn remove(&mut self, joined_name: &str) -> Option<Arc<dyn Tool>> {
        let at = self.index.remove(joined_name)?;
        let removed = self.tools.remove(at);
        self.deferred -= usize::from(removed.spec().defer());
        for position in self.index.values_mut() {
            if *position > at {
                *position -= 1;
            }
        }
        Some(removed)
    }

    pub(crate) fn clear(&mut self) {
        self.tools.clear();
        self.index.clear();
        self.deferred = 0;
    }

    /// Whether any tool is deferred.
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred > 0
    }

    pub(crate) fn set_extras(&mut self, extras: &'static [Arc<dyn Tool>]) {
        self.extras = extras;
    }

    /// The extra tools no tool of the user's shadows.
    fn live_extras(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.extras
            .iter()
            .filter(|t| !self.index.contains_key(t.spec().joined_name()))
    }

    /// The tools a request offers: every tool when the provider searches deferred ones itself
    /// (`search = None`); else the tools not deferred, the deferred ones found or forced, and
    /// the search tool while some are left to find. The extras come last. Borrowed as they are
    /// when nothing is left out or added.
    pub(crate) fn offered(&self, search: Option<Search<'_>>) -> Cow<'_, [Arc<dyn Tool>]> {
        if search.is_none() && self.live_extras().next().is_none() {
            return Cow::Borrowed(&self.tools);
        }
        let mut out: Vec<Arc<dyn Tool>> = Vec::with_capacity(self.tools.len() + 4);
        let mut left = false;
        for tool in &self.tools {
            let spec = tool.spec();
            let name = spec.joined_name();
            let shown = match &search {
                None => true,
                Some(s) => {
                    !spec.defer() || s.forced == Some(name) || s.found.iter().any(|f| f == name)
                }
            };
            if shown {
                out.push(Arc::clone(tool));
            } else {
                left = true;
            }
        }
        if let (true, Some(search)) = (left, &search) {
            out.push(Arc::clone(search.tool));
        }
        out.extend(self.live_extras().cloned());
        Cow::Owned(out)
    }

    pub(crate) fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    pub(crate) fn contains(&self, joined_name: &str) -> bool {
        self.index.contains_key(joined_name)
    }

    pub(crate) fn get(&self, joined_name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(joined_name).map(|&at| &self.tools[at])
    }

    /// The tool a call asks for: by namespace and name, or by joined name when the provider
    /// could not map a namespace back.
    pub(crate) fn find(&self, call: &ToolCall) -> Option<&Arc<dyn Tool>> {
        match &call.namespace {
            None => self
                .get(&call.name)
                .or_else(|| self.extras.iter().find(|t| t.spec().name() == call.name)),
            Some(ns) => {
                let found = self.tools.iter().find(|t| {
                    let spec = t.spec();
                    spec.name() == call.name && spec.namespace().is_some_and(|n| n.name() == ns)
                });
                found.or_else(|| self.get(&call.joined_name()))
            }
        }
    }

    /// Up to three registered joined names most similar to `name`, most similar first. A name
    /// longer than any tool's is compared by its first characters: the model's name may be
    /// megabytes, and a comparison costs its length times the tool name's.
    pub(crate) fn similar(&self, name: &str) -> Vec<&str> {
        const COMPARED: usize = 2 * crate::spec::MAX_TOOL_NAME_LEN;
        let name = match name.char_indices().nth(COMPARED) {
            Some((at, _)) => name.get(..at).unwrap_or_default(),
            None => name,
        };
        let mut scored: Vec<(f64, &str)> = self
            .tools
            .iter()
            .chain(self.live_extras())
            .map(|t| {
                let spec = t.spec();
                let joined = spec.joined_name();
                let score =
                    strsim::jaro_winkler(name, joined).max(strsim::jaro_winkler(name, spec.name()));
                (score, joined)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().take(3).map(|(_, n)| n).collect()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.spec().joined_name()))
            .finish()
    }
}
