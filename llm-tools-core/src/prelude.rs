//! What a first program needs, in one import: `use llm_tools_core::prelude::*;`.
//!
//! It brings the macros (`tool`, `toolset`, with the `macros` feature), the chat and what a
//! turn gives back ([`Chat`], [`Outcome`], [`Message`], [`Error`]), what a tool returns
//! ([`ToolError`], [`ToolOutput`], [`Task`]) or receives ([`ToolContext`]), its group
//! ([`Namespace`]), agents ([`Agent`]), and the traits whose methods programs call: [`Tool`]
//! (`spec()`), [`ToolSource`] (`tools()` on an MCP client or any other source of tools),
//! [`IntoTools`] (`into_tools()` on a toolset) and [`AgentPauses`] (`paused_calls()` through
//! sub-agents). Each is also at the crate root (`llm_tools_core::ToolSource`
//! is the public path of that trait); nothing here is only here.
//!
//! ```
//! use llm_tools_core::prelude::*;
//! use llm_tools_core::testing::ScriptedProvider;
//!
//! /// Gets current weather for a location
//! ///
//! /// # Arguments
//! /// * `city` - The city's name
//! #[tool]
//! async fn weather(city: String) -> Result<String, ToolError> {
//!     Ok(format!("15°C in {city}"))
//! }
//!
//! assert_eq!(Weather.spec().name(), "weather"); // `spec` is `Tool`'s
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! // A scripted provider stands in for a model: it asks for the tool, then answers.
//! let model = ScriptedProvider::new()
//!     .then_call("weather", serde_json::json!({"city": "Berlin"}))
//!     .then_text("It's 15°C in Berlin.");
//! let mut chat = Chat::new(model);
//! chat.with_tools(Weather)?;
//! let outcome: Outcome = chat.ask("What's the weather in Berlin?").await?;
//! assert_eq!(outcome.text().as_deref(), Some("It's 15°C in Berlin."));
//! let last: &Message = &chat.messages()[chat.messages().len() - 1];
//! assert_eq!(last.text(), "It's 15°C in Berlin.");
//! # Ok::<_, Error>(())
//! # }).unwrap();
//! ```

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
pub use crate::{tool, toolset};

pub use crate::{
    Agent, AgentPauses, Chat, Error, IntoTools, Message, Namespace, Outcome, Task, Tool,
    ToolContext, ToolError, ToolOutput, ToolSource,
};

#[cfg(all(test, feature = "macros"))]
mod tests {
    // Only the prelude is imported: a program that starts with it can declare tools, read a
    // tool source and run a chat.
    use super::*;
    use std::sync::Arc;

    struct Fixed(Vec<Arc<dyn Tool>>);

    impl ToolSource for Fixed {
        fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.0.clone()
        }
        fn generation(&self) -> u64 {
            0
        }
        fn refresh(&self) -> crate::BoxFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    #[test]
    fn the_prelude_declares_tools_and_reads_their_sources() {
        /// Echoes
        #[tool(crate = crate)]
        async fn echo(text: String) -> String {
            text
        }

        let source = Fixed(vec![Arc::new(Echo)]);
        let names: Vec<String> = source
            .tools()
            .iter()
            .map(|t| t.spec().name().to_owned())
            .collect();
        assert_eq!(names, ["echo"]);
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        Echo.into_tools(&mut tools);
        assert_eq!(tools.len(), 1);
        let _ = Chat::new(crate::testing::ScriptedProvider::new());
    }
}
