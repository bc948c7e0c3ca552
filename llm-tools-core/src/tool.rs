//! The [`Tool`] trait, what a call receives ([`RawArgs`]) and how tools are handed to a chat
//! ([`IntoTools`]).

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::{
    context::ToolContext, error::ToolError, future::BoxFuture, message::ToolCall,
    output::ToolOutcome, spec::ToolSpec, task::Task,
};

/// A tool the model can call.
///
/// `#[tool]` implements this for you; implement it by hand when the schema or the dispatch is
/// only known at run time (an MCP server's tools, say). Tools live behind `Arc<dyn Tool>`, so
/// thousands of chats share one registry without copying schemas.
///
/// ```
/// use std::sync::OnceLock;
/// use llm_tools_core::{BoxFuture, RawArgs, Tool, ToolContext, ToolOutcome, ToolOutput, ToolSpec};
/// use serde_json::json;
///
/// struct Echo;
///
/// impl Tool for Echo {
///     fn spec(&self) -> &ToolSpec {
///         static SPEC: OnceLock<ToolSpec> = OnceLock::new();
///         SPEC.get_or_init(|| {
///             ToolSpec::new("echo", "Repeats the text").with_parameters(json!({
///                 "type": "object",
///                 "properties": {"text": {"type": "string"}},
///                 "required": ["text"]
///             }))
///         })
///     }
///
///     fn call<'a>(&'a self, args: RawArgs<'a>, _ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
///         Box::pin(async move {
///             #[derive(serde::Deserialize)]
///             struct Args { text: String }
///             match args.decode::<Args>(&["text"]) {
///                 Ok(a) => ToolOutcome::Output(ToolOutput::text(a.text)),
///                 Err(e) => ToolOutcome::Error(e),
///             }
///         })
///     }
/// }
///
/// # tokio_test_block(async {
/// let out = Echo.call(RawArgs::new(r#"{"text":"hi"}"#), ToolContext::detached("c1")).await;
/// assert!(matches!(out, ToolOutcome::Output(o) if o.as_text() == "hi"));
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The tool's description: name, namespace, schema and settings. Computed once and cached.
    fn spec(&self) -> &ToolSpec;

    /// Runs one call with the model's raw JSON arguments.
    fn call<'a>(&'a self, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome>;

    /// Carries a paused call on: called by the chat's `complete` with the [`Task`] the call
    /// returned and the call's arguments. Return the result, or the task again to keep waiting.
    ///
    /// The default is for tools that never pause: it fails the call.
    fn resume<'a>(
        &'a self,
        task: Task,
        args: RawArgs<'a>,
        ctx: ToolContext,
    ) -> BoxFuture<'a, ToolOutcome> {
        let _ = (task, args, ctx);
        let name = self.spec().joined_name().to_owned();
        Box::pin(async move {
            ToolOutcome::Error(ToolError::fatal(format!(
                "tool `{name}` returned a task but does not implement `resume`"
            )))
        })
    }

    /// Stops the work behind a paused call: the chat's `cancel` calls it for every task it
    /// waits on, then closes those calls. The default does nothing (the task's work, if any,
    /// goes on unobserved).
    fn cancel<'a>(&'a self, task: Task, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ()> {
        let _ = (task, args, ctx);
        Box::pin(std::future::ready(()))
    }

    /// Whether this call must be approved before it runs. The default follows the spec's
    /// `needs_approval` flag; override it to decide per call from the arguments.
    fn needs_approval(&self, call: &ToolCall) -> bool {
        let _ = call;
        self.spec().needs_approval()
    }

    /// The Rust type behind the tool, for error messages (a duplicate name, say).
    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }
}

/// The model's arguments for one call, as the raw JSON text it sent.
///
/// Decoding goes straight from this text into typed values in one pass (no intermediate
/// `serde_json::Value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawArgs<'a>(&'a str);

