//! The conversion budget: how large a tool's schema may grow in a dialect before the tool is
//! refused.
//!
//! A schema from an MCP server is input like any other, and `$ref`s multiply it: a definition
//! whose properties each refer back to it is a few hundred bytes, yet inlined eight levels deep
//! it is fan-out⁸ schema objects, and a chain of definitions that each name the one before twice
//! is 2ⁿ. Every dialect's conversion counts against one [`SchemaBudget`] — schema objects, their
//! nesting, bytes — as it goes, and stops as soon as a limit is passed, so its memory stays
//! within the budget whatever the schema; the error, [`SchemaTooLarge`], names the limit and its
//! value. What a dialect sends is measured the way its provider reads it: every `$ref` followed
//! to the definition it names, except a reference back into a definition it is already inside
//! (recursion, which `$ref` is for), which counts once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Number, Value};

use super::shared::{SchemaNote, StrictSchema, is_data_keyword, local_ref};

/// How large a tool's schema may be in a provider's dialect: schema objects, nesting depth and
/// bytes, each counted with the schema's `$ref`s followed (a reference back into a definition
/// it is inside counts once). Every dialect converter takes one; a provider uses the one of its
/// configuration (`ProviderConfig::with_schema_budget`).
///
/// A tool whose schema is past the budget is left out of the request (the chat's other tools
/// still go out), with a warning on the `llm_tools::request` log target; a structured output
/// past it is a request error. [`check_portability_within`](super::check_portability_within)
/// reports such tools ahead of time ([`FindingKind::TooLarge`](super::FindingKind::TooLarge)).
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, SchemaLimit, openai};
/// use serde_json::json;
///
/// let budget = SchemaBudget::default().with_max_nodes(3);
/// assert_eq!(budget.max_nodes(), 3);
/// assert_eq!(budget.max_bytes(), SchemaBudget::DEFAULT_MAX_BYTES);
///
/// let three = json!({"type": "object", "properties": {
///     "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}
/// }});
/// let refused = openai::non_strict(&three, &budget).unwrap_err();
/// assert_eq!(refused.limit, SchemaLimit::Nodes);
/// assert_eq!(refused.max, 3);
/// assert!(openai::non_strict(&three, &SchemaBudget::default()).is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SchemaBudget {
    max_nodes: usize,
    max_bytes: usize,
    max_depth: usize,
}

impl SchemaBudget {
    /// The default number of schema objects: 20,000 (a tool's schema has tens to hundreds).
    pub const DEFAULT_MAX_NODES: usize = 20_000;
    /// The default size: 1 MiB of JSON.
    pub const DEFAULT_MAX_BYTES: usize = 1 << 20;
    /// The default nesting depth: 64 schema objects from the root to the deepest one.
    pub const DEFAULT_MAX_DEPTH: usize = 64;

    /// The default budget (20,000 schema objects, 1 MiB, 64 levels).
    pub const fn new() -> Self {
        Self {
            max_nodes: Self::DEFAULT_MAX_NODES,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
        }
    }

    /// Sets how many schema objects a schema may have, its `$ref`s followed, in the form a
    /// dialect sends (and while a conversion writes it).
    #[must_use]
    pub const fn with_max_nodes(mut self, max_nodes: usize) -> Self {
        self.max_nodes = max_nodes;
        self
    }

    /// Sets how many bytes a schema may have: the schema as given, the JSON a dialect sends,
    /// and what a conversion copies while it inlines `$ref`s (the remarks about a conversion,
    /// [`SchemaNote`]s, are kept up to as many bytes again; past that, one remark says how many
    /// were left out).
    #[must_use]
    pub const fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets how deep schema objects may nest, counted from the root (1), a `$ref` standing for
    /// the schema it names at its own level.
    #[must_use]
    pub const fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The most schema objects.
    pub const fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    /// The most bytes.
    pub const fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The deepest nesting.
    pub const fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The value of one limit.
    pub const fn limit(&self, limit: SchemaLimit) -> usize {
        match limit {
            SchemaLimit::Nodes => self.max_nodes,
            SchemaLimit::Bytes => self.max_bytes,
            SchemaLimit::Depth => self.max_depth,
        }
    }

