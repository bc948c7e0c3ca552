//! The portability check: which provider dialect would reject, leave out (past the schema
//! budget), send non-strictly, or weaken which tool.

use std::fmt;
use std::sync::Arc;

use llm_tools_core::Tool;

use llm_tools_core::{OutputSchema, ToolSpec};

use super::budget::{ConversionError, SchemaBudget, SchemaTooLarge};
use super::shared::SchemaNote;
use super::{anthropic, bedrock, gemini, ollama, openai};

/// A provider dialect the check knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Responses (strict where possible, native namespaces).
    OpenAiResponses,
    /// OpenAI Chat Completions (strict where possible, joined names).
    OpenAiChat,
    /// Anthropic Messages, `input_schema` without `strict` (the default).
    Anthropic,
    /// Anthropic Messages with strict tool use (`strict: true` where the schema allows).
    AnthropicStrict,
    /// Gemini with `parametersJsonSchema` (the default).
    GeminiJsonSchema,
    /// Gemini with the older `parameters` field (an OpenAPI subset).
    GeminiParameters,
    /// Bedrock Converse (`inputSchema.json`, forwarded to the model behind the id).
    Bedrock,
    /// Ollama's native `/api/chat` (a subset the server keeps; the rest moves to descriptions).
    Ollama,
    /// Cohere's v2 chat (JSON Schema as it is, with an object root).
    Cohere,
}

impl Dialect {
    /// Every dialect the check knows.
    pub const ALL: &'static [Dialect] = &[
        Dialect::OpenAiResponses,
        Dialect::OpenAiChat,
        Dialect::Anthropic,
        Dialect::AnthropicStrict,
        Dialect::GeminiJsonSchema,
        Dialect::GeminiParameters,
        Dialect::Bedrock,
        Dialect::Ollama,
        Dialect::Cohere,
    ];

    /// The dialect's name (`openai-responses`, `openai-chat`, `anthropic`, `anthropic/strict`,
    /// `gemini`, `gemini/parameters`, `bedrock`, `ollama`, `cohere`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::OpenAiResponses => "openai-responses",
            Dialect::OpenAiChat => "openai-chat",
            Dialect::Anthropic => "anthropic",
            Dialect::AnthropicStrict => "anthropic/strict",
            Dialect::GeminiJsonSchema => "gemini",
            Dialect::GeminiParameters => "gemini/parameters",
            Dialect::Bedrock => "bedrock",
            Dialect::Ollama => "ollama",
            Dialect::Cohere => "cohere",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FindingKind {
    /// The provider rejects the tool (the request fails).
    Rejected,
    /// The schema is past the [`SchemaBudget`] in this dialect: the tool is left out of every
    /// request, with a warning, and the chat's other tools still go out.
    /// [`Finding::too_large`] says which limit.
    TooLarge,
    /// The schema cannot be strict; the tool is sent non-strictly, so arguments are not
    /// guaranteed to match it.
    NotStrict,
    /// The tool is sent strictly, but part of its schema is not enforced.
    Weakened,
}

