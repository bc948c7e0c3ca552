//! Used by the code `llm-tools-macros` generates. Not public API: no semver guarantees.

pub use ::core;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json;
pub use ::std;

pub use std::boxed::Box;
pub use std::sync::{Arc, OnceLock};
pub use std::time::Duration;
pub use std::vec::Vec;

pub use crate::args::decode as decode_args;
pub use crate::schema::{ParamSchema, normalize as normalize_schema, params_schema, schema_for};
pub use crate::spec::is_valid_tool_name;
pub use crate::{
    context::ToolContext,
    error::ToolError,
    future::BoxFuture,
    message::ToolCall,
    namespace::Namespace,
    output::ToolOutcome,
    spec::{SpillToFile, ToolAnnotations, ToolSpec},
    task::Task,
    tool::{IntoTools, RawArgs, SharedTools, Tool},
};
pub use schemars::Schema;
pub use schemars::generate::SchemaGenerator;

use std::future::Future;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

pub use crate::output::IntoToolOutcome;

// Bound probes. Generated code checks each parameter type, the arguments type and the returned
// future against these traits, spanned on the user's tokens, so a type error names the problem
// and points at the parameter (not at generated code).

/// What a `#[tool]` parameter type must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument",
    label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
    note = "derive both for it: `#[derive(serde::Deserialize, schemars::JsonSchema)]`",
    note = "if both are derived, the `JsonSchema` is another schemars version's: llm-tools needs schemars 1 \
            (`cargo tree -i schemars` shows which crates bring 0.8); `llm_tools_core::schemars` is the one it takes"
)]
pub trait ToolArg: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArg for T {}

/// [`ToolArg`] in a crate whose `Cargo.toml` depends on a schemars other than 1: the same bound,
/// with a note saying that this is the likely cause.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument",
    label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema` (of schemars 1)",
    note = "this crate's `Cargo.toml` depends on a schemars other than 1: a `JsonSchema` derived with it \
            is not the one llm-tools takes; derive with schemars 1 (`llm_tools_core::schemars`, with \
            `#[schemars(crate = \"llm_tools_core::schemars\")]`) or move the dependency to `schemars = \"1\"`",
    note = "if `JsonSchema` is not derived, derive both for it: `#[derive(serde::Deserialize, schemars::JsonSchema)]`"
)]
pub trait ToolArgOtherSchemars: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgOtherSchemars for T {}

/// What the parameter of a `#[tool(schema = …)]` tool must be: its schema is given, so only
/// decoding is needed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot receive the arguments of a tool",
    label = "this type must implement `serde::Deserialize`",
    note = "take `serde_json::Value`, or derive `serde::Deserialize` for this type"
)]
pub trait ToolArgValue: DeserializeOwned {}

impl<T: DeserializeOwned> ToolArgValue for T {}

/// What a tool may return when nothing more specific applies: any `Serialize` value (sent as
/// JSON).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the result of a tool",
    label = "a tool cannot return this type",
    note = "return `String`, `&'static str`, `()`, `ToolOutput`, `Attachment`, `(text, Vec<Attachment>)`, \
            `Task`, any `serde::Serialize` value (sent as JSON), or a `Result` of one of these \
            whose error converts into `ToolError`"
)]
pub trait ToolResult: Serialize {}

impl<T: Serialize> ToolResult for T {}

/// What the error of a tool's `Result` must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error of a tool",
    label = "this error type does not convert into `ToolError`",
    note = "return `ToolError` (`ToolError::recoverable(message)` for an error the model should \
            see and act on) or any `std::error::Error` type (a fatal error that stops the turn)"
)]
pub trait ToolErrorValue: Into<ToolError> {}

impl<E: Into<ToolError>> ToolErrorValue for E {}

/// What a tool's future must be: tools run on a multi-threaded runtime.
#[diagnostic::on_unimplemented(
    message = "the future of this tool is not `Send`",
    label = "this future cannot be sent between threads",
    note = "tools run on a multi-threaded runtime: do not hold a value that is not `Send` \
            (an `Rc`, a `RefCell` borrow, a `std::sync::MutexGuard`) across an `.await`"
)]
pub trait SendFuture: Future + Send {}

