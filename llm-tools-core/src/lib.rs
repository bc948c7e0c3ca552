//! Let a language model call your Rust code.
//!
//! Write an ordinary `async fn`, add [`#[tool]`](macro@tool), and it becomes a [`Tool`] with a
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
//! - [`testing`]: a scripted provider for tests that need no network.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings))))]

mod args;
pub mod chat;
mod content;
mod context;
mod error;
mod message;
mod namespace;
mod output;
mod provider;
mod question;
mod schema;
mod spec;
mod task;
pub mod testing;
mod tool;

#[doc(hidden)]
pub mod __private;

pub use chat::{Chat, ChatState, Outcome};
pub use content::{Attachment, Part, Source};
pub use context::{ToolContext, ToolContextBuilder};
pub use error::{Error, ProviderError, ProviderErrorKind, ToolError, ToolFailure};
pub use message::{Message, ProviderData, Role, ToolCall, Usage};
pub use namespace::Namespace;
pub use output::{IntoToolOutcome, ToolOutcome, ToolOutput};
pub use provider::{EventStream, Provider, Request, Response, StreamEvent, ToolChoice, events_of};
pub use question::{Answer, Question};
pub use schema::{normalize as normalize_schema, schema_for};
pub use spec::{MAX_TOOL_NAME_LEN, SpillToFile, ToolSpec, is_valid_tool_name};
pub use task::{Task, TaskStatus};
pub use tool::{BoxFuture, IntoTools, RawArgs, Tool};

/// Re-exported so tools can name JSON values without a direct `serde_json` dependency.
pub use serde_json;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use llm_tools_macros::{tool, toolset};