    /// Whether `schema`, as it is sent, is within the budget: its schema objects and their
    /// depth counted with every local `$ref` followed (a reference back into a definition it is
    /// inside counts once), and its bytes as compact JSON. The count stops at the first limit
    /// passed, so it costs at most the budget whatever the schema.
    ///
    /// ```
    /// use llm_tools_providers::schema::{SchemaBudget, SchemaLimit};
    /// use serde_json::{Map, json};
    ///
    /// // Each definition names the one before twice: 2^30 objects once followed.
    /// let mut defs = Map::new();
    /// defs.insert("D0".into(), json!({"type": "string"}));
    /// for i in 1..=30 {
    ///     let prev = format!("#/$defs/D{}", i - 1);
    ///     defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": {"$ref": prev}, "b": {"$ref": prev}}}));
    /// }
    /// let bomb = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D30"}}, "$defs": defs});
    /// let refused = SchemaBudget::default().check(&bomb).unwrap_err();
    /// assert_eq!(refused.limit, SchemaLimit::Nodes);
    ///
    /// // A tree that refers to itself is no bomb: the reference back counts once.
    /// let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
    ///     "$defs": {"Node": {"type": "object", "properties": {
    ///         "left": {"$ref": "#/$defs/Node"}, "right": {"$ref": "#/$defs/Node"}}}}});
    /// assert!(SchemaBudget::default().check(&tree).is_ok());
    /// ```
    pub fn check(&self, schema: &Value) -> Result<(), SchemaTooLarge> {
        self.check_nodes(schema)?;
        match json_len(schema, self.max_bytes) {
            Some(_) => Ok(()),
            None => Err(SchemaTooLarge::new(SchemaLimit::Bytes, self.max_bytes)),
        }
    }

