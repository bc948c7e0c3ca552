//! Provider tools: the tools a provider runs on its own servers (web search, code execution,
//! file search, URL context), offered beside the chat's function tools
//! ([`Chat::with_provider_tool`](crate::Chat::with_provider_tool)), and what they leave in an
//! answer ([`ServerToolUse`], [`Citation`]).
//!
//! The chat never runs these: the provider does, within one answer, and the answer carries
//! what it did. Each provider sends a [`ProviderTool`] in its own form, or refuses the request
//! with a clear error when it has no such tool; [`ProviderTool::raw`] sends a definition as it
//! is, for a tool (or an option) the library has no type for.
//!
//! ```
//! use llm_tools_core::chat::Chat;
//! use llm_tools_core::testing::ScriptedProvider;
//! use llm_tools_core::{ProviderTool, WebSearch};
//!
//! let model = ScriptedProvider::new();
//! let mut chat = Chat::new(model);
//! chat.with_provider_tool(ProviderTool::WebSearch(
//!     WebSearch::default().with_max_uses(3).with_allowed_domains(["ruby-lang.org"]),
//! ))
//! .with_provider_tool(ProviderTool::CodeExecution);
//! assert_eq!(chat.provider_tools().len(), 2);
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the provider runs on its own servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProviderTool {
    /// Searches the web (Responses `web_search`, Anthropic `web_search`, Gemini
    /// `google_search`, Bedrock Nova grounding, OpenRouter's `openrouter:web_search`).
    WebSearch(WebSearch),
    /// Runs code in the provider's sandbox (Responses `code_interpreter`, Anthropic
    /// `code_execution`, Gemini `code_execution`).
    CodeExecution,
    /// Searches the user's vector stores (Responses `file_search`).
    FileSearch {
        /// The vector stores to search.
        vector_store_ids: Vec<String>,
        /// The most results the search returns.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_results: Option<u32>,
    },
    /// Reads the pages at URLs named in the conversation (Gemini `url_context`).
    UrlContext,
    /// Fetches the pages and PDFs at URLs the conversation names, whole (Anthropic
    /// `web_fetch`, a beta: `AnthropicConfig::with_web_fetch`).
    WebFetch(WebFetch),
    /// Makes or edits images (Responses `image_generation`); each image comes back as an image
    /// part of the answer's content.
    ImageGeneration(ImageGeneration),
    /// Searches posts on X (xAI's Responses `x_search`).
    XSearch(XSearch),
    /// A remote MCP server the provider connects to and whose tools it calls itself, within
    /// the answer (Responses `mcp`, Anthropic's MCP connector, Gemini `mcpServers`). Its
    /// token, where it needs one, is part of the provider's configuration (`with_mcp_token`),
    /// never of the chat's state.
    RemoteMcp(RemoteMcp),
    /// A definition sent as it is to one protocol (named as [`Provider::protocol`] names it:
    /// `"openai-responses"`, `"anthropic"`, …), and left out for every other.
    ///
    /// [`Provider::protocol`]: crate::Provider::protocol
    Raw {
        /// The protocol the definition is for.
        protocol: String,
        /// The definition, as that protocol's `tools` array takes it.
        definition: Value,
    },
}

impl ProviderTool {
    /// A definition sent as it is to `protocol`'s `tools` array.
    ///
    /// ```
    /// use llm_tools_core::ProviderTool;
    /// use serde_json::json;
    ///
    /// let fetch = ProviderTool::raw("anthropic", json!({"type": "web_fetch_20250910", "name": "web_fetch"}));
    /// assert!(matches!(fetch, ProviderTool::Raw { .. }));
    /// ```
    pub fn raw(protocol: impl Into<String>, definition: Value) -> Self {
        ProviderTool::Raw {
            protocol: protocol.into(),
            definition,
        }
    }

    /// What the tool is, for error messages: `web search`, `code execution`, ….
    pub fn label(&self) -> &str {
        match self {
            ProviderTool::WebSearch(_) => "web search",
            ProviderTool::CodeExecution => "code execution",
            ProviderTool::FileSearch { .. } => "file search",
            ProviderTool::UrlContext => "URL context",
            ProviderTool::WebFetch(_) => "web fetch",
            ProviderTool::ImageGeneration(_) => "image generation",
            ProviderTool::XSearch(_) => "X search",
            ProviderTool::RemoteMcp(_) => "remote MCP",
            ProviderTool::Raw { .. } => "a raw provider tool",
        }
    }
}

