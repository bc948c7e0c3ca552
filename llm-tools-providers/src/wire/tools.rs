//! Tools and calls on the wire: the forced tool of a request, errors for tool choices a
//! protocol cannot express, calls written back in the answer's order, arguments as objects,
//! fresh call ids, and what a message keeps for its protocol.

use llm_tools_core::{Message, ProviderError, Request, ToolCall, ToolChoice, ToolSpec};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;

use super::answers::request_error;

/// The tool a request forces by name, if it does.
pub(crate) fn forced_tool<'a>(request: &Request<'a>) -> Option<&'a str> {
    match request.choice {
        ToolChoice::Tool(joined) => Some(joined.as_str()),
        _ => None,
    }
}

/// The error for a forced tool that is not among the request's tools.
pub(crate) fn unknown_forced_tool(name: &str, joined: &str) -> ProviderError {
    request_error(
        name,
        format!("the tool choice names `{joined}`, which is not among the request's tools"),
    )
}

/// The error for a tool choice the protocol cannot express.
pub(crate) fn unsupported_choice(name: &str, choice: &ToolChoice) -> ProviderError {
    request_error(name, format!("the tool choice {choice:?} is not supported"))
}

/// What a message's provider data keeps under `key` for `protocol`.
pub(crate) fn protocol_data<'m>(
    message: &'m Message,
    protocol: &str,
    key: &str,
) -> Option<&'m Value> {
    message
        .provider_data
        .as_ref()
        .and_then(|d| d.for_protocol(protocol))
        .and_then(|d| d.get(key))
}

/// The tool calls of an assistant message, each written once: where the answer's recorded
/// order places it ([`take`](Self::take)), and the others after ([`rest`](Self::rest)).
///
/// The recorded order names calls by id, in the order the calls themselves are in, so the
/// call wanted is almost always the first one not taken: found at once. Otherwise (calls
/// removed or reordered since) the calls are looked up by id, indexed the first time, so a
/// message of many calls costs no more than its length. A recorded id that names only calls
/// already taken is one the chat renamed (a server that gave two calls the same id): the next
/// call not taken goes there.
pub(crate) struct CallsInOrder<'a> {
    calls: &'a [ToolCall],
    done: Vec<bool>,
    /// No call before it is left to take.
    next: usize,
    /// Each id's calls, in order; built the first time a call is not at `next`.
    by_id: Option<HashMap<&'a str, Vec<usize>>>,
}

impl<'a> CallsInOrder<'a> {
    pub(crate) fn new(calls: &'a [ToolCall]) -> Self {
        Self {
            calls,
            done: vec![false; calls.len()],
            next: 0,
            by_id: None,
        }
    }

    /// The call with this id, unless it was taken already (then, when it was, the next call
    /// not taken: see the type's notes).
    pub(crate) fn take(&mut self, id: Option<&str>) -> Option<&'a ToolCall> {
        let id = id?;
        while self.done.get(self.next).copied().unwrap_or(false) {
            self.next += 1;
        }
        let i = if self.calls.get(self.next).is_some_and(|c| c.id == id) {
            self.next
        } else {
            let calls = self.calls;
            let by_id = self.by_id.get_or_insert_with(|| {
                let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
                for (i, call) in calls.iter().enumerate() {
                    by_id.entry(call.id.as_str()).or_default().push(i);
                }
                by_id
            });
            let named = by_id.get(id)?;
            match named.iter().copied().find(|&i| !self.done[i]) {
                Some(i) => i,
                None => self.next,
            }
        };
        let call = self.calls.get(i)?;
        *self.done.get_mut(i)? = true;
        Some(call)
    }

    /// The calls not taken, in their order.
    pub(crate) fn rest(self) -> impl Iterator<Item = &'a ToolCall> {
        self.calls
            .iter()
            .zip(self.done)
            .filter_map(|(call, done)| (!done).then_some(call))
    }
}

/// Items of a list looked up by id: the first item of each id. A short list is scanned; past
/// [`ById::SCAN_MAX`] items an index is built once, so looking each of a round's many calls or
/// results up costs the round's length, never its square (an answer of 100,000 calls is
/// written back in milliseconds, not minutes).
pub(crate) struct ById<'a, T> {
    items: &'a [T],
    id_of: fn(&'a T) -> Option<&'a str>,
    index: Option<HashMap<&'a str, &'a T>>,
}