impl<'a> RawArgs<'a> {
    /// Wraps raw JSON text.
    pub fn new(json: &'a str) -> Self {
        Self(json)
    }

    /// The raw JSON text.
    pub fn as_str(&self) -> &'a str {
        self.0
    }

    /// Decodes the arguments into `T`. Invalid JSON, a wrong type, a missing or an unknown
    /// argument is a recoverable error naming the argument and listing `accepted`.
    /// Integral numbers sent as floats (`3.0`) decode into integer fields.
    pub fn decode<T: DeserializeOwned>(&self, accepted: &[&str]) -> Result<T, ToolError> {
        crate::args::decode(self.0, accepted)
    }
}

/// Anything a chat's `with_tools` accepts: one tool, a `#[toolset]` value, an `Arc` of either
/// (keep a clone to reach the toolset's state), or a `Vec`, array or tuple of them (tuples may
/// mix tool types).
///
/// ```
/// use std::sync::Arc;
/// use llm_tools_core::{tool, IntoTools, Tool};
///
/// /// Returns the current time
/// #[tool]
/// async fn current_time() -> String { "12:00".into() }
///
/// /// Rolls a die
/// #[tool]
/// async fn dice_roll() -> u8 { 4 }
///
/// let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
/// (CurrentTime, DiceRoll).into_tools(&mut tools);
/// assert_eq!(tools.len(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither a tool nor a set of tools",
    label = "not a tool, a `#[toolset]`, an `Arc` of one, or a `Vec`, array or tuple of them",
    note = "a tool is an `async fn` or `impl` block with `#[tool]`, or a type implementing `Tool`; a toolset is an `impl` block with `#[toolset]`"
)]
pub trait IntoTools {
    /// Appends the tools to `out`.
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>);
}

/// What an `Arc` hands to a chat: a tool gives itself, a `#[toolset]` (which implements this
/// trait) gives its tools, each sharing the state. It is what makes `with_tools(Arc::clone(&set))`
/// work while the application keeps its own handle on the set.
///
/// ```
/// use std::sync::Arc;
/// use llm_tools_core::{toolset, Chat};
/// use llm_tools_core::testing::ScriptedProvider;
///
/// pub struct Counter { hits: std::sync::atomic::AtomicU32 }
///
/// #[toolset]
/// impl Counter {
///     /// Counts one more hit
///     #[tool]
///     async fn hit(&self) -> u32 {
///         self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
///     }
/// }
///
/// let counter = Arc::new(Counter { hits: Default::default() });
/// let mut chat = Chat::new(ScriptedProvider::new());
/// chat.with_tools(Arc::clone(&counter))?;   // the application keeps `counter`
/// assert_eq!(chat.tools()[0].spec().name(), "hit");
/// // The specs without an instance, for schema checks in CI:
/// assert_eq!(Counter::tool_specs()[0].name(), "hit");
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
pub trait SharedTools: Send + Sync + 'static {
    /// The tools, sharing `self`.
    fn shared_tools(self: Arc<Self>) -> Vec<Arc<dyn Tool>>;
}

impl<T: Tool> SharedTools for T {
    fn shared_tools(self: Arc<Self>) -> Vec<Arc<dyn Tool>> {
        vec![self]
    }
}

impl<T: Tool> IntoTools for T {
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
        out.push(Arc::new(self));
    }
}

impl<T: SharedTools> IntoTools for Arc<T> {
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
        out.extend(self.shared_tools());
    }
}

impl IntoTools for Arc<dyn Tool> {
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
        out.push(self);
    }
}

impl<T: IntoTools> IntoTools for Vec<T> {
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
        for t in self {
            t.into_tools(out);
        }
    }
}

impl<T: IntoTools, const N: usize> IntoTools for [T; N] {
    fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
        for t in self {
            t.into_tools(out);
        }
    }
}