/// One finding about one tool in one dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The tool's joined name.
    pub tool: String,
    /// The dialect.
    pub dialect: Dialect,
    /// How bad it is.
    pub kind: FindingKind,
    /// Where in the neutral schema (a JSON pointer; empty for the tool itself).
    pub path: String,
    /// What.
    pub message: String,
    /// For [`FindingKind::TooLarge`] (and a strict form past the budget,
    /// [`FindingKind::NotStrict`]): the limit passed, naming the tool.
    pub too_large: Option<SchemaTooLarge>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FindingKind::Rejected => "rejected",
            FindingKind::TooLarge => "left out",
            FindingKind::NotStrict => "not strict",
            FindingKind::Weakened => "weakened",
        };
        write!(f, "{}: tool `{}` {kind}", self.dialect, self.tool)?;
        if !self.path.is_empty() {
            write!(f, " at `{}`", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// What [`check_portability`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortabilityReport {
    findings: Vec<Finding>,
}

impl PortabilityReport {
    /// Every finding, tool by tool.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Whether no dialect rejects a tool and every schema can be strict (weakenings allowed).
    pub fn is_portable(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.kind == FindingKind::Weakened)
    }

    /// Whether there is nothing at all to report.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// Fails the calling test, listing every finding (tool, dialect, where, what to change),
    /// unless [`is_portable`](Self::is_portable): the one line a CI test needs.
    ///
    /// ```
    /// use llm_tools_core::tool;
    /// use llm_tools_providers::schema::{check_spec_portability, Dialect};
    ///
    /// /// Gets the weather
    /// #[tool]
    /// async fn weather(city: String) -> String { city }
    ///
    /// check_spec_portability(&[Weather::tool_spec()], Dialect::ALL).assert_portable();
    /// ```
    ///
    /// # Panics
    ///
    /// When a dialect rejects a tool or cannot send it strictly; that is its purpose.
    #[track_caller]
    pub fn assert_portable(&self) {
        let blocking: Vec<String> = self
            .findings
            .iter()
            .filter(|f| f.kind != FindingKind::Weakened)
            .map(ToString::to_string)
            .collect();
        assert!(
            blocking.is_empty(),
            "{} finding(s) block portability:\n{}",
            blocking.len(),
            blocking.join("\n")
        );
    }

    /// The tools a dialect sends non-strictly.
    pub fn not_strict(&self, dialect: Dialect) -> Vec<&str> {
        let mut tools: Vec<&str> = self
            .findings
            .iter()
            .filter(|f| f.dialect == dialect && f.kind == FindingKind::NotStrict)
            .map(|f| f.tool.as_str())
            .collect();
        tools.dedup();
        tools
    }

    /// The tools a dialect leaves out of its requests, their schemas past the budget.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use llm_tools_core::{BoxFuture, RawArgs, Tool, ToolContext, ToolOutcome, ToolSpec};
    /// use llm_tools_providers::schema::{Dialect, SchemaBudget, SchemaLimit, check_portability_within};
    ///
    /// struct Wide(ToolSpec);
    /// impl Tool for Wide {
    ///     fn spec(&self) -> &ToolSpec { &self.0 }
    ///     fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
    ///         Box::pin(async { ToolOutcome::error("unused") })
    ///     }
    /// }
    /// let properties: serde_json::Map<_, _> =
    ///     (0..50).map(|i| (format!("p{i}"), serde_json::json!({"type": "string"}))).collect();
    /// let spec = ToolSpec::new("wide", "Takes fifty strings")
    ///     .with_parameters(serde_json::json!({"type": "object", "properties": properties}));
    /// let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Wide(spec))];
    ///
    /// let budget = SchemaBudget::default().with_max_nodes(40);
    /// let report = check_portability_within(&tools, Dialect::ALL, &budget);
    /// assert_eq!(report.too_large(Dialect::Bedrock), ["wide"]);
    /// let finding = report.for_tool("wide").find(|f| f.dialect == Dialect::Bedrock).unwrap();
    /// assert_eq!(finding.too_large.as_ref().unwrap().limit, SchemaLimit::Nodes);
    /// ```
    pub fn too_large(&self, dialect: Dialect) -> Vec<&str> {
        let mut tools: Vec<&str> = self
            .findings
            .iter()
            .filter(|f| f.dialect == dialect && f.kind == FindingKind::TooLarge)
            .map(|f| f.tool.as_str())
            .collect();
        tools.dedup();
        tools
    }

    /// The findings about one tool.
    pub fn for_tool<'a>(&'a self, joined_name: &'a str) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings.iter().filter(move |f| f.tool == joined_name)
    }
}

impl fmt::Display for PortabilityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.findings.is_empty() {
            return f.write_str("every tool is portable");
        }
        for finding in &self.findings {
            writeln!(f, "{finding}")?;
        }
        Ok(())
    }
}

/// Checks tools against dialects: what each would reject, leave out (past the default
/// [`SchemaBudget`]), send non-strictly, or weaken.
///
/// ```
/// use std::sync::{Arc, OnceLock};
/// use llm_tools_core::{BoxFuture, RawArgs, Tool, ToolContext, ToolOutcome, ToolSpec};
/// use llm_tools_providers::schema::{check_portability, Dialect};
///
/// struct Tags;
/// impl Tool for Tags {
///     fn spec(&self) -> &ToolSpec {
///         static SPEC: OnceLock<ToolSpec> = OnceLock::new();
///         SPEC.get_or_init(|| ToolSpec::new("tags", "Sets tags").with_parameters(serde_json::json!({
///             "type": "object",
///             "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}},
///             "required": ["tags"]
///         })))
///     }
///     fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
///         Box::pin(async { ToolOutcome::error("unused") })
///     }
/// }
///
/// let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Tags)];
/// let report = check_portability(&tools, Dialect::ALL);
/// assert!(!report.is_portable());
/// assert_eq!(report.not_strict(Dialect::OpenAiChat), ["tags"]);
/// assert_eq!(report.not_strict(Dialect::AnthropicStrict), ["tags"]);
/// // Gemini's `parameters` field cannot say what the map's values are.
/// assert!(report.for_tool("tags").any(|f| f.dialect == Dialect::GeminiParameters));
/// ```
pub fn check_portability(tools: &[Arc<dyn Tool>], dialects: &[Dialect]) -> PortabilityReport {
    check_portability_within(tools, dialects, &SchemaBudget::default())
}

