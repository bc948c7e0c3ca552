//! The last tool list a protocol wrote, kept with its definitions: a chat sends the same tools
//! with every request, so from the second request on the definitions are there at once,
//! without looking each one up, checking it and collecting them again.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use llm_tools_core::{ProviderError, Request, Tool};
use serde_json::value::RawValue;

use crate::schema::SchemaBudget;

/// The definitions of the last list of tools written, in order, with what they were written
/// for. One per provider; a clone starts empty.
///
/// A list is the same when it has the same tools (by address), in the same order, each giving
/// the same [`ToolSpec`](llm_tools_core::ToolSpec) (by address), under the same dialect key and
/// with the same [`deferred_chosen`](Request::deferred_chosen) (which decides whether a protocol
/// without native tool search leaves deferred tools out).
/// The weak handles keep the tools' allocations (not the tools) alive, so no address is reused
/// while it is compared. Only lists built under the default budget with no tool left out are
/// kept, as [`definition`](super::definition) keeps each tool's under the default budget only:
/// a list with a tool left out is built again, with its warning, every time.
#[derive(Default)]
pub(crate) struct KeptDefinitions {
    /// Shared out of the lock, so the tools' `spec()` run while no other request waits.
    last: Mutex<Option<Arc<Kept>>>,
}

struct Kept {
    key: &'static str,
    deferred_chosen: bool,
    /// Each tool and the address of the spec it gave.
    tools: Vec<(Weak<dyn Tool>, usize)>,
    definitions: Arc<[Arc<RawValue>]>,
}

impl Clone for KeptDefinitions {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl fmt::Debug for KeptDefinitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeptDefinitions").finish_non_exhaustive()
    }
}

fn spec_address(tool: &dyn Tool) -> usize {
    std::ptr::from_ref(tool.spec()).addr()
}

impl Kept {
    fn matches(&self, key: &'static str, request: &Request<'_>) -> bool {
        let tools = request.tools;
        (std::ptr::eq(self.key, key) || self.key == key)
            && self.deferred_chosen == request.deferred_chosen
            && self.tools.len() == tools.len()
            && self.tools.iter().zip(tools).all(|((kept, spec), tool)| {
                std::ptr::addr_eq(kept.as_ptr(), Arc::as_ptr(tool))
                    && *spec == spec_address(tool.as_ref())
            })
    }
}

impl KeptDefinitions {
    /// The definitions of the request's tools under the dialect `key`: the last list's when
    /// they are the same list, else `build`'s. `build` gives one entry per definition written,
    /// in order, `None` for a tool left out past the budget; the list is kept for the next
    /// request when `budget` is the default and no tool was left out.
    pub(crate) fn get(
        &self,
        key: &'static str,
        budget: &SchemaBudget,
        request: &Request<'_>,
        build: impl FnOnce() -> Result<Vec<Option<Arc<RawValue>>>, ProviderError>,
    ) -> Result<Arc<[Arc<RawValue>]>, ProviderError> {
        let tools = request.tools;
        let keeps = !tools.is_empty() && *budget == SchemaBudget::default();
        let last = if keeps { self.lock().clone() } else { None };
        if let Some(kept) = last.filter(|k| k.matches(key, request)) {
            return Ok(Arc::clone(&kept.definitions));
        }
        let built = build()?;
        let complete = built.iter().all(Option::is_some);
        let definitions: Arc<[Arc<RawValue>]> = built.into_iter().flatten().collect();
        if keeps && complete {
            *self.lock() = Some(Arc::new(Kept {
                key,
                deferred_chosen: request.deferred_chosen,
                tools: tools
                    .iter()
                    .map(|t| (Arc::downgrade(t), spec_address(t.as_ref())))
                    .collect(),
                definitions: Arc::clone(&definitions),
            }));
        }
        Ok(definitions)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Kept>>> {
        self.last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use llm_tools_core::{BoxFuture, RawArgs, ToolContext, ToolOutcome, ToolOutput, ToolSpec};

    use super::*;

    struct Named(ToolSpec);

    impl Tool for Named {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }

        fn call<'a>(&'a self, _args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
            Box::pin(async { ToolOutcome::Output(ToolOutput::text("")) })
        }
    }

    fn tools(names: &[&str]) -> Vec<Arc<dyn Tool>> {
        names
            .iter()
            .map(|n| Arc::new(Named(ToolSpec::new(n.to_string(), "d"))) as Arc<dyn Tool>)
            .collect()
    }