    /// The schema objects and their depth, `$ref`s followed, without recursion.
    fn check_nodes(&self, schema: &Value) -> Result<(), SchemaTooLarge> {
        let defs = schema
            .get("$defs")
            .or_else(|| schema.get("definitions"))
            .and_then(Value::as_object);
        // The definitions being expanded on each path: (name, the entry before it).
        let mut chains: Vec<(&str, Option<usize>)> = Vec::new();
        let on_chain = |chains: &[(&str, Option<usize>)], mut at: Option<usize>, name: &str| {
            while let Some(i) = at {
                match chains.get(i) {
                    Some((n, _)) if *n == name => return true,
                    Some((_, before)) => at = *before,
                    None => return false,
                }
            }
            false
        };
        let mut pending: Vec<(&Value, usize, Option<usize>)> = vec![(schema, 1, None)];
        let mut nodes = 0usize;
        while let Some((value, depth, chain)) = pending.pop() {
            let obj = match value {
                Value::Object(obj) => obj,
                Value::Array(items) => {
                    pending.extend(items.iter().map(|item| (item, depth, chain)));
                    continue;
                }
                _ => continue,
            };
            nodes += 1;
            if nodes > self.max_nodes {
                return Err(SchemaTooLarge::new(SchemaLimit::Nodes, self.max_nodes));
            }
            if depth > self.max_depth {
                return Err(SchemaTooLarge::new(SchemaLimit::Depth, self.max_depth));
            }
            let below = depth.saturating_add(1);
            if let Some(name) = obj.get("$ref").and_then(Value::as_str).and_then(local_ref)
                && let Some(target) = defs.and_then(|d| d.get(name))
                && !on_chain(&chains, chain, name)
            {
                // The reference stands for the schema it names, at its own level.
                chains.push((name, chain));
                pending.push((target, depth, Some(chains.len() - 1)));
            }
            for (key, child) in obj {
                if is_data_keyword(key) {
                    continue;
                }
                match (key.as_str(), child) {
                    ("$defs" | "definitions", Value::Object(named)) => {
                        for (name, def) in named {
                            chains.push((name.as_str(), chain));
                            pending.push((def, below, Some(chains.len() - 1)));
                        }
                    }
                    (
                        "properties" | "patternProperties" | "dependentSchemas",
                        Value::Object(named),
                    ) => {
                        pending.extend(named.values().map(|s| (s, below, chain)));
                    }
                    (_, Value::Object(_) | Value::Array(_)) => {
                        pending.push((child, below, chain));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Default for SchemaBudget {
    fn default() -> Self {
        Self::new()
    }
}

/// One limit of a [`SchemaBudget`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaLimit {
    /// [`SchemaBudget::max_nodes`]: schema objects, `$ref`s followed.
    Nodes,
    /// [`SchemaBudget::max_bytes`]: bytes of JSON.
    Bytes,
    /// [`SchemaBudget::max_depth`]: nesting, `$ref`s followed.
    Depth,
}

impl SchemaLimit {
    /// The limit's name (`max_nodes`, `max_bytes`, `max_depth`), as its builder is named
    /// (`SchemaBudget::with_max_nodes`, …).
    pub const fn name(self) -> &'static str {
        match self {
            SchemaLimit::Nodes => "max_nodes",
            SchemaLimit::Bytes => "max_bytes",
            SchemaLimit::Depth => "max_depth",
        }
    }
}

impl fmt::Display for SchemaLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A schema past a [`SchemaBudget`]: which limit, and its value. The request path and the
/// portability check name the tool.
///
/// ```
/// use llm_tools_providers::schema::{SchemaBudget, SchemaLimit, ollama};
/// use serde_json::json;
///
/// let deep = json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}});
/// let refused = ollama::parameters(&deep, &SchemaBudget::default().with_max_depth(2)).unwrap_err();
/// assert_eq!((refused.limit, refused.max), (SchemaLimit::Depth, 2));
/// assert_eq!(
///     refused.with_tool("lookup").to_string(),
///     "the schema of tool `lookup` nests schema objects more than 2 deep once its `$ref`s are \
///      followed (the schema budget's max_depth is 2; `SchemaBudget::with_max_depth` changes it)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SchemaTooLarge {
    /// The tool whose schema it is (its joined name), where known.
    pub tool: Option<String>,
    /// The limit passed.
    pub limit: SchemaLimit,
    /// The limit's value.
    pub max: usize,
}

impl SchemaTooLarge {
    pub(crate) fn new(limit: SchemaLimit, max: usize) -> Self {
        Self {
            tool: None,
            limit,
            max,
        }
    }

    /// The same error, naming the tool (its joined name).
    #[must_use]
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }
}

impl fmt::Display for SchemaTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "the schema of tool `{tool}` ")?,
            None => f.write_str("the schema ")?,
        }
        let max = self.max;
        match self.limit {
            SchemaLimit::Nodes => write!(
                f,
                "has more than {max} schema objects once its `$ref`s are followed"
            )?,
            SchemaLimit::Bytes => write!(f, "is larger than {max} bytes")?,
            SchemaLimit::Depth => write!(
                f,
                "nests schema objects more than {max} deep once its `$ref`s are followed"
            )?,
        }
        let name = self.limit.name();
        write!(
            f,
            " (the schema budget's {name} is {max}; `SchemaBudget::with_{name}` changes it)"
        )
    }
}

impl std::error::Error for SchemaTooLarge {}

/// Why a dialect does not convert a schema: what it cannot express, or a size past the budget.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConversionError {
    /// The dialect cannot express the schema (a strict dialect: the schema cannot be strict);
    /// each note says where and why.
    Unsupported(Vec<SchemaNote>),
    /// The schema, or its converted form, is past the budget.
    TooLarge(SchemaTooLarge),
}

impl ConversionError {
    /// What the dialect cannot express (empty for [`TooLarge`](Self::TooLarge)).
    pub fn notes(&self) -> &[SchemaNote] {
        match self {
            ConversionError::Unsupported(notes) => notes,
            ConversionError::TooLarge(_) => &[],
        }
    }

    /// The limit passed, for [`TooLarge`](Self::TooLarge).
    pub fn too_large(&self) -> Option<&SchemaTooLarge> {
        match self {
            ConversionError::TooLarge(e) => Some(e),
            ConversionError::Unsupported(_) => None,
        }
    }
}

