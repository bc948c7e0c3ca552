//! The portability check: which provider dialect would reject, or send non-strictly, or weaken
//! which tool.

use std::fmt;
use std::sync::Arc;

use llm_tools_core::Tool;

use llm_tools_core::{OutputSchema, ToolSpec};

use super::{SchemaNote, anthropic, bedrock, gemini, ollama, openai};

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
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FindingKind::Rejected => "rejected",
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

/// Checks tools against dialects: what each would reject, send non-strictly, or weaken.
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
    let mut findings = Vec::new();
    for tool in tools {
        check_spec(tool.spec(), dialects, &mut findings);
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
        check_spec(spec, dialects, &mut findings);
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
    check_spec(&spec, dialects, &mut findings);
    PortabilityReport { findings }
}

fn check_spec(spec: &ToolSpec, dialects: &[Dialect], findings: &mut Vec<Finding>) {
    {
        let name = spec.joined_name().to_owned();
        for &dialect in dialects {
            let mut push = |kind, path: &str, message: String| {
                findings.push(Finding {
                    tool: name.clone(),
                    dialect,
                    kind,
                    path: path.to_owned(),
                    message,
                });
            };
            if let Err(e) = spec.validate() {
                push(FindingKind::Rejected, "", e.to_string());
            }
            match dialect {
                Dialect::OpenAiResponses | Dialect::OpenAiChat => {
                    check_openai(spec, dialect, &mut push);
                }
                Dialect::Anthropic | Dialect::AnthropicStrict => {
                    check_anthropic(spec, dialect == Dialect::AnthropicStrict, &mut push);
                }
                Dialect::GeminiJsonSchema => report(
                    gemini::json_schema(spec.parameters()).map(|c| c.weakened),
                    FindingKind::Rejected,
                    &mut push,
                ),
                Dialect::GeminiParameters => report(
                    gemini::parameters(spec.parameters()).map(|c| c.weakened),
                    FindingKind::Rejected,
                    &mut push,
                ),
                Dialect::Bedrock => {
                    let rejected = bedrock::rejected(spec.joined_name(), spec.parameters());
                    let converted = if rejected.is_empty() {
                        Ok(bedrock::weakened(spec.parameters()))
                    } else {
                        Err(rejected)
                    };
                    report(converted, FindingKind::Rejected, &mut push);
                }
                Dialect::Cohere => {
                    if spec
                        .parameters()
                        .get("type")
                        .and_then(serde_json::Value::as_str)
                        != Some("object")
                    {
                        push(
                            FindingKind::Rejected,
                            "",
                            "Cohere needs a tool's parameters to be `type: \"object\"`".into(),
                        );
                    }
                }
                Dialect::Ollama => {
                    let converted = if spec
                        .parameters()
                        .get("type")
                        .and_then(serde_json::Value::as_str)
                        == Some("object")
                    {
                        Ok(ollama::parameters(spec.parameters()).weakened)
                    } else {
                        Err(vec![SchemaNote::new(
                            "",
                            "Ollama needs the root of a tool's parameters to be `type: \"object\"`",
                        )])
                    };
                    report(converted, FindingKind::Rejected, &mut push);
                }
            }
        }
    }
}

fn check_openai(
    spec: &ToolSpec,
    dialect: Dialect,
    push: &mut impl FnMut(FindingKind, &str, String),
) {
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
            );
        }
    }
    for note in openai::rejected(spec.parameters()) {
        push(FindingKind::Rejected, &note.path, note.message);
    }
    report(
        openai::strict(spec.parameters()).map(|s| s.weakened),
        FindingKind::NotStrict,
        push,
    );
}

/// Reports what a conversion weakened, or (as `failed`) why it failed.
fn report(
    converted: Result<Vec<SchemaNote>, Vec<SchemaNote>>,
    failed: FindingKind,
    push: &mut impl FnMut(FindingKind, &str, String),
) {
    let (kind, notes) = match converted {
        Ok(weakened) => (FindingKind::Weakened, weakened),
        Err(notes) => (failed, notes),
    };
    for note in notes {
        push(kind, &note.path, note.message);
    }
}

fn check_anthropic(
    spec: &ToolSpec,
    strict: bool,
    push: &mut impl FnMut(FindingKind, &str, String),
) {
    match anthropic::native_toolset_member(spec.namespace().map(|n| n.name()), spec.name()) {
        Err(reason) => push(FindingKind::Rejected, "", reason),
        Ok(Some(member)) => {
            // A toolset member's input is Anthropic's, not the tool's schema.
            push(
                FindingKind::Weakened,
                "",
                format!(
                    "sent as the member `{member}` of Anthropic's computer-use toolset: the model sends Anthropic's input for it, not this schema"
                ),
            );
            return;
        }
        Ok(None) => {}
    }
    for note in anthropic::rejected(spec.parameters()) {
        push(FindingKind::Rejected, &note.path, note.message);
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
        anthropic::strict(spec.parameters()).map(|s| s.weakened),
        FindingKind::NotStrict,
        push,
    );
}
