//! Let a language model call your Rust code.
//!
//! Write an ordinary `async fn`, add `#[tool]`, and it becomes a [`Tool`] with a
//! snake_case name, a description from its doc comment and a JSON Schema inferred from its
//! parameters:
//!
//! ```
//! use llm_tools_core::{tool, Tool, ToolError};
//!
//! /// Gets current weather for a location
//! ///
//! /// # Arguments
//! /// * `latitude` - Latitude in decimal degrees, e.g. 52.52
//! /// * `longitude` - Longitude in decimal degrees
//! #[tool]
//! async fn weather(latitude: f64, longitude: f64) -> Result<String, ToolError> {
//!     Ok(format!("15°C at {latitude}, {longitude}"))
//! }
//!
//! let spec = Weather.spec();
//! assert_eq!(spec.name(), "weather");
//! assert_eq!(spec.description(), "Gets current weather for a location");
//! assert_eq!(spec.parameters()["required"], serde_json::json!(["latitude", "longitude"]));
//! ```
//!
//! # Declaring tools
//!
//! A tool is an `async fn` with `#[tool]`. The fn stays as written and callable; beside it the
//! macro generates a unit struct in PascalCase (`current_time` → `CurrentTime`, same
//! visibility) that implements [`Tool`], with `NAME`, `NAMESPACE` and `JOINED_NAME` consts:
//!
//! ```
//! use llm_tools_core::{tool, Tool, ToolError};
//! use serde_json::json;
//!
//! /// Returns the current date, time, and time zone
//! #[tool]
//! async fn current_time() -> String {
//!     "2026-05-01T12:00:00+02:00 (Europe/Berlin)".into()
//! }
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(rename_all = "lowercase")]
//! enum Units { Metric, Imperial }
//!
//! #[derive(serde::Serialize)]
//! struct Forecast { temperature: f64, units: &'static str, at: (f64, f64) }
//!
//! /// Gets current weather for a location
//! ///
//! /// # Arguments
//! /// * `latitude` - Latitude in decimal degrees, e.g. 52.52
//! /// * `longitude` - Longitude in decimal degrees
//! /// * `units` - Unit system for the answer
//! #[tool]
//! async fn weather(latitude: f64, longitude: f64, units: Option<Units>) -> Result<Forecast, ToolError> {
//!     let units = match units { Some(Units::Imperial) => "imperial", _ => "metric" };
//!     Ok(Forecast { temperature: 15.0, units, at: (latitude, longitude) })
//! }
//!
//! assert_eq!(CurrentTime::NAME, "current_time");
//! assert_eq!(CurrentTime.spec().parameters(), &json!({"type": "object", "properties": {}}));
//!
//! let params = Weather.spec().parameters();
//! assert_eq!(params["required"], json!(["latitude", "longitude"])); // `units` is optional
//! assert_eq!(params["properties"]["latitude"]["description"], "Latitude in decimal degrees, e.g. 52.52");
//! assert_eq!(params["properties"]["units"]["enum"], json!(["metric", "imperial"]));
//! ```
//!
//! The arguments are decoded straight from the model's JSON text into the typed parameters; a
//! wrong type, a missing or an unknown argument is a recoverable error naming the argument, and
//! integers sent as `3.0` decode into integer parameters. What the fn returns becomes the
//! result: text, `()`, any `Serialize` value (as JSON), [`ToolOutput`] with attachments, a
//! [`Task`] (the call pauses), or a `Result` of these whose error converts into [`ToolError`].
//!
//! A tool that needs application state is a type with an `execute` method (and optionally
//! `resume`, for calls that returned a [`Task`]); its name is the type's in snake_case with
//! one trailing `Tool` dropped:
//!
//! ```
//! use llm_tools_core::{tool, Namespace, Tool, ToolError};
//!
//! pub const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");
//!
//! # #[derive(Clone, serde::Serialize)] pub struct Customer { email: String }
//! # pub struct Db(Vec<Customer>);
//! # impl Db { async fn find(&self, email: &str) -> Result<Option<Customer>, std::io::Error> {
//! #     Ok(self.0.iter().find(|c| c.email == email).cloned()) } }
//! pub struct CustomerLookup { db: Db }
//!
//! #[tool(namespace = CRM)]
//! impl CustomerLookup {
//!     /// Finds a customer by email
//!     async fn execute(&self, email: String) -> Result<Option<Customer>, ToolError> {
//!         Ok(self.db.find(&email).await?) // an I/O error is fatal: the turn stops
//!     }
//! }
//!
//! assert_eq!(CustomerLookup::NAME, "customer_lookup");
//! assert_eq!(CustomerLookup::JOINED_NAME, "crm_customer_lookup"); // a `const`
//! let tool = CustomerLookup { db: Db(Vec::new()) };
//! assert_eq!(tool.spec().namespace().map(Namespace::name), Some("crm"));
//! ```
//!
//! Several tools that share state and a namespace are one `impl` block with
//! `#[toolset]`; each `#[tool]` method becomes a tool type named
//! `{Type}{Method}`, and the value itself goes to a chat ([`IntoTools`]):
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use llm_tools_core::{toolset, IntoTools, Namespace, Tool};
//!
//! pub const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");
//!
//! #[derive(Default)]
//! pub struct Crm { customers: Mutex<Vec<String>> }
//!
//! #[toolset(namespace = CRM)]
//! impl Crm {
//!     /// Adds a customer
//!     #[tool(needs_approval)]
//!     pub async fn add_customer(&self, email: String) -> usize {
//!         let mut customers = self.customers.lock().unwrap();
//!         customers.push(email);
//!         customers.len()
//!     }
//!
//!     /// Checks that the service is up
//!     #[tool(namespace = none)]
//!     pub async fn ping(&self) -> &'static str { "pong" }
//! }
//!
//! let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
//! Crm::default().into_tools(&mut tools);
//! let names: Vec<&str> = tools.iter().map(|t| t.spec().joined_name()).collect();
//! assert_eq!(names, ["crm_add_customer", "ping"]);
//! assert_eq!(CrmAddCustomer::JOINED_NAME, "crm_add_customer");
//! ```
//!
//! Every key of `#[tool(…)]` (`name`, `description`, `namespace`, `namespace_description`,
//! `max_run_time`, `defer`, `spill_to_file`, `needs_approval`, `sequential`, `args`, `schema`,
//! `crate`, `struct_name`) and of
//! `#[arg(…)]` (`description`, `default`) is in the docs of the `#[tool]` macro. Mistakes are compile
//! errors on the offending token: a fn that is not `async`, generic parameters, a parameter type
//! that is not `Deserialize + JsonSchema`, a result type that cannot become a tool result, a
//! name or joined name outside `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`, two tools with one name in a
//! toolset, a bad `max_run_time`, an unknown key (with a "did you mean"), an `impl` without
//! `execute`, `self` by value.
//!
//! The crate is organised by what a tool is and what happens to it:
//!
//! - [`Tool`], [`ToolSpec`], [`Namespace`]: a tool, its description, its group;
//! - [`RawArgs`], [`ToolContext`]: what one call receives;
//! - [`ToolOutput`], [`ToolOutcome`], [`Task`], [`ToolError`]: what one call produces;
//! - [`Question`], [`Answer`]: asking the user while a call runs;
//! - [`Message`], [`ToolCall`], [`Part`]: the neutral conversation model;
//! - [`Provider`], [`Request`], [`Response`], [`StreamEvent`]: the seam the providers crate
//!   implements;
//! - [`Chat`]: the conversation loop, with pausing, questions and approvals ([`chat`]);
//! - [`Agent`]: a reusable definition that makes chats, runs as a sub-agent tool and hands off
//!   ([`agent`]);
//! - [`testing`]: a scripted provider for tests that need no network;
//! - [`json_values`]: the bound on the JSON values one document from outside may hold;
//! - [`untrusted`]: text another party sent, as an error or a log line may show it.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