impl From<SchemaTooLarge> for ConversionError {
    fn from(e: SchemaTooLarge) -> Self {
        ConversionError::TooLarge(e)
    }
}

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConversionError::Unsupported(notes) => {
                for (i, note) in notes.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    fmt::Display::fmt(note, f)?;
                }
                Ok(())
            }
            ConversionError::TooLarge(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ConversionError {}

/// What a conversion has written so far, against its budget: schema objects, and the bytes it
/// copied (the schema it started from, each definition it inlined). Each conversion asks before
/// it writes, and stops at the first limit passed.
pub(crate) struct Meter<'b> {
    budget: &'b SchemaBudget,
    nodes: usize,
    bytes: usize,
    remark_bytes: usize,
}

impl<'b> Meter<'b> {
    pub(crate) fn new(budget: &'b SchemaBudget) -> Self {
        Self {
            budget,
            nodes: 0,
            bytes: 0,
            remark_bytes: 0,
        }
    }

    /// One more schema object, `depth` levels down (the root is 1).
    pub(crate) fn node(&mut self, depth: usize) -> Result<(), SchemaTooLarge> {
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > self.budget.max_nodes {
            return Err(SchemaTooLarge::new(
                SchemaLimit::Nodes,
                self.budget.max_nodes,
            ));
        }
        if depth > self.budget.max_depth {
            return Err(SchemaTooLarge::new(
                SchemaLimit::Depth,
                self.budget.max_depth,
            ));
        }
        Ok(())
    }

    /// `value` is about to be copied into the conversion (the schema it starts from, a
    /// definition it inlines).
    pub(crate) fn copy(&mut self, value: &Value) -> Result<(), SchemaTooLarge> {
        let left = self.budget.max_bytes.saturating_sub(self.bytes);
        match json_len(value, left) {
            Some(n) => {
                self.bytes = self.bytes.saturating_add(n);
                Ok(())
            }
            None => Err(SchemaTooLarge::new(
                SchemaLimit::Bytes,
                self.budget.max_bytes,
            )),
        }
    }

    /// Adds a remark to `remarks`, unless the remarks so far hold the budget's bytes already.
    pub(crate) fn remark(&mut self, remarks: &mut Remarks, note: SchemaNote) {
        let size = note.path.len().saturating_add(note.message.len());
        let total = self.remark_bytes.saturating_add(size);
        if total > self.budget.max_bytes {
            remarks.left_out = remarks.left_out.saturating_add(1);
        } else {
            self.remark_bytes = total;
            remarks.kept.push(note);
        }
    }
}

/// What a conversion into a dialect notes as it goes, against its budget (`meter`): why the
/// schema cannot be converted, strict mode or a field's schema subset (`block`), and what the
/// converted form no longer enforces (`weaken`).
pub(crate) struct ConversionNotes<'b> {
    pub(crate) meter: Meter<'b>,
    blockers: Remarks,
    weakened: Remarks,
}

impl<'b> ConversionNotes<'b> {
    pub(crate) fn new(meter: Meter<'b>) -> Self {
        Self {
            meter,
            blockers: Remarks::default(),
            weakened: Remarks::default(),
        }
    }

    /// A reason the schema cannot be converted.
    pub(crate) fn blocker(&mut self, note: SchemaNote) {
        self.meter.remark(&mut self.blockers, note);
    }

    /// A reason, at `path`, the schema cannot be converted.
    pub(crate) fn block(&mut self, path: &str, message: impl Into<String>) {
        self.blocker(SchemaNote::new(path, message));
    }

    /// Something, at `path`, the converted form no longer enforces.
    pub(crate) fn weaken(&mut self, path: &str, message: impl Into<String>) {
        self.meter
            .remark(&mut self.weakened, SchemaNote::new(path, message));
    }

    /// The converted `schema`, with what it weakened; the reasons it cannot be converted when
    /// there are any, or the limit it passes when it is past `budget`.
    pub(crate) fn finish(
        self,
        schema: Value,
        budget: &SchemaBudget,
    ) -> Result<StrictSchema, ConversionError> {
        if !self.blockers.is_empty() {
            return Err(ConversionError::Unsupported(self.blockers.finish()));
        }
        budget.check(&schema)?;
        Ok(StrictSchema {
            schema,
            weakened: self.weakened.finish(),
        })
    }
}

/// Remarks about a conversion (why it cannot be strict, what it weakened), kept up to the
/// budget's bytes.
#[derive(Default)]
pub(crate) struct Remarks {
    kept: Vec<SchemaNote>,
    left_out: usize,
}