impl<F: Future + Send> SendFuture for F {}

/// Checks that a tool's future is `Send` (generated code spans the call on the fn signature).
#[inline(always)]
pub fn check_send<F: SendFuture>(future: F) -> F {
    future
}

/// How a tool gets its schema and decodes its arguments, as fn pointers.
///
/// Generated code builds one in a `const`, through a generic `const fn` whose bounds are the
/// parameter types' (`T0: ToolArg, T1: ToolArg, …`) called with the user's types as turbofish
/// arguments: that call is the only place the bounds are required, so a parameter type that is
/// not an argument type gives one error, on that type, with [`ToolArg`]'s message (rather than
/// one error per derived impl and use site).
pub struct ArgsOps<A> {
    /// The neutral schema of the arguments.
    pub schema: fn() -> serde_json::Value,
    /// Decodes the raw JSON arguments.
    pub decode: fn(&str, Accepted<'_>) -> Result<A, ToolError>,
}

impl<A: DeserializeOwned + JsonSchema> ArgsOps<A> {
    /// Schema from `JsonSchema`, decoding from `Deserialize`.
    pub const fn derived() -> Self {
        ArgsOps {
            schema: schema_for::<A>,
            decode: decode_accepted::<A>,
        }
    }
}

impl<A: DeserializeOwned> ArgsOps<A> {
    /// Decoding from `Deserialize`, the schema from `schema` (a `#[tool]` fn's parameters:
    /// [`params_schema`] on their table).
    pub const fn with_schema(schema: fn() -> serde_json::Value) -> Self {
        ArgsOps {
            schema,
            decode: decode_accepted::<A>,
        }
    }

    /// Decoding only (the schema is given elsewhere).
    pub const fn decode_only() -> Self {
        ArgsOps {
            schema: crate::schema::empty_object_schema,
            decode: decode_accepted::<A>,
        }
    }
}

/// The argument names a decoding error lists.
#[derive(Clone, Copy)]
pub enum Accepted<'a> {
    /// Known at compile time.
    Names(&'a [&'a str]),
    /// The properties of the tool's schema (for user-typed arguments), read only on failure.
    Schema(&'a ToolSpec),
}

fn decode_accepted<A: DeserializeOwned>(raw: &str, accepted: Accepted<'_>) -> Result<A, ToolError> {
    crate::args::decode_listing(raw, &|| accepted.names())
}

impl<'a> Accepted<'a> {
    /// The names listed: the schema's properties for [`Accepted::Schema`].
    fn names(self) -> Vec<&'a str> {
        match self {
            Accepted::Names(names) => names.to_vec(),
            Accepted::Schema(spec) => spec
                .parameters()
                .get("properties")
                .and_then(serde_json::Value::as_object)
                .map(|props| props.keys().map(String::as_str).collect())
                .unwrap_or_default(),
        }
    }
}

/// The schema of one parameter type, as a fn pointer for [`ParamSchema::schema`].
pub fn subschema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// Tells an `Option` parameter type from the others, by autoref: generated code calls
/// `(&OptionProbe::<T>::NEW).optional()` with the user's type, and method resolution picks
/// [`IsOption`] for `Option<_>` (its impl is on the reference) and [`NotOption`] otherwise. It
/// names no bound, so a type that is no argument type is not reported here a second time.
pub struct OptionProbe<T>(PhantomData<fn() -> T>);

impl<T> OptionProbe<T> {
    /// The probe.
    pub const NEW: Self = OptionProbe(PhantomData);
}

impl<T> Clone for OptionProbe<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for OptionProbe<T> {}

/// See [`OptionProbe`].
pub trait IsOption {
    /// `true`.
    fn optional(self) -> bool;
}

impl<T> IsOption for &OptionProbe<Option<T>> {
    fn optional(self) -> bool {
        true
    }
}

/// See [`OptionProbe`].
pub trait NotOption {
    /// `false`.
    fn optional(self) -> bool;
}

impl<T> NotOption for OptionProbe<T> {
    fn optional(self) -> bool {
        false
    }
}