/// [`check_portability`] against a provider's own [`SchemaBudget`] (the one given to
/// `ProviderConfig::with_schema_budget`): which tools it would leave out of its requests
/// ([`FindingKind::TooLarge`], [`PortabilityReport::too_large`]), for tools that come from an
/// MCP server, say.
pub fn check_portability_within(
    tools: &[Arc<dyn Tool>],
    dialects: &[Dialect],
    budget: &SchemaBudget,
) -> PortabilityReport {
    let mut findings = Vec::new();
    for tool in tools {
        check_spec(tool.spec(), dialects, budget, &mut findings);
    }
    PortabilityReport { findings }
}

/// [`check_portability`] on tool specs, which a `#[tool]` type (`Weather::tool_spec()`) and a
/// `#[toolset]` (`Crm::tool_specs()`) give without an instance: a schema check in CI needs no
/// database pool or client to build the toolset's state.
///
/// ```
/// use llm_tools_core::toolset;
/// use llm_tools_providers::schema::{check_spec_portability, Dialect};
///
/// pub struct Crm { /* a database pool */ }
///
/// #[toolset]
/// impl Crm {
///     /// Finds a customer by email
///     #[tool]
///     async fn find_customer(&self, email: String) -> Option<String> {
///         let _ = email;
///         None
///     }
/// }
///
/// let report = check_spec_portability(&Crm::tool_specs(), Dialect::ALL);
/// assert!(report.is_portable(), "{report}");
/// ```
pub fn check_spec_portability(specs: &[&ToolSpec], dialects: &[Dialect]) -> PortabilityReport {
    let mut findings = Vec::new();
    for spec in specs {
        check_spec(spec, dialects, &SchemaBudget::default(), &mut findings);
    }
    PortabilityReport { findings }
}

/// Checks a chat's structured output ([`OutputSchema`]) against dialects, as
/// [`check_portability`] checks tools: each provider sends the schema through the same
/// dialect as a tool's parameters (OpenAI's strict mode, Anthropic's and Bedrock's closed
/// objects — [`Dialect::AnthropicStrict`] —, Gemini's `responseJsonSchema`, …). Findings name
/// the schema (its [`name`](OutputSchema::name)) where they name a tool.
///
/// ```
/// use llm_tools_core::OutputSchema;
/// use llm_tools_providers::schema::{check_output_portability, Dialect};
/// use serde_json::json;
///
/// let person = OutputSchema::new("person", json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
///     "required": ["name", "age"]
/// }))?;
/// let report = check_output_portability(&person, Dialect::ALL);
/// assert!(report.is_portable(), "{report}");
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
pub fn check_output_portability(output: &OutputSchema, dialects: &[Dialect]) -> PortabilityReport {
    let spec = ToolSpec::new(output.name().to_owned(), "The structured answer")
        .with_parameters(output.schema().clone());
    let mut findings = Vec::new();
    check_spec(&spec, dialects, &SchemaBudget::default(), &mut findings);
    PortabilityReport { findings }
}

/// Records one finding: its kind, where, what, and the limit passed, if that is what it is.
type Push<'p> = dyn FnMut(FindingKind, &str, String, Option<SchemaTooLarge>) + 'p;

fn check_spec(
    spec: &ToolSpec,
    dialects: &[Dialect],
    budget: &SchemaBudget,
    findings: &mut Vec<Finding>,
) {
    let name = spec.joined_name().to_owned();
    let neutral = spec.parameters();
    let is_object = neutral.get("type").and_then(serde_json::Value::as_str) == Some("object");
    for &dialect in dialects {
        let push = &mut |kind, path: &str, message: String, too_large: Option<SchemaTooLarge>| {
            findings.push(Finding {
                tool: name.clone(),
                dialect,
                kind,
                path: path.to_owned(),
                message,
                too_large: too_large.map(|e| e.with_tool(name.as_str())),
            });
        };
        if let Err(e) = spec.validate() {
            push(FindingKind::Rejected, "", e.to_string(), None);
        }
        match dialect {
            Dialect::OpenAiResponses | Dialect::OpenAiChat => {
                check_openai(spec, dialect, budget, push);
            }
            Dialect::Anthropic | Dialect::AnthropicStrict => {
                check_anthropic(spec, dialect == Dialect::AnthropicStrict, budget, push);
            }
            Dialect::GeminiJsonSchema => report(
                gemini::json_schema(neutral, budget).map(|c| c.weakened),
                FindingKind::Rejected,
                push,
            ),
            Dialect::GeminiParameters => report(
                gemini::parameters(neutral, budget).map(|c| c.weakened),
                FindingKind::Rejected,
                push,
            ),
            Dialect::Bedrock => {
                let rejected = bedrock::rejected(spec.joined_name(), neutral);
                let converted = if rejected.is_empty() {
                    bedrock::input_schema(neutral, budget)
                        .map(|_| bedrock::weakened(neutral))
                        .map_err(ConversionError::TooLarge)
                } else {
                    Err(ConversionError::Unsupported(rejected))
                };
                report(converted, FindingKind::Rejected, push);
            }
            Dialect::Cohere => {
                let converted = if is_object {
                    budget
                        .check(neutral)
                        .map(|()| Vec::new())
                        .map_err(ConversionError::TooLarge)
                } else {
                    Err(ConversionError::Unsupported(vec![SchemaNote::new(
                        "",
                        "Cohere needs a tool's parameters to be `type: \"object\"`",
                    )]))
                };
                report(converted, FindingKind::Rejected, push);
            }
            Dialect::Ollama => {
                let converted = if is_object {
                    ollama::parameters(neutral, budget)
                        .map(|c| c.weakened)
                        .map_err(ConversionError::TooLarge)
                } else {
                    Err(ConversionError::Unsupported(vec![SchemaNote::new(
                        "",
                        "Ollama needs the root of a tool's parameters to be `type: \"object\"`",
                    )]))
                };
                report(converted, FindingKind::Rejected, push);
            }
        }
    }
}