/// Options of [`ProviderTool::WebSearch`]; each provider sends the ones it has and ignores the
/// rest (the docs of each say which).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WebSearch {
    /// The most searches in one answer (Anthropic `max_uses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Search only these domains (Anthropic `allowed_domains`, Responses `filters`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never these domains (Anthropic `blocked_domains`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
}

impl WebSearch {
    /// Caps the searches in one answer.
    #[must_use]
    pub fn with_max_uses(mut self, max_uses: u32) -> Self {
        self.max_uses = Some(max_uses);
        self
    }

    /// Searches only these domains.
    #[must_use]
    pub fn with_allowed_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Never searches these domains.
    #[must_use]
    pub fn with_blocked_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.blocked_domains = domains.into_iter().map(Into::into).collect();
        self
    }
}

/// Options of [`ProviderTool::WebFetch`] (Anthropic's, where each is documented).
///
/// ```
/// use llm_tools_core::ProviderTool;
/// use llm_tools_core::provider_tools::WebFetch;
///
/// let fetch = WebFetch::default().with_max_uses(2).with_citations(true);
/// assert_eq!(ProviderTool::WebFetch(fetch).label(), "web fetch");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WebFetch {
    /// The most fetches in one answer (`max_uses`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Fetch only from these domains (`allowed_domains`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never from these (`blocked_domains`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// Whether the answer cites the fetched pages (`citations.enabled`; off by default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub citations: bool,
    /// The most tokens of a page the model reads (`max_content_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_content_tokens: Option<u32>,
}

impl WebFetch {
    /// Caps the fetches in one answer.
    #[must_use]
    pub fn with_max_uses(mut self, max_uses: u32) -> Self {
        self.max_uses = Some(max_uses);
        self
    }

    /// Fetches only from these domains.
    #[must_use]
    pub fn with_allowed_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Never fetches from these domains.
    #[must_use]
    pub fn with_blocked_domains<S: Into<String>>(
        mut self,
        domains: impl IntoIterator<Item = S>,
    ) -> Self {
        self.blocked_domains = domains.into_iter().map(Into::into).collect();
        self
    }

    /// Lets the answer cite the fetched pages.
    #[must_use]
    pub fn with_citations(mut self, citations: bool) -> Self {
        self.citations = citations;
        self
    }

    /// Caps the tokens read from one page.
    #[must_use]
    pub fn with_max_content_tokens(mut self, tokens: u32) -> Self {
        self.max_content_tokens = Some(tokens);
        self
    }
}

/// Options of [`ProviderTool::ImageGeneration`], as Responses names them; unset ones are left
/// to the provider.
///
/// ```
/// use llm_tools_core::ProviderTool;
/// use llm_tools_core::provider_tools::ImageGeneration;
///
/// let images = ImageGeneration::default().with_size("1024x1024").with_quality("low");
/// assert_eq!(ProviderTool::ImageGeneration(images).label(), "image generation");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageGeneration {
    /// `1024x1024`, `1024x1536`, `1536x1024` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// `low`, `medium`, `high` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// `png`, `webp` or `jpeg`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<String>,
    /// `transparent`, `opaque` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
}

impl ImageGeneration {
    /// Sets the size.
    #[must_use]
    pub fn with_size(mut self, size: impl Into<String>) -> Self {
        self.size = Some(size.into());
        self
    }

    /// Sets the quality.
    #[must_use]
    pub fn with_quality(mut self, quality: impl Into<String>) -> Self {
        self.quality = Some(quality.into());
        self
    }

    /// Sets the image format.
    #[must_use]
    pub fn with_output_format(mut self, format: impl Into<String>) -> Self {
        self.output_format = Some(format.into());
        self
    }

    /// Sets the background.
    #[must_use]
    pub fn with_background(mut self, background: impl Into<String>) -> Self {
        self.background = Some(background.into());
        self
    }
}

/// Options of [`ProviderTool::XSearch`] (xAI's `x_search`).
///
/// ```
/// use llm_tools_core::ProviderTool;
/// use llm_tools_core::provider_tools::XSearch;
///
/// let search = XSearch::default().with_allowed_handles(["rustlang"]).with_from_date("2026-01-01");
/// assert_eq!(ProviderTool::XSearch(search).label(), "X search");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct XSearch {
    /// Only posts of these handles (`allowed_x_handles`; not with `excluded_handles`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_handles: Vec<String>,
    /// Never posts of these (`excluded_x_handles`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_handles: Vec<String>,
    /// Posts from this day on (`from_date`, ISO 8601 `YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_date: Option<String>,
    /// Posts up to this day (`to_date`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_date: Option<String>,
}

