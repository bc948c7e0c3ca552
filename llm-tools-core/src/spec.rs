//! [`ToolSpec`]: everything the chat loop and the providers need to know about a tool.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::namespace::Namespace;

/// The longest tool name (or joined `namespace_name`) every provider accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Whether `name` matches `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, the subset of tool names that
/// OpenAI (both APIs), Anthropic, Gemini, Mistral and Bedrock all accept.
///
/// It is a `const fn`, so `#[tool]` checks names (joined names included) at compile time.
///
/// ```
/// use llm_tools_core::is_valid_tool_name;
///
/// assert!(is_valid_tool_name("crm_customer_lookup"));
/// assert!(!is_valid_tool_name("3d_render"));
/// assert!(!is_valid_tool_name("weather.lookup"));
/// ```
pub const fn is_valid_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_TOOL_NAME_LEN {
        return false;
    }
    if !(bytes[0].is_ascii_alphabetic() || bytes[0] == b'_') {
        return false;
    }
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return false;
        }
        i += 1;
    }
    true
}

/// What happens to a long tool result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpillToFile {
    /// Use the chat's limit (10,000 characters unless configured).
    #[default]
    Default,
    /// Always send the result whole (the tool already pages its output).
    Never,
    /// Keep results longer than this many characters in the chat's file store.
    After(usize),
}

/// Hints about what a tool does, for clients that show or gate tools (an MCP server lists them
/// as the tool's `annotations`). Each is unset unless the tool says; they are hints, never
/// guarantees, and no client should trust them from a server it does not trust.
///
/// ```
/// use llm_tools_core::{ToolAnnotations, ToolSpec};
///
/// let spec = ToolSpec::new("weather", "Gets the weather")
///     .with_annotations(ToolAnnotations::new().read_only(true).open_world(true));
/// assert_eq!(spec.annotations().read_only, Some(true));
/// assert_eq!(spec.annotations().destructive, None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool does not change its environment (MCP `readOnlyHint`).
    pub read_only: Option<bool>,
    /// It may destroy or overwrite what exists, when it is not read-only (MCP
    /// `destructiveHint`).
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments changes nothing more (MCP `idempotentHint`).
    pub idempotent: Option<bool>,
    /// It reaches an open world of entities, the web say, rather than a closed one (MCP
    /// `openWorldHint`).
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// No hints.
    pub const fn new() -> Self {
        Self {
            read_only: None,
            destructive: None,
            idempotent: None,
            open_world: None,
        }
    }

    /// Sets [`Self::read_only`].
    #[must_use]
    pub const fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Sets [`Self::destructive`].
    #[must_use]
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Sets [`Self::idempotent`].
    #[must_use]
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Sets [`Self::open_world`].
    #[must_use]
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Whether no hint is set.
    pub const fn is_empty(&self) -> bool {
        self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
    }
}

/// The description of one tool: name, namespace, description, parameter schema and the settings
/// the loop honours (`max_run_time`, `defer`, `spill_to_file`, `needs_approval`, `sequential`).
///
/// `#[tool]` builds one per tool type, once, and caches it; tools written by hand build theirs
/// with [`ToolSpec::new`] and keep it (a `static` `OnceLock`, or a field).
///
/// ```
/// use llm_tools_core::{Namespace, ToolSpec};
/// use serde_json::json;
///
/// const CRM: Namespace = Namespace::new("crm").description("Customer records");
///
/// let spec = ToolSpec::new("customer_lookup", "Finds a customer by email")
///     .with_parameters(json!({
///         "type": "object",
///         "properties": {"email": {"type": "string"}},
///         "required": ["email"]
///     }))
///     .with_namespace(Some(CRM));
///
/// assert_eq!(spec.name(), "customer_lookup");
/// assert_eq!(spec.joined_name(), "crm_customer_lookup");
/// assert_eq!(spec.namespace().map(|n| n.name()), Some("crm"));
/// assert!(spec.validate().is_ok());
/// ```
pub struct ToolSpec {
    name: Cow<'static, str>,
    namespace: Option<Namespace>,
    joined_name: Cow<'static, str>,
    description: Cow<'static, str>,
    parameters: Value,
    title: Option<Cow<'static, str>>,
    annotations: ToolAnnotations,
    output_schema: Option<Value>,
    max_run_time: Option<Duration>,
    defer: bool,
    spill_to_file: SpillToFile,
    needs_approval: bool,
    sequential: bool,
    max_retries: Option<u32>,
    provider_options: Map<String, Value>,
    definitions: DefinitionCache,
}