fn check_openai(spec: &ToolSpec, dialect: Dialect, budget: &SchemaBudget, push: &mut Push<'_>) {
    if dialect == Dialect::OpenAiResponses
        && let Some(ns) = spec.namespace()
    {
        if ns.get_description().is_none() {
            push(
                FindingKind::Rejected,
                "",
                format!(
                    "namespace `{}` has no description, which Responses requires",
                    ns.name()
                ),
                None,
            );
        }
        if matches!(ns.name(), "computer" | "browser") {
            push(
                FindingKind::Rejected,
                "",
                format!(
                    "the namespace name `{}` is reserved on Responses",
                    ns.name()
                ),
                None,
            );
        }
    }
    for note in openai::rejected(spec.parameters()) {
        push(FindingKind::Rejected, &note.path, note.message, None);
    }
    if let Err(e) = openai::non_strict(spec.parameters(), budget) {
        return too_large(e, push);
    }
    report(
        openai::strict(spec.parameters(), budget).map(|s| s.weakened),
        FindingKind::NotStrict,
        push,
    );
}

/// Reports a schema past the budget: the tool is left out.
fn too_large(e: SchemaTooLarge, push: &mut Push<'_>) {
    push(FindingKind::TooLarge, "", e.to_string(), Some(e));
}

/// Reports what a conversion weakened, or (as `failed`) why it failed; a schema past the
/// budget is [`FindingKind::TooLarge`] where the tool would not be sent at all, and `failed`
/// (the strict form cannot be sent) where the plain form goes instead.
fn report(
    converted: Result<Vec<SchemaNote>, ConversionError>,
    failed: FindingKind,
    push: &mut Push<'_>,
) {
    match converted {
        Ok(weakened) => {
            for note in weakened {
                push(FindingKind::Weakened, &note.path, note.message, None);
            }
        }
        Err(ConversionError::Unsupported(notes)) => {
            for note in notes {
                push(failed, &note.path, note.message, None);
            }
        }
        Err(ConversionError::TooLarge(e)) if failed == FindingKind::NotStrict => {
            push(failed, "", e.to_string(), Some(e));
        }
        Err(ConversionError::TooLarge(e)) => too_large(e, push),
    }
}

fn check_anthropic(spec: &ToolSpec, strict: bool, budget: &SchemaBudget, push: &mut Push<'_>) {
    match anthropic::native_toolset_member(spec.namespace().map(|n| n.name()), spec.name()) {
        Err(reason) => push(FindingKind::Rejected, "", reason, None),
        Ok(Some(member)) => {
            // A toolset member's input is Anthropic's, not the tool's schema.
            push(
                FindingKind::Weakened,
                "",
                format!(
                    "sent as the member `{member}` of Anthropic's computer-use toolset: the model sends Anthropic's input for it, not this schema"
                ),
                None,
            );
            return;
        }
        Ok(None) => {}
    }
    for note in anthropic::rejected(spec.parameters()) {
        push(FindingKind::Rejected, &note.path, note.message, None);
    }
    if let Err(e) = anthropic::input_schema(spec.parameters(), budget) {
        return too_large(e, push);
    }
    if !strict
        || spec
            .parameters()
            .get("type")
            .and_then(serde_json::Value::as_str)
            != Some("object")
    {
        return;
    }
    report(
        anthropic::strict(spec.parameters(), budget).map(|s| s.weakened),
        FindingKind::NotStrict,
        push,
    );
}