/// A parameter's default as JSON when its type is `Serialize` (by autoref: the inherent method
/// needs `Serialize`, [`NoDefaultValue`] answers `None` for the others), as schemars' derive
/// puts it in the schema.
pub struct DefaultValue<T>(pub T);

impl<T: Serialize> DefaultValue<T> {
    /// The default, serialized.
    pub fn to_json(self) -> Option<serde_json::Value> {
        serde_json::to_value(self.0).ok()
    }
}

/// See [`DefaultValue`].
pub trait NoDefaultValue: Sized {
    /// `None`: the type is not `Serialize`.
    fn to_json(self) -> Option<serde_json::Value> {
        None
    }
}

impl<T> NoDefaultValue for DefaultValue<T> {}

/// `#[serde(deserialize_with)]` for parameters with a default expression
/// (`#[arg(default = …)]`): `null` means "use the default". Generated code wraps it in a fn
/// that passes the parameter's default fn.
pub fn null_or<'de, D, T>(deserializer: D, default: fn() -> T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_else(default))
}

// Joined names at compile time: `Weather::JOINED_NAME` is a `const`, built from the namespace
// const and the tool's name by these `const fn`s.

/// The name of a namespace `const`. Meant for `const` evaluation only: a namespace built at run
/// time gives `""` (and its name's allocation is leaked).
pub const fn namespace_name(namespace: Namespace) -> &'static str {
    namespace.into_static_name()
}

/// The length of `{namespace}_{name}`.
pub const fn joined_name_len(namespace: &str, name: &str) -> usize {
    namespace.len() + 1 + name.len()
}

/// The bytes of `{namespace}_{name}`; `N` is [`joined_name_len`].
pub const fn join_name<const N: usize>(namespace: &str, name: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let (ns, name) = (namespace.as_bytes(), name.as_bytes());
    let mut i = 0;
    while i < ns.len() && i < N {
        out[i] = ns[i];
        i += 1;
    }
    if i < N {
        out[i] = b'_';
        i += 1;
    }
    let mut j = 0;
    while j < name.len() && i < N {
        out[i] = name[j];
        i += 1;
        j += 1;
    }
    out
}

/// The joined name as text. The bytes come from two `&str`s and an `_`, so they are UTF-8; the
/// `""` arm is unreachable.
pub const fn joined_name_str(bytes: &'static [u8]) -> &'static str {
    match core::str::from_utf8(bytes) {
        Ok(name) => name,
        Err(_) => "",
    }
}

/// What `#[arg(default)]` needs of a parameter type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `Default`, which `#[arg(default)]` needs",
    label = "this type does not implement `Default`",
    note = "give the default value instead: `#[arg(default = …)]`, or derive `Default` for the type"
)]
pub trait ArgDefault: Default {}

impl<T: Default> ArgDefault for T {}

/// The default of a parameter with `#[arg(default)]`.
pub fn default_of<T: ArgDefault>() -> T {
    T::default()
}

// Turning a tool's return value into a `ToolOutcome`, chosen by the concrete return type at the
// call site (autoref specialization):
//
//   1. `R: IntoToolOutcome` (text, `()`, `ToolOutput`, `Task`, `Result` of those) as it says;
//   2. any other `Result<T, E>`: `Ok` as JSON, `Err` as the error (`T: Serialize` and
//      `E: Into<ToolError>` are required there, so a `Result` whose error does not convert is
//      a compile error naming the error type rather than a value serialized as `{"Err": …}`);
//   3. `R: Serialize`: as JSON.
//
// Generated code calls `(&&&Probe::of(&value)).__llm_tools_kind().into_outcome(value)` with the
// three `Via*` traits in scope.

/// Carries the return type for method resolution.
pub struct Probe<R>(PhantomData<fn() -> R>);

impl<R> Probe<R> {
    /// A probe for the type of `value`.
    pub fn of(_value: &R) -> Self {
        Probe(PhantomData)
    }
}

/// Rule 1.
pub struct OutcomeKind;
/// Rule 2.
pub struct ResultSerializeKind;
/// Rule 3.
pub struct SerializeKind;