impl Remarks {
    /// Whether there is no remark at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.left_out == 0
    }

    /// The remarks, with one more saying how many were left out, if some were.
    pub(crate) fn finish(mut self) -> Vec<SchemaNote> {
        if self.left_out > 0 {
            self.kept.push(SchemaNote::new(
                "",
                format!(
                    "{} more remarks are left out (the remarks are kept up to the schema budget's max_bytes)",
                    self.left_out
                ),
            ));
        }
        self.kept
    }
}

/// A key as one token of a remark's path: a JSON-pointer token (`~` and `/` escaped), names
/// longer than 64 characters cut there with `…` (a remark's path must not cost more than the
/// schema it points into).
pub(crate) fn pointer_token(key: &str) -> Cow<'_, str> {
    const LONGEST: usize = 64;
    let cut = match key.char_indices().nth(LONGEST) {
        Some((at, _)) => &key[..at],
        None => key,
    };
    let escaped: Cow<'_, str> = if cut.contains(['~', '/']) {
        Cow::Owned(cut.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(cut)
    };
    if cut.len() < key.len() {
        Cow::Owned(format!("{escaped}…"))
    } else {
        escaped
    }
}

/// The length of `value` written as compact JSON (what `serde_json::to_vec` writes), or `None`
/// when it is longer than `limit`; counted without recursion, and stopped at `limit`.
pub(crate) fn json_len(value: &Value, limit: usize) -> Option<usize> {
    let mut total = 0usize;
    let mut pending = vec![value];
    let add = |n: usize, total: &mut usize| -> Option<()> {
        *total = total.checked_add(n)?;
        (*total <= limit).then_some(())
    };
    while let Some(v) = pending.pop() {
        match v {
            Value::Null => add(4, &mut total)?,
            Value::Bool(b) => add(if *b { 4 } else { 5 }, &mut total)?,
            Value::Number(n) => add(number_len(n), &mut total)?,
            Value::String(s) => add(string_len(s), &mut total)?,
            Value::Array(items) => {
                add(items.len().saturating_add(1).max(2), &mut total)?;
                pending.extend(items.iter());
            }
            Value::Object(map) => {
                add(map.len().saturating_add(1).max(2), &mut total)?;
                for (k, child) in map {
                    add(string_len(k).saturating_add(1), &mut total)?;
                    pending.push(child);
                }
            }
        }
    }
    Some(total)
}

/// A number's length as serde_json writes it (the same digits as its `Display`).
fn number_len(n: &Number) -> usize {
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 = self.0.saturating_add(s.len());
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = fmt::write(&mut count, format_args!("{n}"));
    count.0
}

/// A string's length as a JSON string, quotes and escapes included.
fn string_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .fold(2usize, usize::saturating_add)
}

