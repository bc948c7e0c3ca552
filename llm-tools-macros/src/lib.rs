//! Procedural macros of `llm-tools`: [`macro@tool`] and [`macro@toolset`]. Use them through
//! `llm_tools_core` (`use llm_tools_core::tool;`), whose docs show them at work.
//!
//! The crate is organised by phase, one module each, run in this order by the drivers
//! (`tool/mod.rs`, `toolset/mod.rs`): `tool::args` (parse, with darling) → `tool::model` (the
//! settled model, with its spans) → `tool::check` (the rules, errors accumulated with their
//! spans) → `tool::codegen` (quote only). `toolset` runs the same phase modules per method, then
//! its own `check` and `codegen`. A phase imports only earlier phases; `docs`, `naming` (name
//! rules, "did you mean"), `duration`, `manifest` and `paths` hold what the phases share and
//! import none of them.
#![doc(test(attr(deny(warnings))))]

mod docs;
mod duration;
mod json;
mod manifest;
mod naming;
mod paths;
mod provider_options;
mod tool;
mod toolset;

use proc_macro::TokenStream;

/// Turns an `async fn`, or an `impl` block with `async fn execute(&self, …)`, into a tool.
///
/// On `async fn weather(…)` it keeps the fn as written and adds a unit struct `Weather`
/// (PascalCase, same visibility) that implements `llm_tools_core::Tool`. On `impl MyTool` it
/// implements `Tool` for `MyTool` (name: `my`, the type name in snake_case without a trailing
/// `Tool`). Either way the type gets `NAME`, `NAMESPACE` and `JOINED_NAME` consts.
///
/// | key | value | default |
/// |---|---|---|
/// | `name` | `"weather"`, checked against `^[A-Za-z_][A-Za-z0-9_-]{0,63}$` at compile time | the fn name; the type name in snake_case with one trailing `Tool` dropped |
/// | `description` | `"…"` | the doc comment without its `# Arguments` section |
/// | `namespace` | a path to a `Namespace` const, a string (`"crm"`), or `none` | none (a `#[toolset]`'s, inside one) |
/// | `namespace_description` | `"…"`: the description of a string namespace, which it needs (the model reads it; the Responses API refuses a group without one); the provider-defined `"computer"` and `"browser"` need none | none |
/// | `max_run_time` | `"500ms"`, `"90s"`, `"10m"`, `"2h"`, `"1h30m"` (parsed at compile time) | the chat's (10 minutes) |
/// | `defer` | flag or bool: left out of requests until found by tool search | `false` |
/// | `spill_to_file` | `false` (always send whole) or a character limit (`20_000`) | the chat's limit |
/// | `needs_approval` | flag or bool; or a path to a rule deciding per call: `fn(&ToolCall) -> bool`, or `fn(&Args) -> bool` on the arguments decoded as `Args` (a `Deserialize + JsonSchema` struct with the parameters the rule reads; arguments that do not decode need approval) | `false` |
/// | `sequential` | flag or bool: a barrier when a round's calls run in parallel | `false` |
/// | `max_retries` | a whole number from 1: how many failed calls of the tool in a row a turn allows (recoverable errors, timeouts, arguments that do not decode); then the tool is unavailable for the rest of the turn, or the turn stops, as the chat's `RetriesExhausted` says | the chat's (`ToolOptions::with_max_retries`, 5) |
/// | `title` | `"…"`: a title for people (an MCP client's list, a UI's label) | none |
/// | `annotations` | hints for clients, each a flag or a bool: `annotations(read_only, destructive = false, idempotent, open_world)` (served over MCP as `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`) | none |
/// | `args` | flag: the one parameter's type (`JsonSchema + Deserialize`) is the whole argument object | off |
/// | `schema` | a `serde_json::Value` expression: a literal JSON Schema; the arguments arrive in the one parameter (`serde_json::Value` or any `Deserialize` type) | inferred |
/// | `provider_options` | fields one protocol adds to the tool's definition, per provider: `provider_options(anthropic = { "cache_control": { "type": "ephemeral" } }, bedrock = { "cachePoint": { "type": "default" } })`. Providers: `anthropic` (into the tool's entry), `openai_responses` (the function tool), `gemini` (the function declaration), `bedrock` (Converse's `toolSpec`; `cachePoint` as an entry of its own after the tool's). A value is a JSON object written inline (checked at compile time: what is not JSON is an error on its token) or a `serde_json::Value` expression. An unknown provider, one whose tools take no added fields (`openai_chat`, `cohere`, `ollama`) and a field the library writes (`name`, `description`, the schema's, `strict`, `defer_loading`, `type`) are compile errors. Kept in the spec under each protocol's id (`ToolSpec::with_provider_options`); each protocol sends its own | none |
/// | `crate` | path to `llm_tools_core` when another crate re-exports it (`crate = my_facade::tools`) | the name your `Cargo.toml` gives `llm-tools-core` (a renamed dependency is found), else `::llm_tools_core` |
/// | `struct_name` | the generated type's name, when the PascalCase of the fn is taken (`fn signup(form: Signup)` → `struct_name = SignupTool`; a signature that names the generated type by itself is one compile error saying so, and a clash the signature does not show is rustc's `E0428` on the fn name) | the fn name in PascalCase (`{Type}{Method}` in a toolset) |
///
/// Parameters: each becomes a property of the schema (required unless it is an `Option` or has
/// a default). Describe it in the doc comment's `# Arguments` list
/// (`` * `latitude` - Latitude in decimal degrees ``; also `* latitude: …`, `-` or `+` bullets,
/// `:`, `–` or `—` separators, `**latitude**`; a top-level bullet there that names no parameter
/// is a compile error), with a doc comment on the parameter, or with
/// `#[arg(description = "…")]`; `#[arg(default)]` (the type's `Default`) or
/// `#[arg(default = expr)]` makes it optional (and `null` then means the default, as OpenAI's
/// strict mode sends it). A `&ToolContext` (or `ToolContext`) parameter is injected and not in
/// the schema; it is recognized by its type's name. Arguments are decoded from the model's JSON
/// in one pass; parameter types must be `serde::Deserialize + schemars::JsonSchema` and owned.
///
/// Generated names: the tool type (`Weather`), its consts (`NAME`, `NAMESPACE`, `JOINED_NAME`),
/// and, inside a `const _` block, items prefixed `__llm_tools_` / `__LlmTools`, among them the
/// tool's registration: every tool is listed by `llm_tools_core::all_tool_specs()`. On an `impl`
/// block the inherent `execute`, `resume` and `cancel` stay callable as written (`Tool::resume`
/// and `Tool::cancel` are the trait's).
///
/// The `impl` form's methods: `execute(&self, …)` runs the call; `resume(&self, task: Task, …)`
/// carries a paused call on (the chat's `complete` calls it: return the result, or the task
/// again to keep waiting — that is where a task checks whether its work is done);
/// `cancel(&self, task: Task, …)` stops the work behind a paused call when the chat is
/// cancelled (it returns nothing; arguments it cannot decode leave it uncalled). `resume` and
/// `cancel` take some of `execute`'s parameters, with the same types (a compile error
/// otherwise), decoded from the same arguments.
///
/// Results: `String`, `&'static str`, `()`, `ToolOutput`, `Attachment`, `SearchResult` or
/// `Vec<SearchResult>` (for the model to cite),
/// `(text, Vec<Attachment>)`, `Task` (on the `impl` form only, whose `resume` finishes it: a
/// fn returning one is a compile error), any `serde::Serialize` value (sent as JSON), or a `Result`
/// of one of these whose error converts into `ToolError` (a recoverable error goes to the model,
/// a fatal one — what `?` gives on any `std::error::Error` — stops the turn). A result type
/// (or a `Result`'s `Ok` type) that also derives `schemars::JsonSchema` as an object is the
/// tool's output schema (`ToolSpec::output_schema`; MCP's `outputSchema` when served).
///
/// ```
/// use llm_tools_core::{tool, Tool, ToolError};
///
/// /// Gets current weather for a location
/// ///
/// /// # Arguments
/// /// * `latitude` - Latitude in decimal degrees
/// /// * `longitude` - Longitude in decimal degrees
/// #[tool(max_run_time = "30s")]
/// async fn weather(latitude: f64, longitude: f64) -> Result<String, ToolError> {
///     Ok(format!("15°C at {latitude},{longitude}"))
/// }
///
/// assert_eq!(Weather::NAME, "weather");
/// assert_eq!(Weather.spec().parameters()["properties"]["latitude"]["description"], "Latitude in decimal degrees");
/// ```
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