impl OutcomeKind {
    /// Converts with `IntoToolOutcome`.
    pub fn into_outcome<R: IntoToolOutcome>(self, value: R) -> ToolOutcome {
        value.into_tool_outcome()
    }
}

impl ResultSerializeKind {
    /// `Ok` as JSON, `Err` as the error.
    pub fn into_outcome<T: ToolResult, E: ToolErrorValue>(
        self,
        value: Result<T, E>,
    ) -> ToolOutcome {
        match value {
            Ok(v) => crate::output::serialize_outcome(&v),
            Err(e) => ToolOutcome::Error(e.into()),
        }
    }
}

impl SerializeKind {
    /// As JSON. The bound is here rather than on the `ViaSerialize` impl, so a return type no
    /// rule accepts fails with [`ToolResult`]'s message on the tool's return type.
    pub fn into_outcome<R: ToolResult>(self, value: R) -> ToolOutcome {
        crate::output::serialize_outcome(&value)
    }
}

/// Rule 1 (highest priority: matched on `&&&Probe`).
pub trait ViaOutcome {
    /// Picks rule 1.
    fn __llm_tools_kind(&self) -> OutcomeKind {
        OutcomeKind
    }
}

impl<R: IntoToolOutcome> ViaOutcome for &&Probe<R> {}

/// Rule 2 (matched after one deref).
pub trait ViaResultSerialize {
    /// Picks rule 2.
    fn __llm_tools_kind(&self) -> ResultSerializeKind {
        ResultSerializeKind
    }
}

impl<T, E> ViaResultSerialize for &Probe<Result<T, E>> {}

/// Rule 3 (matched after two derefs).
pub trait ViaSerialize {
    /// Picks rule 3.
    fn __llm_tools_kind(&self) -> SerializeKind {
        SerializeKind
    }
}

impl<R> ViaSerialize for Probe<R> {}

// A tool's output schema, chosen by its declared result type at the call site (autoref
// specialization, as above): `Result<T, E>` gives `T`'s schema, any other type its own, when
// the type derives `JsonSchema` and its schema is an object's; anything else gives none.
// Generated code calls `(&&&&OutputProbe::<R>::new()).__llm_tools_output_schema()` with the
// four `Via*Schema` traits in scope.

/// Carries a tool's result type for method resolution.
pub struct OutputProbe<R>(PhantomData<fn() -> R>);

impl<R> OutputProbe<R> {
    /// A probe for `R`.
    #[allow(clippy::new_without_default)] // only generated code makes one, by this name
    pub const fn new() -> Self {
        OutputProbe(PhantomData)
    }
}

/// The schema of `T` as schemars writes it (draft 2020-12: an `Option` field allows `null`,
/// as the serialized value may hold), when it describes an object.
fn object_schema<T: JsonSchema>() -> Option<serde_json::Value> {
    let schema = SchemaGenerator::default().into_root_schema_for::<T>();
    let schema = serde_json::to_value(schema).ok()?;
    (schema.get("type").and_then(serde_json::Value::as_str) == Some("object")).then_some(schema)
}

/// `Result<T, E>` with `T: JsonSchema` (matched on `&&&&OutputProbe`).
pub trait ViaResultSchema {
    /// `T`'s schema.
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value>;
}

impl<T: JsonSchema, E> ViaResultSchema for &&&OutputProbe<Result<T, E>> {
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value> {
        object_schema::<T>()
    }
}

/// Any other `Result` (matched after one deref): no schema.
pub trait ViaResultNoSchema {
    /// None.
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value> {
        None
    }
}

impl<T, E> ViaResultNoSchema for &&OutputProbe<Result<T, E>> {}

/// A type with a schema (matched after two derefs).
pub trait ViaSchema {
    /// Its schema.
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value>;
}

impl<R: JsonSchema> ViaSchema for &OutputProbe<R> {
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value> {
        object_schema::<R>()
    }
}

/// Anything else (matched after three derefs): no schema.
pub trait ViaNoSchema {
    /// None.
    fn __llm_tools_output_schema(&self) -> Option<serde_json::Value> {
        None
    }
}

impl<R> ViaNoSchema for OutputProbe<R> {}