pub mod agent;
mod args;
pub mod chat;
mod clock;
mod content;
mod context;
#[cfg(feature = "debug-log")]
#[cfg_attr(docsrs, doc(cfg(feature = "debug-log")))]
pub mod debug_log;
mod error;
pub mod files;
mod future;
pub mod json_values;
mod message;
mod namespace;
mod output;
/// `use llm_tools_core::prelude::*;`: the macros, the chat, the tool types and the traits whose
/// methods a first program calls.
pub mod prelude;
mod provider;
pub mod provider_tools;
mod question;
pub mod registration;
mod schema;
mod spec;
pub mod store;
pub mod structured;
mod task;
pub mod testing;
mod tool;
pub mod untrusted;

#[doc(hidden)]
pub mod __private;

pub use agent::{Agent, AgentPauses};
pub use chat::{Chat, ChatState, Outcome};
pub use content::{Attachment, Part, SearchResult, Source};
pub use context::{ToolContext, ToolContextBuilder, ToolProgress};
pub use error::{ConfigError, Error, ProviderError, ProviderErrorKind, ToolError, ToolFailure};
pub use future::BoxFuture;
pub use message::{Message, ProviderData, Role, ToolCall, Usage};
pub use namespace::Namespace;
pub use output::{IntoToolOutcome, ToolOutcome, ToolOutput};
pub use provider::{EventStream, Provider, Request, Response, StreamEvent, ToolChoice, events_of};
pub use provider_tools::{
    Citation, ImageGeneration, ProviderTool, RemoteMcp, ServerToolUse, WebFetch, WebSearch, XSearch,
};
pub use question::{Answer, Question};
pub use registration::all_tool_specs;
pub use schema::{normalize as normalize_schema, schema_for};
pub use spec::{MAX_TOOL_NAME_LEN, SpillToFile, ToolAnnotations, ToolSpec, is_valid_tool_name};
pub use structured::{DEFAULT_OUTPUT_NAME, OutputSchema};
pub use task::{Task, TaskStateError, TaskStatus};
pub use tool::{IntoTools, RawArgs, SharedTools, Tool, ToolSource};

/// Re-exported so tools can name JSON values without a direct `serde_json` dependency.
pub use serde_json;

/// The serde llm-tools decodes arguments with, re-exported so one dependency is enough: derive
/// with `#[derive(llm_tools_core::serde::Deserialize)]` and `#[serde(crate =
/// "llm_tools_core::serde")]` (see [`schemars`] for an example).
pub use serde;

/// The schemars (version 1) llm-tools builds schemas with, re-exported so a crate needs neither
/// `serde` nor `schemars` as dependencies of its own to declare argument types:
///
/// ```
/// use llm_tools_core::serde::Deserialize;
/// use llm_tools_core::schemars::JsonSchema;
/// use llm_tools_core::{tool, Tool};
///
/// /// Where to ship
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(crate = "llm_tools_core::serde")]
/// #[schemars(crate = "llm_tools_core::schemars")]
/// pub struct Address {
///     /// The city
///     pub city: String,
/// }
///
/// /// Ships an order
/// #[tool]
/// async fn ship(order: u64, to: Address) -> String {
///     format!("order {order} goes to {}", to.city)
/// }
///
/// let to = &Ship.spec().parameters()["properties"]["to"];
/// assert_eq!(to["properties"]["city"]["description"], "The city");
/// ```
pub use schemars;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use llm_tools_macros::{tool, toolset};