impl ToolSpec {
    /// A tool with no parameters (`{"type":"object","properties":{}}`) and no namespace.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
    ) -> Self {
        let name = name.into();
        Self {
            joined_name: name.clone(),
            name,
            namespace: None,
            description: description.into(),
            parameters: crate::schema::empty_object_schema(),
            title: None,
            annotations: ToolAnnotations::new(),
            output_schema: None,
            max_run_time: None,
            defer: false,
            spill_to_file: SpillToFile::Default,
            needs_approval: false,
            sequential: false,
            max_retries: None,
            provider_options: Map::new(),
            definitions: DefinitionCache::default(),
        }
    }

    /// Sets the JSON Schema of the parameters (an object schema, draft 2020-12).
    #[must_use]
    pub fn with_parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self.definitions = DefinitionCache::default();
        self
    }

    /// Puts the tool in a namespace (or takes it out with `None`).
    #[must_use]
    pub fn with_namespace(mut self, namespace: Option<Namespace>) -> Self {
        self.joined_name = match &namespace {
            Some(ns) => Cow::Owned(ns.join(&self.name)),
            None => self.name.clone(),
        };
        self.namespace = namespace;
        self
    }

    /// A title for people (a UI's label, an MCP client's list), beside the name models use.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Hints about what the tool does (read-only, destructive, …), for clients.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The JSON Schema (an object schema) of the tool's structured result, for clients that
    /// check or use it (an MCP server lists it as `outputSchema`). `#[tool]` sets it when the
    /// result type derives `JsonSchema` and is an object.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Option<Value>) -> Self {
        self.output_schema = schema;
        self
    }

    /// Sets how long one call may run before it is cancelled (and, in a durable store, how long
    /// its claim lasts). `None` uses the chat's default (10 minutes).
    #[must_use]
    pub fn with_max_run_time(mut self, max_run_time: Option<Duration>) -> Self {
        self.max_run_time = max_run_time;
        self
    }

    /// Leaves the tool out of requests until the model finds it through tool search (the
    /// provider's own, or the chat's: see [`crate::chat`]).
    #[must_use]
    pub fn with_defer(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    /// Sets what happens to long results.
    #[must_use]
    pub fn with_spill_to_file(mut self, spill: SpillToFile) -> Self {
        self.spill_to_file = spill;
        self
    }

    /// Requires an approval before every call runs.
    #[must_use]
    pub fn with_needs_approval(mut self, needs_approval: bool) -> Self {
        self.needs_approval = needs_approval;
        self
    }

    /// Makes the tool a barrier when a round's calls run in parallel: calls before it finish
    /// first, it runs alone, then the calls after it start.
    #[must_use]
    pub fn with_sequential(mut self, sequential: bool) -> Self {
        self.sequential = sequential;
        self
    }

    /// How many failed calls of this tool in a row a turn allows (recoverable errors, timeouts,
    /// arguments that do not decode); then the chat's
    /// [`RetriesExhausted`](crate::chat::RetriesExhausted) applies. `None` (the default): the
    /// chat's limit ([`ToolOptions::with_max_retries`](crate::chat::ToolOptions::with_max_retries)).
    #[must_use]
    pub fn with_max_retries(mut self, max_retries: Option<u32>) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Fields added to this tool's definition by one protocol, keyed by the protocol's id
    /// (`llm_tools_providers::protocol::ids`): a JSON object whose fields go beside the ones the
    /// library writes. `#[tool(provider_options(…))]` sets them with the same keys, checked at
    /// compile time.
    ///
    /// | id | where the fields go | for example |
    /// |---|---|---|
    /// | `"anthropic"` | the tool's entry | `cache_control`, `input_examples`, `eager_input_streaming`, `allowed_callers` |
    /// | `"openai-responses"` | the function tool's entry | `output_schema`, `allowed_callers` |
    /// | `"gemini"` | the function declaration | `behavior`, `response`, `responseJsonSchema` |
    /// | `"bedrock.converse"` | the entry's `toolSpec` | `strict` |
    ///
    /// A protocol reads only its own id's options: options for another protocol are not sent.
    /// A request fails, naming the tool and the field, when the options cannot be sent as
    /// given: under the id of a protocol whose definitions take no added fields
    /// (`"openai-chat"`, `"cohere"`, `"ollama"`), when they are not a JSON object, or when they
    /// set a field the library writes itself (the name, the description, the schema's field,
    /// `strict`, `defer_loading`, `type`): options add fields, they never replace the library's.
    /// Setting one protocol's options again replaces them.
    ///
    /// ```
    /// use llm_tools_core::ToolSpec;
    /// use serde_json::json;
    ///
    /// let spec = ToolSpec::new("weather", "Gets the weather")
    ///     .with_provider_options("anthropic", json!({"cache_control": {"type": "ephemeral"}}));
    /// assert_eq!(
    ///     spec.provider_options("anthropic"),
    ///     Some(&json!({"cache_control": {"type": "ephemeral"}}))
    /// );
    /// assert_eq!(spec.provider_options("gemini"), None);
    /// ```
    #[must_use]
    pub fn with_provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        self.provider_options.insert(provider.into(), options);
        self.definitions = DefinitionCache::default();
        self
    }

    /// The tool's own name (without its namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's namespace, if any.
    pub fn namespace(&self) -> Option<&Namespace> {
        self.namespace.as_ref()
    }

    /// The name as kept (borrowed for a `&'static str`), to share without copying.
    pub(crate) fn name_cow(&self) -> &Cow<'static, str> {
        &self.name
    }

    /// `{namespace}_{name}`, or the name when there is no namespace: the key in a chat.
    pub fn joined_name(&self) -> &str {
        &self.joined_name
    }

    /// What the tool does, as the model reads it.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON Schema of the parameters, in the neutral dialect: optional parameters are left
    /// out of `required` (never `["T","null"]`); providers transform it for their dialect.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// The title for people, if the tool has one.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// Hints about what the tool does.
    pub fn annotations(&self) -> &ToolAnnotations {
        &self.annotations
    }

    /// The JSON Schema of the tool's structured result, if it declares one.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The tool's own `max_run_time`, if it sets one.
    pub fn max_run_time(&self) -> Option<Duration> {
        self.max_run_time
    }

    /// Whether the tool is left out of requests until found by tool search.
    pub fn defer(&self) -> bool {
        self.defer
    }

    /// What happens to long results.
    pub fn spill_to_file(&self) -> SpillToFile {
        self.spill_to_file
    }

    /// Whether every call needs an approval (a tool may also decide per call, see
    /// [`Tool::needs_approval`](crate::Tool::needs_approval)).
    pub fn needs_approval(&self) -> bool {
        self.needs_approval
    }

    /// Whether the tool is a barrier when calls run in parallel.
    pub fn sequential(&self) -> bool {
        self.sequential
    }

    /// The tool's own limit of failed calls in a row within a turn, if it sets one.
    pub fn max_retries(&self) -> Option<u32> {
        self.max_retries
    }

    /// The fields this tool adds to its definition for the protocol with this id, if it has
    /// any (see [`Self::with_provider_options`]).
    pub fn provider_options(&self, provider: &str) -> Option<&Value> {
        self.provider_options.get(provider)
    }

    /// Checks what a provider would reject: the name or joined name outside
    /// `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, or a parameter schema that is not an object schema.
    pub fn validate(&self) -> Result<(), crate::error::Error> {
        if !is_valid_tool_name(&self.joined_name) {
            return Err(crate::error::ConfigError::InvalidToolName {
                name: self.joined_name.to_string(),
            }
            .into());
        }
        match self.parameters.get("type") {
            Some(Value::String(t)) if t == "object" => Ok(()),
            _ => Err(crate::error::ConfigError::ParametersNotObject {
                tool: self.joined_name.to_string(),
            }
            .into()),
        }
    }

    /// This tool's definition in one provider dialect, built by `build` the first time a dialect
    /// asks and reused afterwards: tool definitions are serialized once per dialect, not per
    /// request. `dialect` names the dialect and every setting that changes its output
    /// (`"openai-chat/strict"`, say).
    pub fn cached_definition<E>(
        &self,
        dialect: &'static str,
        build: impl FnOnce(&ToolSpec) -> Result<Box<RawValue>, E>,
    ) -> Result<Arc<RawValue>, E> {
        if let Some(found) = self.definitions.get(dialect) {
            return Ok(found);
        }
        let built: Arc<RawValue> = Arc::from(build(self)?);
        Ok(self.definitions.insert(dialect, built))
    }
}