impl<'a, T> ById<'a, T> {
    /// Past this many items, an index.
    pub(crate) const SCAN_MAX: usize = 16;

    pub(crate) fn new(items: &'a [T], id_of: fn(&'a T) -> Option<&'a str>) -> Self {
        let index = (items.len() > Self::SCAN_MAX).then(|| {
            let mut index = HashMap::with_capacity(items.len());
            for item in items {
                if let Some(id) = id_of(item) {
                    index.entry(id).or_insert(item);
                }
            }
            index
        });
        Self {
            items,
            id_of,
            index,
        }
    }

    /// The first item with this id.
    pub(crate) fn get(&self, id: &str) -> Option<&'a T> {
        match &self.index {
            Some(index) => index.get(id).copied(),
            None => self
                .items
                .iter()
                .find(|item| (self.id_of)(item) == Some(id)),
        }
    }
}

/// A call's arguments as the JSON object the protocol takes: the JSON text the model sent, or
/// `{}` when it is not one JSON object.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum ArgumentsObject<'a> {
    Raw(&'a RawValue),
    Empty(Map<String, Value>),
}

impl<'a> ArgumentsObject<'a> {
    pub(crate) fn of(call: &'a ToolCall) -> Self {
        match serde_json::from_str::<&RawValue>(&call.arguments) {
            Ok(raw) if raw.get().trim_start().starts_with('{') => ArgumentsObject::Raw(raw),
            _ => ArgumentsObject::Empty(Map::new()),
        }
    }
}

/// A call as an answer gives it: its id (a fresh one when the server sent none or an empty
/// one), its tool's name and namespace (as [`NameMap::resolve`](crate::protocol::NameMap::resolve)
/// gives them back), and its arguments as the JSON text they came as (`{}` when blank).
pub(crate) fn call_read(
    id: &str,
    (name, namespace): (String, Option<String>),
    arguments: String,
) -> ToolCall {
    let id = if id.is_empty() {
        fresh_call_id()
    } else {
        id.to_owned()
    };
    let arguments = if is_blank(&arguments) {
        "{}".to_owned()
    } else {
        arguments
    };
    ToolCall::new(id, name, arguments).with_namespace(namespace)
}

/// Whether a protocol without native tool search sends `spec`'s tool: every tool when the chat
/// chose the deferred ones it offers ([`Request::deferred_chosen`]: its own search found them),
/// else only the tools not deferred.
pub(crate) fn sent_without_native_search(request: &Request<'_>, spec: &ToolSpec) -> bool {
    request.deferred_chosen || !spec.defer()
}

/// The arguments as written back: `{}` for blank ones ([`is_blank`]), else as they are.
pub(crate) fn arguments_text(arguments: &str) -> &str {
    if is_blank(arguments) { "{}" } else { arguments }
}

/// Whether `text` is empty or only whitespace (`text.trim().is_empty()`, looking no further
/// than the first other character: arguments are written back with every request).
pub(crate) fn is_blank(text: &str) -> bool {
    text.chars().all(char::is_whitespace)
}