    /// Gets the definitions of `tools`, counting the builds; each definition is the tool's name.
    fn get(
        kept: &KeptDefinitions,
        key: &'static str,
        budget: &SchemaBudget,
        tools: &[Arc<dyn Tool>],
        builds: &Cell<usize>,
    ) -> Vec<String> {
        get_chosen(kept, key, budget, tools, false, builds)
    }

    /// [`get`], for a request whose deferred tools were chosen or not.
    fn get_chosen(
        kept: &KeptDefinitions,
        key: &'static str,
        budget: &SchemaBudget,
        tools: &[Arc<dyn Tool>],
        chosen: bool,
        builds: &Cell<usize>,
    ) -> Vec<String> {
        let request = Request::new(&[], tools).with_deferred_chosen(chosen);
        let definitions = kept
            .get(key, budget, &request, || {
                builds.set(builds.get() + 1);
                tools
                    .iter()
                    .map(|t| serde_json::value::to_raw_value(t.spec().name()).map(Arc::from))
                    .map(|d| d.map(Some))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| wire_error(&e))
            })
            .unwrap();
        definitions.iter().map(|d| d.get().to_owned()).collect()
    }

    fn wire_error(e: &serde_json::Error) -> ProviderError {
        super::super::answers::request_error("test", e.to_string())
    }

    #[test]
    fn the_same_tools_are_built_once() {
        let kept = KeptDefinitions::default();
        let budget = SchemaBudget::default();
        let list = tools(&["a", "b"]);
        let builds = Cell::new(0);
        for _ in 0..3 {
            assert_eq!(
                get(&kept, "k", &budget, &list, &builds),
                [r#""a""#, r#""b""#]
            );
        }
        assert_eq!(builds.get(), 1);
        // The same tools in a new list (another chat's clone of the Arcs) are the same list.
        let again: Vec<_> = list.iter().map(Arc::clone).collect();
        get(&kept, "k", &budget, &again, &builds);
        assert_eq!(builds.get(), 1);
    }

    #[test]
    fn another_list_order_key_budget_or_choice_is_built_again() {
        let kept = KeptDefinitions::default();
        let budget = SchemaBudget::default();
        let list = tools(&["a", "b"]);
        let builds = Cell::new(0);
        get(&kept, "k", &budget, &list, &builds);
        let reversed = vec![Arc::clone(&list[1]), Arc::clone(&list[0])];
        assert_eq!(
            get(&kept, "k", &budget, &reversed, &builds),
            [r#""b""#, r#""a""#]
        );
        assert_eq!(builds.get(), 2);
        get(&kept, "k", &budget, &list[..1], &builds);
        assert_eq!(builds.get(), 3);
        get(&kept, "other", &budget, &list[..1], &builds);
        assert_eq!(builds.get(), 4);
        let small = SchemaBudget::new().with_max_nodes(10);
        get(&kept, "other", &small, &list[..1], &builds);
        get(&kept, "other", &small, &list[..1], &builds);
        assert_eq!(builds.get(), 6, "a budget of its own is built every time");
        get(&kept, "k", &budget, &list, &builds);
        get_chosen(&kept, "k", &budget, &list, true, &builds);
        assert_eq!(builds.get(), 8, "chosen deferred tools are another list");
        get_chosen(&kept, "k", &budget, &list, true, &builds);
        assert_eq!(builds.get(), 8);
    }

    #[test]
    fn new_tools_of_the_same_names_are_built_again() {
        let kept = KeptDefinitions::default();
        let budget = SchemaBudget::default();
        let builds = Cell::new(0);
        get(&kept, "k", &budget, &tools(&["a"]), &builds);
        // The first list is gone; a new tool of the same name cannot take its address.
        get(&kept, "k", &budget, &tools(&["a"]), &builds);
        assert_eq!(builds.get(), 2);
    }

    #[test]
    fn a_list_with_a_tool_left_out_is_not_kept() {
        let kept = KeptDefinitions::default();
        let budget = SchemaBudget::default();
        let list = tools(&["a", "b"]);
        let request = Request::new(&[], &list);
        let mut builds = 0;
        for _ in 0..2 {
            let definitions = kept
                .get("k", &budget, &request, || {
                    builds += 1;
                    // `b` is past the budget: left out.
                    let a = serde_json::value::to_raw_value("a").map_err(|e| wire_error(&e))?;
                    Ok(vec![Some(Arc::from(a)), None])
                })
                .unwrap();
            assert_eq!(definitions.len(), 1);
        }
        assert_eq!(builds, 2);
    }

    #[test]
    fn no_tools_build_nothing_kept() {
        let kept = KeptDefinitions::default();
        let builds = Cell::new(0);
        assert!(get(&kept, "k", &SchemaBudget::default(), &[], &builds).is_empty());
        assert!(kept.lock().is_none());
    }
}