impl Clone for ToolSpec {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            joined_name: self.joined_name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            title: self.title.clone(),
            annotations: self.annotations,
            output_schema: self.output_schema.clone(),
            max_run_time: self.max_run_time,
            defer: self.defer,
            spill_to_file: self.spill_to_file,
            needs_approval: self.needs_approval,
            sequential: self.sequential,
            max_retries: self.max_retries,
            provider_options: self.provider_options.clone(),
            definitions: DefinitionCache::default(),
        }
    }
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .field("title", &self.title)
            .field("annotations", &self.annotations)
            .field("output_schema", &self.output_schema)
            .field("max_run_time", &self.max_run_time)
            .field("defer", &self.defer)
            .field("spill_to_file", &self.spill_to_file)
            .field("needs_approval", &self.needs_approval)
            .field("sequential", &self.sequential)
            .field("max_retries", &self.max_retries)
            .field("provider_options", &self.provider_options)
            .finish_non_exhaustive()
    }
}

/// Serialized tool definitions, one per dialect. A handful of dialects at most: they fill a few
/// slots that are read without a lock (every request reads them), with a locked list for more.
#[derive(Default)]
pub(crate) struct DefinitionCache {
    slots: [OnceLock<(&'static str, Arc<RawValue>)>; 8],
    overflow: RwLock<Vec<(&'static str, Arc<RawValue>)>>,
}

fn same_dialect(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

impl DefinitionCache {
    pub(crate) fn get(&self, dialect: &str) -> Option<Arc<RawValue>> {
        for slot in &self.slots {
            match slot.get() {
                Some((key, def)) if same_dialect(key, dialect) => return Some(Arc::clone(def)),
                Some(_) => {}
                None => return None,
            }
        }
        let entries = self
            .overflow
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        entries
            .iter()
            .find(|(key, _)| same_dialect(key, dialect))
            .map(|(_, def)| Arc::clone(def))
    }

    /// Keeps `definition` unless another call kept one for this dialect first; returns the
    /// one kept.
    pub(crate) fn insert(&self, dialect: &'static str, definition: Arc<RawValue>) -> Arc<RawValue> {
        for slot in &self.slots {
            if slot.get().is_none() {
                // Taken by another dialect in the meantime: the check below moves on.
                let _ = slot.set((dialect, Arc::clone(&definition)));
            }
            match slot.get() {
                Some((key, def)) if same_dialect(key, dialect) => return Arc::clone(def),
                _ => {}
            }
        }
        let mut entries = self
            .overflow
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, existing)) = entries.iter().find(|(key, _)| same_dialect(key, dialect)) {
            return Arc::clone(existing);
        }
        entries.push((dialect, Arc::clone(&definition)));
        definition
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_name_rule_matches_the_cross_provider_subset() {
        for ok in [
            "a",
            "_x",
            "weather",
            "crm_customer-lookup",
            "A1",
            &"a".repeat(64),
        ] {
            assert!(is_valid_tool_name(ok), "{ok} should be valid");
        }
        for bad in ["", "1a", "-a", "a.b", "a b", "é", "a/b", &"a".repeat(65)] {
            assert!(!is_valid_tool_name(bad), "{bad} should be invalid");
        }
    }

    #[test]
    fn definitions_are_built_once_per_dialect() {
        let spec = ToolSpec::new("t", "d");
        let mut builds = 0;
        for _ in 0..3 {
            let def = spec
                .cached_definition("x", |s| {
                    builds += 1;
                    serde_json::value::to_raw_value(&serde_json::json!({"name": s.name()}))
                })
                .unwrap();
            assert_eq!(def.get(), r#"{"name":"t"}"#);
        }
        assert_eq!(builds, 1);
        let other = spec
            .cached_definition("y", |_| serde_json::value::to_raw_value(&1))
            .unwrap();
        assert_eq!(other.get(), "1");
    }

    #[test]
    fn more_dialects_than_slots_are_each_built_once() {
        const DIALECTS: [&str; 12] = [
            "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11",
        ];
        let spec = ToolSpec::new("t", "d");
        let mut builds = 0;
        for _ in 0..2 {
            for (i, dialect) in DIALECTS.iter().enumerate() {
                let def = spec
                    .cached_definition(dialect, |_| {
                        builds += 1;
                        serde_json::value::to_raw_value(&i)
                    })
                    .unwrap();
                assert_eq!(def.get(), i.to_string());
            }
        }
        assert_eq!(builds, DIALECTS.len());
    }

    #[test]
    fn joined_name_follows_namespace_changes() {
        let spec = ToolSpec::new("lookup", "d").with_namespace(Some(Namespace::new("crm")));
        assert_eq!(spec.joined_name(), "crm_lookup");
        let spec = spec.with_namespace(None);
        assert_eq!(spec.joined_name(), "lookup");
    }
}