/// A fresh call id for servers that send none.
pub(crate) fn fresh_call_id() -> String {
    let mut id = String::from("call_");
    for _ in 0..24 {
        id.push(fastrand::alphanumeric());
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter().map(|id| ToolCall::new(*id, "f", "{}")).collect()
    }

    /// Scanned or indexed, a lookup finds the first item of an id, and nothing for an id no
    /// item has.
    #[test]
    fn by_id_finds_the_first_item_of_an_id_scanned_or_indexed() {
        for n in [3, ById::<ToolCall>::SCAN_MAX + 1, 1_000] {
            let mut list: Vec<ToolCall> = (0..n)
                .map(|i| ToolCall::new(format!("c{i}"), format!("f{i}"), "{}"))
                .collect();
            list.push(ToolCall::new("c1", "again", "{}"));
            let by_id = ById::new(&list, |c| Some(c.id.as_str()));
            assert_eq!(
                by_id.index.is_some(),
                list.len() > ById::<ToolCall>::SCAN_MAX
            );
            assert_eq!(by_id.get("c1").map(|c| c.name.as_str()), Some("f1"));
            let last = format!("c{}", n - 1);
            let expected = format!("f{}", n - 1);
            assert_eq!(
                by_id.get(&last).map(|c| c.name.as_str()),
                Some(expected.as_str())
            );
            assert!(by_id.get("missing").is_none());
        }
    }

    fn taken(calls: &[ToolCall], recorded: &[&str]) -> (Vec<Option<String>>, Vec<String>) {
        let mut in_order = CallsInOrder::new(calls);
        let taken = recorded
            .iter()
            .map(|id| in_order.take(Some(id)).map(|c| c.id.clone()))
            .collect();
        let rest = in_order.rest().map(|c| c.id.clone()).collect();
        (taken, rest)
    }

    fn ids(ids: &[&str]) -> Vec<Option<String>> {
        ids.iter().map(|id| Some((*id).to_owned())).collect()
    }

    #[test]
    fn calls_go_where_the_recorded_order_names_them() {
        let c = calls(&["a", "b", "c"]);
        assert_eq!(taken(&c, &["a", "b", "c"]), (ids(&["a", "b", "c"]), vec![]));
        assert_eq!(taken(&c, &["c", "a", "b"]), (ids(&["c", "a", "b"]), vec![]));
        // An id naming no call takes none; the call not named comes after.
        let (got, rest) = taken(&c, &["a", "gone", "c"]);
        assert_eq!(got, [Some("a".into()), None, Some("c".into())]);
        assert_eq!(rest, ["b"]);
    }

    /// A server that gave two calls one id: the chat renamed the second, and the recorded
    /// order still names it by the first's id. It goes in its place, not after the others.
    #[test]
    fn a_call_renamed_for_a_repeated_id_keeps_its_place() {
        let c = calls(&["a", "call_1_1", "b"]);
        assert_eq!(
            taken(&c, &["a", "a", "b"]),
            (ids(&["a", "call_1_1", "b"]), vec![])
        );
    }

    #[test]
    fn many_calls_in_their_order_or_reversed_each_go_once() {
        let names: Vec<String> = (0..5000).map(|i| format!("call_{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let c = calls(&refs);
        let mut reversed = refs.clone();
        reversed.reverse();
        for order in [&refs, &reversed] {
            let (got, rest) = taken(&c, order);
            assert!(rest.is_empty());
            assert_eq!(got, ids(order));
        }
    }
}

/// The calls a stream closed, each with the place its `ToolCallStarted` event gave it (its
/// `index`), put in that order: a stream closes its calls in the order it started them, but
/// one that does not (blocks left open across others) still gives the answer its calls where
/// its events said they are. Sorted once at the end, so a stream closing many calls backwards
/// costs `n log n`, not `n²`.
#[derive(Debug, Default)]
pub(crate) struct CallsInStartOrder {
    calls: Vec<ToolCall>,
    starts: Vec<usize>,
}

impl CallsInStartOrder {
    /// `call`, the one the stream started at `start`.
    pub(crate) fn push(&mut self, start: usize, call: ToolCall) {
        self.starts.push(start);
        self.calls.push(call);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    /// The calls in the order they started.
    pub(crate) fn into_calls(self) -> Vec<ToolCall> {
        let Self { calls, starts } = self;
        if starts.is_sorted() {
            return calls;
        }
        let mut paired: Vec<(usize, ToolCall)> = starts.into_iter().zip(calls).collect();
        paired.sort_by_key(|(start, _)| *start);
        paired.into_iter().map(|(_, call)| call).collect()
    }
}

#[cfg(test)]
mod calls_in_start_order {
    use super::*;

    #[test]
    fn calls_closed_out_of_order_come_out_in_the_order_they_started() {
        let mut calls = CallsInStartOrder::default();
        for start in [2, 0, 3, 1] {
            calls.push(start, ToolCall::new(format!("c{start}"), "f", "{}"));
        }
        let ids: Vec<String> = calls.into_calls().into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["c0", "c1", "c2", "c3"]);
    }
}