/// A per-call approval rule given as `needs_approval = path`: a `fn(&ToolCall) -> bool`, or a
/// `fn(&A) -> bool` on the call's arguments decoded as `A` (a `Deserialize + JsonSchema` type,
/// holding the parameters the rule needs; arguments that do not decode as `A` need approval). `M` tells
/// the two apart, so one generic call site takes either.
#[diagnostic::on_unimplemented(
    message = "`needs_approval = …` takes a `fn(&ToolCall) -> bool` or a `fn(&Args) -> bool`",
    label = "this fn does not decide whether a call needs approval",
    note = "`Args` is a `Deserialize + JsonSchema` type holding the parameters the rule reads, e.g. `struct Amount {{ amount: u64 }}`; arguments that do not decode as it need approval"
)]
pub trait ApprovalRule<M> {
    /// Whether this call needs approval.
    fn needs_approval(&self, call: &ToolCall) -> bool;
}

/// Marks a rule on the raw call.
pub enum OnCall {}

/// Marks a rule on decoded arguments of type `A`.
pub struct OnArgs<A>(PhantomData<fn() -> A>);

impl<F: Fn(&ToolCall) -> bool> ApprovalRule<OnCall> for F {
    fn needs_approval(&self, call: &ToolCall) -> bool {
        self(call)
    }
}

// `JsonSchema` as well as `Deserialize` (as for any parameter type): it keeps `ToolCall`, which
// is only `Deserialize`, out of this impl, so a `fn(&ToolCall) -> bool` picks the one above.
impl<A: DeserializeOwned + JsonSchema, F: Fn(&A) -> bool> ApprovalRule<OnArgs<A>> for F {
    fn needs_approval(&self, call: &ToolCall) -> bool {
        match crate::args::decode::<A>(&call.arguments, &[]) {
            Ok(args) => self(&args),
            Err(_) => true,
        }
    }
}

/// Runs a rule of either kind.
pub fn needs_approval<M, R: ApprovalRule<M>>(rule: R, call: &ToolCall) -> bool {
    rule.needs_approval(call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{output::ToolOutput, task::Task};

    macro_rules! outcome {
        ($value:expr) => {{
            #[allow(unused_imports)]
            use super::{ViaOutcome as _, ViaResultSerialize as _, ViaSerialize as _};
            let value = $value;
            (&&&Probe::of(&value))
                .__llm_tools_kind()
                .into_outcome(value)
        }};
    }

    fn text(o: ToolOutcome) -> String {
        match o {
            ToolOutcome::Output(o) => o.into_text(),
            other => panic!("expected output, got {other:?}"),
        }
    }

    #[derive(Serialize)]
    struct Forecast {
        temperature: f64,
    }

    #[test]
    fn return_types_pick_the_right_conversion() {
        assert_eq!(text(outcome!(String::from("plain"))), "plain");
        assert_eq!(text(outcome!("static")), "static");
        assert_eq!(text(outcome!(())), "");
        assert_eq!(text(outcome!(ToolOutput::text("x"))), "x");
        assert_eq!(
            text(outcome!(Forecast { temperature: 15.5 })),
            r#"{"temperature":15.5}"#
        );
        assert_eq!(text(outcome!(42_u8)), "42");
        assert_eq!(text(outcome!(Some(vec![1, 2]))), "[1,2]");
        assert_eq!(
            text(outcome!(serde_json::json!({"roll": 3}))),
            r#"{"roll":3}"#
        );
        assert_eq!(
            text(outcome!(Ok::<_, ToolError>(Forecast { temperature: 1.0 }))),
            r#"{"temperature":1.0}"#
        );
        assert_eq!(text(outcome!(Ok::<_, ToolError>(String::from("s")))), "s");
        assert!(matches!(outcome!(Task::working("w")), ToolOutcome::Task(_)));
        let e = outcome!(Err::<Forecast, _>(std::io::Error::other("db down")));
        assert!(matches!(e, ToolOutcome::Error(e) if e.is_fatal()));
        let e = outcome!(Err::<Option<Forecast>, _>(ToolError::recoverable("no")));
        assert!(matches!(e, ToolOutcome::Error(e) if e.is_recoverable()));
    }
}