impl XSearch {
    /// Searches only the posts of these handles.
    #[must_use]
    pub fn with_allowed_handles<S: Into<String>>(
        mut self,
        handles: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_handles = handles.into_iter().map(Into::into).collect();
        self
    }

    /// Leaves out the posts of these handles.
    #[must_use]
    pub fn with_excluded_handles<S: Into<String>>(
        mut self,
        handles: impl IntoIterator<Item = S>,
    ) -> Self {
        self.excluded_handles = handles.into_iter().map(Into::into).collect();
        self
    }

    /// Searches posts from this day on.
    #[must_use]
    pub fn with_from_date(mut self, date: impl Into<String>) -> Self {
        self.from_date = Some(date.into());
        self
    }

    /// Searches posts up to this day.
    #[must_use]
    pub fn with_to_date(mut self, date: impl Into<String>) -> Self {
        self.to_date = Some(date.into());
        self
    }
}

/// A remote MCP server for [`ProviderTool::RemoteMcp`]: its name (the label the provider
/// and the model know it by), its URL (Streamable HTTP), and optionally which of its tools the
/// model may call.
///
/// ```
/// use llm_tools_core::{ProviderTool, RemoteMcp};
///
/// let wiki = RemoteMcp::new("deepwiki", "https://mcp.deepwiki.com/mcp")
///     .with_description("Documentation of public repositories")
///     .with_allowed_tools(["ask_question"]);
/// let tool = ProviderTool::RemoteMcp(wiki);
/// assert_eq!(tool.label(), "remote MCP");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RemoteMcp {
    /// The server's name (`server_label` on Responses, `name` on Anthropic and Gemini).
    pub name: String,
    /// The server's URL.
    pub url: String,
    /// What the server offers, for the model (Responses `server_description`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The only tools of the server the model may call (all when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
}

impl RemoteMcp {
    /// The server `name` at `url`, all its tools allowed.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            description: None,
            allowed_tools: Vec::new(),
        }
    }

    /// Says what the server offers.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Allows only these of the server's tools.
    #[must_use]
    pub fn with_allowed_tools<S: Into<String>>(
        mut self,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        self.allowed_tools = tools.into_iter().map(Into::into).collect();
        self
    }
}

/// One use of a provider tool within an answer: a search the provider ran, code it executed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerToolUse {
    /// The provider's id for it, where it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool, as the provider names it (`web_search`, `code_execution`, `google_search`).
    pub name: String,
    /// What it was asked (the query, the code), as the provider wrote it.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input: Value,
    /// What it gave back, where the answer carries it: a code run's outcome and output
    /// (Gemini `{"outcome", "output"}`, Anthropic's result block's content, Responses'
    /// `outputs`). Null for searches, whose findings come as [`Citation`]s.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub output: Value,
}

impl ServerToolUse {
    /// A use of `name` with `input`.
    pub fn new(id: Option<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id,
            name: name.into(),
            input,
            output: Value::Null,
        }
    }

    /// Sets what the use gave back.
    #[must_use]
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = output;
        self
    }
}

/// A source an answer cites: a web page a search found, a document a tool returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Citation {
    /// The source's URL, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The passage cited, where the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cited_text: Option<String>,
    /// The provider's opaque reference to the cited passage of a web search result
    /// (Anthropic `encrypted_index`). The citation itself goes back to the provider with the
    /// answer's text, as the provider sent it, in the message's provider data; this copy is
    /// for reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_index: Option<String>,
}

impl Citation {
    /// A citation of `url`.
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Sets the title.
    #[must_use]
    pub fn with_title(mut self, title: Option<String>) -> Self {
        self.title = title;
        self
    }

    /// Sets the passage cited.
    #[must_use]
    pub fn with_cited_text(mut self, text: Option<String>) -> Self {
        self.cited_text = text;
        self
    }

    /// Sets the provider's reference to the cited passage.
    #[must_use]
    pub fn with_encrypted_index(mut self, index: Option<String>) -> Self {
        self.encrypted_index = index;
        self
    }
}