macro_rules! tuple_into_tools {
    ($($name:ident)+) => {
        impl<$($name: IntoTools),+> IntoTools for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_tools(self, out: &mut Vec<Arc<dyn Tool>>) {
                let ($($name,)+) = self;
                $($name.into_tools(out);)+
            }
        }
    };
}

tuple_into_tools!(A);
tuple_into_tools!(A B);
tuple_into_tools!(A B C);
tuple_into_tools!(A B C D);
tuple_into_tools!(A B C D E);
tuple_into_tools!(A B C D E F);
tuple_into_tools!(A B C D E F G);
tuple_into_tools!(A B C D E F G H);
tuple_into_tools!(A B C D E F G H I);
tuple_into_tools!(A B C D E F G H I J);
tuple_into_tools!(A B C D E F G H I J K);
tuple_into_tools!(A B C D E F G H I J K L);
tuple_into_tools!(A B C D E F G H I J K L M);
tuple_into_tools!(A B C D E F G H I J K L M N);
tuple_into_tools!(A B C D E F G H I J K L M N O);
tuple_into_tools!(A B C D E F G H I J K L M N O P);

/// Tools that can change while a chat runs: an MCP server's, whose list the server may change
/// at any time, or any registry loaded at run time.
///
/// A chat takes a source with [`Chat::with_tool_source`](crate::Chat::with_tool_source): it
/// registers the source's tools at once, and before every request to the model it calls
/// [`refresh`](Self::refresh) and, when the [`generation`](Self::generation) moved, replaces
/// that source's tools with the new [`tools`](Self::tools) (a new list that does not fit, a
/// name taken by another tool say, is logged and the old tools stay). A source is shared: many
/// chats may hold one.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use llm_tools_core::{tool, BoxFuture, Tool, ToolSource};
///
/// /// Returns the current time
/// #[tool]
/// async fn current_time() -> String { "12:00".into() }
///
/// #[derive(Default)]
/// struct Plugins { tools: Mutex<Vec<Arc<dyn Tool>>>, generation: AtomicU64 }
///
/// impl ToolSource for Plugins {
///     fn tools(&self) -> Vec<Arc<dyn Tool>> {
///         self.tools.lock().unwrap().clone()
///     }
///     fn generation(&self) -> u64 {
///         self.generation.load(Ordering::Acquire)
///     }
///     fn refresh(&self) -> BoxFuture<'_, ()> {
///         Box::pin(async {})
///     }
/// }
///
/// let plugins = Arc::new(Plugins::default());
/// let mut chat = llm_tools_core::Chat::new(llm_tools_core::testing::ScriptedProvider::new());
/// chat.with_tool_source(Arc::clone(&plugins))?;
/// assert!(chat.tools().is_empty());
/// plugins.tools.lock().unwrap().push(Arc::new(CurrentTime));
/// plugins.generation.fetch_add(1, Ordering::Release);
/// // The chat picks the new list up before its next request.
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
pub trait ToolSource: Send + Sync + 'static {
    /// The source's tools now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// A number that changes whenever [`tools`](Self::tools) would return another list.
    fn generation(&self) -> u64;

    /// Brings the list up to date (an MCP server that announced a change is listed again).
    /// Called before every request; should return at once when nothing changed, and must
    /// bound its own waiting.
    fn refresh(&self) -> BoxFuture<'_, ()>;

    /// A name for the source in logs and errors.
    fn source_name(&self) -> &str {
        "tool source"
    }

    /// The source as [`Any`](std::any::Any), for code that knows its type (an MCP client
    /// finding the client a chat holds under its name, see
    /// [`Chat::tool_source`](crate::Chat::tool_source)); `None` by default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

impl<T: ToolSource + ?Sized> ToolSource for Arc<T> {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        (**self).tools()
    }

    fn generation(&self) -> u64 {
        (**self).generation()
    }

    fn refresh(&self) -> BoxFuture<'_, ()> {
        (**self).refresh()
    }

    fn source_name(&self) -> &str {
        (**self).source_name()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        (**self).as_any()
    }
}