/// The definitions that reach themselves through `$ref`s: the members of every cycle of the
/// reference graph (Tarjan's strongly connected components, without recursion, so a chain of
/// any length costs its length).
pub(crate) fn recursive_defs(defs: &Map<String, Value>) -> std::collections::HashSet<String> {
    let names: Vec<&str> = defs.keys().map(String::as_str).collect();
    let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = defs
        .values()
        .map(|def| {
            let mut out = Vec::new();
            refs(def, &mut |name| {
                if let Some(&i) = index.get(name) {
                    out.push(i);
                }
            });
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    let n = names.len();
    let mut order = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next = 0usize;
    let mut recursive = std::collections::HashSet::new();
    for start in 0..n {
        if order[start] != usize::MAX {
            continue;
        }
        // (node, how many of its edges are done)
        let mut calls: Vec<(usize, usize)> = vec![(start, 0)];
        order[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(top) = calls.last_mut() {
            let v = top.0;
            if let Some(&w) = edges[v].get(top.1) {
                top.1 += 1;
                if order[w] == usize::MAX {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let cycle = component.len() > 1 || edges[v].contains(&v);
                if cycle {
                    recursive.extend(component.iter().map(|&w| names[w].to_owned()));
                }
            }
        }
    }
    recursive
}

/// Calls `found` with the name of every local `$ref` inside `v` (data keywords skipped),
/// without recursion.
fn refs<'v>(v: &'v Value, found: &mut impl FnMut(&'v str)) {
    let mut pending = vec![v];
    while let Some(v) = pending.pop() {
        match v {
            Value::Object(o) => {
                if let Some(name) = o.get("$ref").and_then(Value::as_str).and_then(local_ref) {
                    found(name);
                }
                pending.extend(
                    o.iter()
                        .filter(|(k, _)| !is_data_keyword(k))
                        .map(|(_, child)| child),
                );
            }
            Value::Array(items) => pending.extend(items.iter()),
            _ => {}
        }
    }
}

/// The neutral schema without some root keywords (the meta keywords, say), once it is within
/// the budget: what the dialects that send a schema as it is send.
pub(crate) fn without_root_keywords(
    neutral: &Value,
    keywords: &[&str],
    budget: &SchemaBudget,
) -> Result<Value, SchemaTooLarge> {
    budget.check(neutral)?;
    let mut schema = neutral.clone();
    if let Value::Object(root) = &mut schema {
        for k in keywords {
            root.remove(*k);
        }
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_len_is_what_serde_json_writes() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(1e300),
            json!(-2.5e-7),
            json!(0.1),
            json!("plain"),
            json!(
                "quote \" backslash \\ newline \n tab \t cr \r bell \u{7} nul \u{0} del \u{7f} é ✓ 😀"
            ),
            json!([]),
            json!({}),
            json!([1, [2, [3, {}]], {"a": [null]}]),
            json!({"k\"ey": {"nested": [1.25, "x", {"y": false}]}, "": ""}),
        ];
        for v in values {
            let written = serde_json::to_vec(&v).unwrap().len();
            assert_eq!(json_len(&v, usize::MAX), Some(written), "{v}");
            assert_eq!(json_len(&v, written), Some(written), "{v}");
            assert_eq!(json_len(&v, written - 1), None, "{v}");
        }
    }

    #[test]
    fn recursive_definitions_are_the_members_of_cycles() {
        let defs = json!({
            "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
            "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"properties": {"c": {"$ref": "#/definitions/C"}}},
            "C": {"properties": {"a": {"$ref": "#/$defs/A"}}},
            "Leaf": {"type": "string"},
            "UsesLeaf": {"properties": {"l": {"$ref": "#/$defs/Leaf"}, "t": {"$ref": "#/$defs/Tree"}}},
            "DataOnly": {"default": {"$ref": "#/$defs/DataOnly"}}
        });
        let mut found: Vec<String> = recursive_defs(defs.as_object().unwrap())
            .into_iter()
            .collect();
        found.sort();
        assert_eq!(found, ["A", "B", "C", "Tree"]);
    }

    #[test]
    fn a_long_chain_of_definitions_is_walked_without_recursion() {
        let mut defs = Map::new();
        for i in 0..100_000 {
            defs.insert(
                format!("D{i}"),
                json!({"$ref": format!("#/$defs/D{}", i + 1)}),
            );
        }
        defs.insert("D100000".into(), json!({"$ref": "#/$defs/D0"}));
        assert_eq!(recursive_defs(&defs).len(), 100_001);
    }

    #[test]
    fn the_check_follows_refs_and_counts_recursion_once() {
        let budget = SchemaBudget::default().with_max_nodes(6);
        let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}});
        // root, properties.root, Node through it, Node.next; the $defs entry, its next.
        budget.check(&tree).unwrap();
        assert_eq!(
            budget.with_max_nodes(5).check(&tree).unwrap_err().limit,
            SchemaLimit::Nodes
        );
        assert_eq!(
            budget.with_max_depth(2).check(&tree).unwrap_err().limit,
            SchemaLimit::Depth
        );
        let len = serde_json::to_vec(&tree).unwrap().len();
        budget.with_max_bytes(len).check(&tree).unwrap();
        assert_eq!(
            budget.with_max_bytes(len - 1).check(&tree).unwrap_err(),
            SchemaTooLarge::new(SchemaLimit::Bytes, len - 1)
        );
    }

    #[test]
    fn remark_paths_cut_long_names() {
        assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
        let long = "é".repeat(100);
        let token = pointer_token(&long);
        assert_eq!(token.chars().count(), 65);
        assert!(token.ends_with('…'));
    }
}