/// Declares several tools on one `impl` block; they share the block's type as state (behind an
/// `Arc`) and its namespace.
///
/// Each method marked `#[tool]` (an `async fn(&self, …)`) becomes a tool type named
/// `{Type}{Method}` in PascalCase (`Crm::customer_lookup` → `CrmCustomerLookup`, with the
/// method's visibility), and the type gets `fn tools(self: Arc<Self>) -> Vec<Arc<dyn Tool>>`
/// and an `IntoTools` impl, so `chat.with_tools(crm)` registers them all. Keys: `namespace` and
/// `namespace_description` (as in `#[tool]`; a method's `#[tool(namespace = none)]` leaves it)
/// and `crate`. A method's
/// `#[tool(…)]` takes every `#[tool]` key but `crate`. Two tools with the same name is a
/// compile error.
///
/// ```
/// use std::sync::Arc;
/// use llm_tools_core::{toolset, IntoTools, Namespace, Tool, ToolError};
///
/// pub const CRM: Namespace = Namespace::new("crm").description("Customer records");
///
/// pub struct Crm { customers: Vec<String> }
///
/// #[toolset(namespace = CRM)]
/// impl Crm {
///     /// Finds a customer by email
///     #[tool]
///     pub async fn customer_lookup(&self, email: String) -> Result<Option<String>, ToolError> {
///         Ok(self.customers.iter().find(|c| **c == email).cloned())
///     }
///
///     /// Counts the customers
///     #[tool(namespace = none)]
///     pub async fn customer_count(&self) -> usize {
///         self.customers.len()
///     }
/// }
///
/// assert_eq!(CrmCustomerLookup::JOINED_NAME, "crm_customer_lookup");
/// assert_eq!(CrmCustomerCount::JOINED_NAME, "customer_count");
///
/// let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
/// Crm { customers: vec!["ada@example.com".into()] }.into_tools(&mut tools);
/// assert_eq!(tools.len(), 2);
/// ```
#[proc_macro_attribute]
pub fn toolset(args: TokenStream, item: TokenStream) -> TokenStream {
    toolset::expand(args.into(), item.into()).into()
}
