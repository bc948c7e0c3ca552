//! Phase 2: the model of one tool, every value settled and paired with its span.
//!
//! The three forms (`#[tool] async fn`, `#[tool] impl T`, a `#[toolset]` method) all build a
//! [`ToolModel`]; the check phase then reads it, and codegen only quotes it. Building reports
//! what reading the input finds wrong (a missing description, an unreadable `# Arguments`
//! entry); the rules across the settled values are the check phase's.

use darling::error::Accumulator;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, ReturnType, Signature, Type, Visibility};

use super::args::{
    ApprovalArg, ArgAttr, DefaultArg, NamespaceArg, OptionsValue, ProviderOptionsArg, SpillArg,
    ToolArgs,
};
use crate::docs::{self, Description, Docs};
use crate::json::{self, Member};
use crate::{duration, naming, provider_options};

/// One tool, ready for codegen.
pub(crate) struct ToolModel {
    pub(crate) krate: syn::Path,
    pub(crate) ty: ToolType,
    pub(crate) name: String,
    pub(crate) name_span: Span,
    pub(crate) namespace: NamespaceModel,
    pub(crate) description: Description,
    pub(crate) settings: Settings,
    pub(crate) input: Input,
    pub(crate) execute: Method,
    pub(crate) resume: Option<Method>,
    /// `cancel` of the `impl` form: stops the work behind a paused call.
    pub(crate) cancel: Option<Method>,
}

/// The type that implements `Tool`.
pub(crate) enum ToolType {
    /// `#[tool] async fn weather` generates `pub struct Weather;`.
    Unit { ident: Ident, vis: Visibility },
    /// A `#[toolset]` method generates `pub struct CrmLookup { state: Arc<Crm> }`.
    Shared {
        ident: Ident,
        vis: Visibility,
        state: Type,
    },
    /// `#[tool] impl CustomerLookup` implements `Tool` for the user's type.
    Existing(Type),
}

impl ToolModel {
    /// The generated type's name, when the signature also names a type so (`#[tool] async fn
    /// signup(form: Signup)`): defining it would clash with the user's type.
    pub(crate) fn generated_type_in_signature(&self) -> Option<&Ident> {
        match &self.ty {
            ToolType::Unit { ident, .. } | ToolType::Shared { ident, .. } => {
                let name = naming::unraw(ident);
                self.execute.scope_types.contains(&name).then_some(ident)
            }
            ToolType::Existing(_) => None,
        }
    }
}

impl ToolType {
    /// The type's path in generated code.
    pub(crate) fn self_ty(&self) -> Type {
        match self {
            ToolType::Unit { ident, .. } | ToolType::Shared { ident, .. } => {
                syn::parse_quote!(#ident)
            }
            ToolType::Existing(ty) => ty.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) enum NamespaceModel {
    None,
    /// A `Namespace` const.
    Path(syn::Path),
    /// `namespace = "crm", namespace_description = "…"`.
    Name {
        name: syn::LitStr,
        description: Option<syn::LitStr>,
    },
}

/// The namespaces whose meaning the provider defines (Anthropic's computer-use toolset, the names
/// the Responses API reserves): a string namespace with one of these names needs no description.
const PROVIDER_NAMESPACES: &[&str] = &["computer", "browser"];

impl NamespaceModel {
    /// The namespace written in an attribute (`namespace = …`, `namespace_description = …`), or
    /// `inherited` when it gives none. A string namespace needs a description the model can
    /// read (the Responses API refuses a group without one); a description needs a string
    /// namespace beside it.
    pub(crate) fn from_args(
        namespace: Option<NamespaceArg>,
        description: Option<syn::LitStr>,
        inherited: NamespaceModel,
        errors: &mut Accumulator,
    ) -> NamespaceModel {
        match (namespace, description) {
            (Some(NamespaceArg::Name(name)), description) => {
                let value = name.value();
                // An invalid name is reported once, by `check`.
                if description.is_none()
                    && !PROVIDER_NAMESPACES.contains(&value.as_str())
                    && naming::is_valid_tool_name(&value)
                {
                    errors.push(
                        darling::Error::custom(format!(
                            "the namespace `{value}` has no description, which the model reads (and the OpenAI Responses API requires): add `namespace_description = \"…\"`, or declare `const {upper}: Namespace = Namespace::new(\"{value}\").description(\"…\");` and write `namespace = {upper}`",
                            upper = value.to_uppercase().replace('-', "_"),
                        ))
                        .with_span(&name),
                    );
                }
                NamespaceModel::Name { name, description }
            }
            (namespace, Some(description)) => {
                let msg = match namespace {
                    Some(NamespaceArg::Path(_)) => {
                        "`namespace_description` describes a namespace given as a string; a `Namespace` const has its description in the const: `Namespace::new(\"…\").description(\"…\")`"
                    }
                    _ => {
                        "`namespace_description` describes the namespace given beside it as a string: add `namespace = \"…\"` or remove the description"
                    }
                };
                errors.push(darling::Error::custom(msg).with_span(&description));
                Self::from_args(namespace, None, inherited, errors)
            }
            (None, None) => inherited,
            (Some(NamespaceArg::None), None) => NamespaceModel::None,
            (Some(NamespaceArg::Path(p)), None) => NamespaceModel::Path(p),
        }
    }
}

pub(crate) struct Settings {
    /// The title for people.
    pub(crate) title: Option<syn::LitStr>,
    /// The hints, each `None` unless given.
    pub(crate) annotations: [Option<bool>; 4],
    pub(crate) max_run_time_ms: Option<(u64, Span)>,
    pub(crate) defer: bool,
    pub(crate) spill: Spill,
    pub(crate) approval: Approval,
    pub(crate) sequential: bool,
    pub(crate) max_retries: Option<u32>,
    /// Fields added to the definition, per protocol id.
    pub(crate) provider_options: Vec<ProviderOptions>,
}

/// One protocol's options of `provider_options(…)`.
pub(crate) struct ProviderOptions {
    /// The protocol's id (`"anthropic"`, `"openai-responses"`, …).
    pub(crate) id: &'static str,
    pub(crate) value: OptionsModel,
}

/// The options as the spec receives them.
pub(crate) enum OptionsModel {
    /// A JSON object written inline, read at compile time.
    Inline(Vec<Member>),
    /// A `serde_json::Value` expression.
    Expr(syn::Expr),
}

pub(crate) enum Spill {
    Default,
    Never,
    After(u64),
}

pub(crate) enum Approval {
    Never,
    Always,
    Fn(syn::Path),
}

/// Where the parameter schema comes from.
pub(crate) enum Input {
    /// An arguments struct generated from the value parameters.
    Params,
    /// `#[tool(args)]`: the one value parameter's type is the whole argument object.
    Whole,
    /// `#[tool(schema = …)]`: a literal schema; the one value parameter (if any) receives the
    /// arguments.
    Schema(syn::Expr),
}

/// How to call the user's fn or method, and with what.
pub(crate) struct Method {
    pub(crate) ident: Ident,
    pub(crate) params: Vec<Param>,
    /// The return type (or the signature, for `()`), where result type errors point.
    pub(crate) output_span: Span,
    /// The return type is `String`, `&str` or `()`, written so: the result converts through
    /// `IntoToolOutcome` directly, without the probe that picks a conversion by type.
    pub(crate) plain_output: bool,
    /// The return type as written, when a structured result may have a schema (not plain,
    /// no `impl Trait`): the tool's output schema is read from it.
    pub(crate) output: Option<Type>,
    /// The signature, where a non-`Send` future error points.
    pub(crate) sig_span: Span,
    /// The names of the injected parameters (`ctx`, `task`), which an `# Arguments` list may
    /// describe without effect.
    pub(crate) injected: Vec<String>,
    /// The types the signature names by a bare identifier (`Signup` in `form: Signup` or
    /// `-> Vec<Signup>`), which resolve in the fn's own scope: a generated type of the same
    /// name would be a second definition there.
    pub(crate) scope_types: Vec<String>,
}

impl Method {
    pub(crate) fn values(&self) -> impl Iterator<Item = &ValueParam> {
        self.params.iter().filter_map(|p| match p {
            Param::Value(v) => Some(&**v),
            _ => None,
        })
    }
}

pub(crate) enum Param {
    /// `&ToolContext` (`by_ref`) or `ToolContext`: injected.
    Context { by_ref: bool },
    /// `resume`'s `Task`.
    Task,
    /// A parameter the model fills.
    Value(Box<ValueParam>),
}

pub(crate) struct ValueParam {
    pub(crate) ident: Ident,
    /// The argument's name in JSON (the ident without `r#`).
    pub(crate) json_name: String,
    pub(crate) ty: Type,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<DefaultArg>,
    /// Whether `#[arg(…)]` or a doc comment was on the parameter (meaningless outside
    /// [`Input::Params`]).
    pub(crate) attr_span: Option<Span>,
}

/// Which method of a tool a signature is, for the rules on its parameters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `#[tool] async fn`: no receiver.
    Fn,
    /// `execute` or a toolset method: `&self` first.
    Execute,
    /// `resume`: `&self`, then `task: Task`.
    Resume,
    /// `cancel`: `&self`, then `task: Task`, like `resume`.
    Cancel,
}

impl Role {
    /// The method's name, for messages.
    pub(crate) fn method_name(self) -> &'static str {
        match self {
            Role::Fn | Role::Execute => "execute",
            Role::Resume => "resume",
            Role::Cancel => "cancel",
        }
    }

    /// `resume` and `cancel` take the paused call's `Task` after `&self`.
    pub(crate) fn takes_task(self) -> bool {
        matches!(self, Role::Resume | Role::Cancel)
    }
}

/// What the form (fn, impl, toolset) decided before the shared rules run.
pub(crate) struct Defaults {
    pub(crate) krate: syn::Path,
    pub(crate) ty: ToolType,
    /// The name derived from the fn or type, and its span.
    pub(crate) name: (String, Span),
    /// A toolset's namespace, inherited unless the tool says otherwise.
    pub(crate) namespace: NamespaceModel,
    pub(crate) docs: Docs,
}

/// Builds the model from the attribute arguments and the signatures. Every problem goes to
/// `errors`; the returned model is still usable for stub generation.
pub(crate) fn build(
    args: ToolArgs,
    defaults: Defaults,
    execute: Method,
    resume: Option<Method>,
    cancel: Option<Method>,
    errors: &mut Accumulator,
) -> ToolModel {
    let (name, name_span) = match &args.name {
        Some(lit) => (lit.value(), lit.span()),
        None => defaults.name,
    };
    let namespace = NamespaceModel::from_args(
        args.namespace,
        args.namespace_description,
        defaults.namespace,
        errors,
    );
    let description = match &args.description {
        Some(lit) => Description::Text(lit.value()),
        None => {
            if defaults.docs.description.is_empty() {
                errors.push(
                    darling::Error::custom(format!(
                        "tool `{name}` has no description, and the model reads it to decide when to call the tool: add a doc comment saying what it does (`/// …`) or `#[tool(description = \"…\")]`"
                    ))
                    .with_span(&name_span),
                );
            }
            defaults.docs.description
        }
    };
    let max_run_time_ms =
        args.max_run_time
            .as_ref()
            .and_then(|lit| match duration::parse_millis(&lit.value()) {
                Ok(ms) => Some((ms, lit.span())),
                Err(msg) => {
                    errors.push(
                        darling::Error::custom(format!("bad `max_run_time`: {msg}")).with_span(lit),
                    );
                    None
                }
            });
    let max_retries = args.max_retries.as_ref().and_then(|lit| {
        let parsed = match lit {
            syn::Lit::Int(int) => int.base10_parse::<u32>().ok().filter(|&n| n > 0),
            _ => None,
        };
        if parsed.is_none() {
            errors.push(
                darling::Error::custom(
                    "`max_retries` takes how many failed calls in a row a turn allows, a whole number from 1: `max_retries = 3`",
                )
                .with_span(lit),
            );
        }
        parsed
    });
    let spill = match args.spill_to_file {
        None => Spill::Default,
        Some(SpillArg::Never) => Spill::Never,
        Some(SpillArg::After(lit)) => match lit.base10_parse::<u64>() {
            Ok(n) if n > 0 => Spill::After(n),
            _ => {
                errors.push(
                    darling::Error::custom(
                        "`spill_to_file` limit must be a positive number of characters (or `false`)",
                    )
                    .with_span(&lit),
                );
                Spill::Default
            }
        },
    };
    let approval = match args.needs_approval {
        None | Some(ApprovalArg::Never) => Approval::Never,
        Some(ApprovalArg::Always) => Approval::Always,
        Some(ApprovalArg::Fn(p)) => Approval::Fn(p),
    };
    let input = match (args.args.is_present(), args.schema) {
        (false, None) => Input::Params,
        (true, None) => Input::Whole,
        (false, Some(schema)) => Input::Schema(schema.0),
        (true, Some(schema)) => {
            errors.push(
                darling::Error::custom(
                    "`args` and `schema` both say where the schema comes from: keep one",
                )
                .with_span(&args.args.span()),
            );
            Input::Schema(schema.0)
        }
    };
    let mut model = ToolModel {
        krate: defaults.krate,
        ty: defaults.ty,
        name,
        name_span,
        namespace,
        description,
        settings: Settings {
            title: args.title,
            annotations: args.annotations.map_or([None; 4], |a| a.hints()),
            max_run_time_ms,
            defer: args.defer.is_some_and(|b| b.value),
            spill,
            approval,
            sequential: args.sequential.is_some_and(|b| b.value),
            max_retries,
            provider_options: args
                .provider_options
                .map_or_else(Vec::new, |arg| provider_options(arg, errors)),
        },
        input,
        execute,
        resume,
        cancel,
    };
    apply_argument_docs(&mut model, &defaults.docs.arguments, errors);
    for (line, span) in &defaults.docs.unreadable {
        errors.push(
            darling::Error::custom(format!(
                "`{line}` in the `# Arguments` section names no parameter: write each entry as \
                 `` * `name` - description `` (or `* name: description`)"
            ))
            .with_span(span),
        );
    }
    model
}

/// Each provider's options: its key known and taking options, given once, its inline JSON an
/// object that does not set a field the protocol's definition already has.
fn provider_options(arg: ProviderOptionsArg, errors: &mut Accumulator) -> Vec<ProviderOptions> {
    let mut out: Vec<ProviderOptions> = Vec::new();
    for entry in arg.0 {
        let key = naming::unraw(&entry.provider);
        let Some(protocol) = provider_options::find(&key) else {
            let message = match provider_options::WITHOUT_OPTIONS
                .iter()
                .find(|(k, _)| *k == key)
            {
                Some((_, why)) => format!(
                    "`{key}` takes no provider options: {why}; the providers whose tools take options are {}",
                    provider_options::listed()
                ),
                None => {
                    let hint = provider_options::closest(&key)
                        .map(|close| format!("did you mean `{close}`? "))
                        .unwrap_or_default();
                    format!(
                        "unknown provider `{key}` in `provider_options`; {hint}the providers whose tools take options are {}",
                        provider_options::listed()
                    )
                }
            };
            errors.push(darling::Error::custom(message).with_span(&entry.provider));
            continue;
        };
        if out.iter().any(|o| o.id == protocol.id) {
            errors.push(
                darling::Error::custom(format!(
                    "`{key}` is given twice in `provider_options`: keep one"
                ))
                .with_span(&entry.provider),
            );
            continue;
        }
        let not_an_object = |span: Span, quoted: bool| {
            let hint = if quoted {
                ", written inline without quotes"
            } else {
                ""
            };
            darling::Error::custom(format!(
                "`{key}`'s provider options are a JSON object of definition fields{hint}: `{key} = {{ \"field\": value }}`, or a `serde_json::Value` expression"
            ))
            .with_span(&span)
        };
        let value = match entry.value {
            OptionsValue::Inline(group) if group.delimiter() != proc_macro2::Delimiter::Brace => {
                errors.push(not_an_object(group.span(), false));
                continue;
            }
            OptionsValue::Inline(group) => match json::object(&group) {
                Ok(members) => {
                    let own = members
                        .iter()
                        .find(|m| protocol.own.contains(&m.key.as_str()));
                    if let Some(member) = own {
                        errors.push(
                            darling::Error::custom(format!(
                                "`{}` is a field llm-tools writes in every `{key}` tool definition (from the tool itself{}): provider options add fields, they never replace the library's; remove `{}`",
                                member.key,
                                own_setting(&member.key),
                                member.key
                            ))
                            .with_span(&member.span),
                        );
                        continue;
                    }
                    OptionsModel::Inline(members)
                }
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            },
            OptionsValue::Expr(expr) => match &expr {
                syn::Expr::Lit(_) | syn::Expr::Array(_) | syn::Expr::Tuple(_) => {
                    let quoted =
                        matches!(&expr, syn::Expr::Lit(l) if matches!(l.lit, syn::Lit::Str(_)));
                    errors.push(not_an_object(expr.span(), quoted));
                    continue;
                }
                _ => OptionsModel::Expr(expr),
            },
        };
        out.push(ProviderOptions {
            id: protocol.id,
            value,
        });
    }
    out
}

/// The setting behind a field the library writes, when it has one.
fn own_setting(field: &str) -> &'static str {
    match field {
        "strict" => " and the provider's strict setting",
        "defer_loading" => ": `#[tool(defer)]` and tool search",
        _ => "",
    }
}

/// The name of the `impl` block's type (`CustomerLookup` in `impl crm::CustomerLookup`).
pub(crate) fn type_ident(ty: &Type, errors: &mut Accumulator) -> Ident {
    if let Type::Path(tp) = ty
        && let Some(last) = tp.path.segments.last()
    {
        if !matches!(last.arguments, syn::PathArguments::None) {
            errors.push(
                darling::Error::custom(
                    "a tool's type must be concrete: generic arguments are not supported",
                )
                .with_span(&last.arguments),
            );
        }
        return last.ident.clone();
    }
    errors.push(darling::Error::custom("a tool's type must be a named type").with_span(ty));
    Ident::new("UnnamedTool", ty.span())
}

/// Fills parameter descriptions from the `# Arguments` list where the parameter has none of
/// its own; an entry naming no parameter is an error.
fn apply_argument_docs(
    model: &mut ToolModel,
    entries: &[docs::ArgumentDoc],
    errors: &mut Accumulator,
) {
    let takes_params = matches!(model.input, Input::Params);
    let names: Vec<String> = model
        .execute
        .values()
        .map(|v| v.json_name.clone())
        .collect();
    for entry in entries {
        let found = model.execute.params.iter_mut().find_map(|p| match p {
            Param::Value(v) if v.json_name == entry.name => Some(v),
            _ => None,
        });
        match found {
            Some(v) if takes_params => {
                if v.description.is_none() && !entry.text.is_empty() {
                    v.description = Some(entry.text.clone());
                }
            }
            Some(_) => {}
            None if !takes_params || model.execute.injected.contains(&entry.name) => {}
            None => {
                let mut msg = format!(
                    "the `# Arguments` section describes `{}`, which is not a parameter of this tool",
                    entry.name
                );
                if let Some(close) = naming::closest(&entry.name, &names) {
                    msg.push_str(&format!("; did you mean `{close}`?"));
                } else if !names.is_empty() {
                    msg.push_str(&format!(
                        "; the parameters are: {}",
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                errors.push(darling::Error::custom(msg).with_span(&entry.span));
            }
        }
    }
}

/// Whether a return type is `Task` or a `Result` whose `Ok` is `Task` (by the type's name, as
/// the context parameter is recognized).
fn returns_task(ty: &Type) -> bool {
    let Type::Path(tp) = ty else {
        return false;
    };
    let Some(last) = tp.path.segments.last() else {
        return false;
    };
    if last.ident == "Task" {
        return true;
    }
    if last.ident != "Result" {
        return false;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    matches!(args.args.first(), Some(syn::GenericArgument::Type(ok)) if returns_task(ok))
}

/// Reads the parameters of a signature, removing `#[arg]` and doc attributes from it (so the
/// re-emitted fn compiles). Problems go to `errors`.
pub(crate) fn read_signature(sig: &mut Signature, role: Role, errors: &mut Accumulator) -> Method {
    let what = match role {
        Role::Fn => "`#[tool]`",
        Role::Execute | Role::Resume | Role::Cancel => "a tool method",
    };
    if sig.asyncness.is_none() {
        errors.push(
            darling::Error::custom(format!(
                "{what} must be an `async fn`: add `async` before `fn`"
            ))
            .with_span(&sig.fn_token),
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.push(
            darling::Error::custom(format!(
                "{what} cannot be an `unsafe fn`: a tool is called with whatever the model sends"
            ))
            .with_span(token),
        );
    }
    if let Some(c) = &sig.constness {
        errors.push(darling::Error::custom(format!("{what} cannot be a `const fn`")).with_span(c));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        let span = if sig.generics.params.is_empty() {
            sig.generics.where_clause.span()
        } else {
            sig.generics.span()
        };
        errors.push(
            darling::Error::custom(format!(
                "{what} does not support generic functions: the schema is built from concrete parameter types"
            ))
            .with_span(&span),
        );
    }
    if let Some(v) = &sig.variadic {
        errors.push(darling::Error::custom("a tool cannot be variadic").with_span(v));
    }
    let output_span = match &sig.output {
        ReturnType::Default => sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    let plain_output = match &sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => is_plain_output(ty),
    };
    let output = match &sig.output {
        ReturnType::Type(_, ty)
            if !plain_output && !quote::quote!(#ty).to_string().contains("impl") =>
        {
            Some((**ty).clone())
        }
        _ => None,
    };
    if role == Role::Fn
        && let ReturnType::Type(_, ty) = &sig.output
        && returns_task(ty)
    {
        errors.push(
            darling::Error::custom(
                "a `#[tool]` fn that returns a `Task` can never be resumed: put `#[tool]` on an `impl` block with `async fn execute(&self, …)` returning the task and `async fn resume(&self, task: Task, …)` finishing it",
            )
            .with_span(ty),
        );
    }
    let mut params = Vec::new();
    let mut has_receiver = false;
    let mut injected = Vec::new();
    for (index, input) in sig.inputs.iter_mut().enumerate() {
        match input {
            FnArg::Receiver(r) => {
                has_receiver = true;
                check_receiver(r, role, errors);
            }
            FnArg::Typed(pt) => {
                let attrs = std::mem::take(&mut pt.attrs);
                let (ours, kept): (Vec<_>, Vec<_>) = attrs
                    .into_iter()
                    .partition(|a| a.path().is_ident("arg") || docs::is_doc(a));
                pt.attrs = kept;
                let is_first_typed = index == usize::from(has_receiver);
                if role.takes_task() && is_first_typed {
                    if !names_type(&pt.ty, "Task") {
                        let name = role.method_name();
                        errors.push(
                            darling::Error::custom(format!(
                                "`{name}` takes the paused call's `Task` after `&self`: `async fn {name}(&self, task: Task, …)`, then any of `execute`'s parameters"
                            ))
                            .with_span(&pt.ty),
                        );
                    }
                    injected.extend(pat_name(&pt.pat));
                    params.push(Param::Task);
                    continue;
                }
                if let Some(by_ref) = context_kind(&pt.ty) {
                    if let Some(a) = ours.first() {
                        errors.push(
                            darling::Error::custom(
                                "the `ToolContext` parameter is injected, not filled by the model: it takes no `#[arg]` or description",
                            )
                            .with_span(a),
                        );
                    }
                    if params.iter().any(|p| matches!(p, Param::Context { .. })) {
                        errors.push(
                            darling::Error::custom(
                                "a second `ToolContext` parameter: a tool takes its context once; use the first (`&ToolContext` can be cloned)",
                            )
                            .with_span(&pt.pat),
                        );
                    }
                    injected.extend(pat_name(&pt.pat));
                    params.push(Param::Context { by_ref });
                    continue;
                }
                if let Some(p) = read_value_param(pt, &ours, errors) {
                    params.push(Param::Value(Box::new(p)));
                }
            }
        }
    }
    if role == Role::Fn && has_receiver {
        errors.push(
            darling::Error::custom(
                "`#[tool]` on a method needs `#[toolset]` on its `impl` block (or put `#[tool]` on the `impl` block and name the method `execute`)",
            )
            .with_span(&sig.ident),
        );
    } else if role != Role::Fn && !has_receiver {
        errors.push(
            darling::Error::custom(
                "a tool method takes `&self` first: add `&self` (the tool's state is shared between calls)",
            )
            .with_span(&sig.ident),
        );
    }
    if role.takes_task() && !params.iter().any(|p| matches!(p, Param::Task)) {
        let name = role.method_name();
        errors.push(
            darling::Error::custom(format!(
                "`{name}` takes the paused call's `Task` after `&self`: `async fn {name}(&self, task: Task, …)`"
            ))
            .with_span(&sig.ident),
        );
    }
    Method {
        ident: sig.ident.clone(),
        params,
        output_span,
        plain_output,
        output,
        sig_span: sig.span(),
        injected,
        scope_types: scope_types(sig),
    }
}

/// The bare type names of a signature (see [`Method::scope_types`]).
fn scope_types(sig: &Signature) -> Vec<String> {
    struct Collect(Vec<String>);
    impl syn::visit_mut::VisitMut for Collect {
        fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
            if tp.qself.is_none()
                && tp.path.leading_colon.is_none()
                && tp.path.segments.len() == 1
                && let Some(first) = tp.path.segments.first()
            {
                self.0.push(naming::unraw(&first.ident));
            }
            syn::visit_mut::visit_type_path_mut(self, tp);
        }
    }
    let mut collect = Collect(Vec::new());
    let mut sig = sig.clone();
    for input in &mut sig.inputs {
        if let FnArg::Typed(pt) = input {
            syn::visit_mut::VisitMut::visit_type_mut(&mut collect, &mut pt.ty);
        }
    }
    if let ReturnType::Type(_, ty) = &mut sig.output {
        syn::visit_mut::VisitMut::visit_type_mut(&mut collect, ty);
    }
    collect.0
}

fn pat_name(pat: &Pat) -> Option<String> {
    match pat {
        Pat::Ident(pi) => Some(naming::unraw(&pi.ident)),
        _ => None,
    }
}

fn check_receiver(r: &syn::Receiver, role: Role, errors: &mut Accumulator) {
    if role == Role::Fn {
        return;
    }
    match &r.kind {
        syn::ReceiverKind::Reference(_, _, None) => {}
        syn::ReceiverKind::Reference(_, _, Some(m)) => errors.push(
            darling::Error::custom(
                "a tool takes `&self`, not `&mut self`: calls may run concurrently; keep mutable state behind a `Mutex` or an atomic",
            )
            .with_span(m),
        ),
        syn::ReceiverKind::Value => errors.push(
            darling::Error::custom(
                "a tool takes `&self`, not `self` by value: the tool is shared and called many times",
            )
            .with_span(&r.self_token),
        ),
        _ => errors.push(
            darling::Error::custom("a tool takes `&self`").with_span(&r.self_token),
        ),
    }
}

/// `Some(true)` for `&ToolContext`, `Some(false)` for `ToolContext` (matched by the last path
/// segment, so `llm_tools_core::ToolContext` works too).
fn context_kind(ty: &Type) -> Option<bool> {
    fn is_context(ty: &Type) -> bool {
        match ty {
            Type::Path(p) => {
                p.qself.is_none()
                    && p.path.segments.last().is_some_and(|s| {
                        s.ident == "ToolContext" && matches!(s.arguments, syn::PathArguments::None)
                    })
            }
            Type::Group(g) => is_context(&g.elem),
            Type::Paren(p) => is_context(&p.elem),
            _ => false,
        }
    }
    match ty {
        Type::Reference(r) if r.mutability.is_none() && is_context(&r.elem) => Some(true),
        ty if is_context(ty) => Some(false),
        _ => None,
    }
}

fn read_value_param(
    pt: &syn::PatType,
    ours: &[syn::Attribute],
    errors: &mut Accumulator,
) -> Option<ValueParam> {
    let ident = match &*pt.pat {
        Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => pi.ident.clone(),
        other => {
            errors.push(
                darling::Error::custom(
                    "a tool parameter must be a plain name (`city: String`): its name is the argument's name in the schema",
                )
                .with_span(other),
            );
            return None;
        }
    };
    check_param_type(&pt.ty, errors);
    let mut description = None;
    let mut default = None;
    for attr in ours.iter().filter(|a| a.path().is_ident("arg")) {
        let arg = match &attr.meta {
            syn::Meta::List(list) => ArgAttr::parse(list.tokens.clone(), errors),
            other => {
                errors.push(
                    darling::Error::custom(
                        "`#[arg]` takes keys: `#[arg(description = \"…\")]`, `#[arg(default)]` or `#[arg(default = expr)]`",
                    )
                    .with_span(other),
                );
                continue;
            }
        };
        if let Some(d) = arg.description {
            description = Some(d.value());
        }
        if arg.default.is_some() {
            default = arg.default;
        }
    }
    if description.is_none() {
        let doc_attrs: Vec<syn::Attribute> =
            ours.iter().filter(|a| docs::is_doc(a)).cloned().collect();
        description = docs::collect_text(&doc_attrs).map(|(text, _)| text);
    }
    Some(ValueParam {
        json_name: naming::unraw(&ident),
        ident,
        ty: (*pt.ty).clone(),
        description,
        default,
        attr_span: ours.first().map(Spanned::span),
    })
}

/// Types that can never be arguments, caught before the trait-bound probes: borrowed data and
/// `impl Trait`.
fn check_param_type(ty: &Type, errors: &mut Accumulator) {
    match ty {
        Type::ImplTrait(t) => errors.push(
            darling::Error::custom(
                "`impl Trait` parameters are generic: a tool's parameters need concrete types for its schema",
            )
            .with_span(t),
        ),
        Type::Reference(r) => errors.push(
            darling::Error::custom(format!(
                "a tool parameter cannot borrow: arguments are decoded into owned values; take `{}`",
                owned_suggestion(&r.elem)
            ))
            .with_span(r),
        ),
        Type::Group(g) => check_param_type(&g.elem, errors),
        Type::Paren(p) => check_param_type(&p.elem, errors),
        _ => {}
    }
}

fn owned_suggestion(elem: &Type) -> String {
    match elem {
        Type::Path(p) if p.path.is_ident("str") => "String".into(),
        Type::Slice(s) => format!("Vec<{}>", quote::ToTokens::to_token_stream(&s.elem)),
        other => quote::ToTokens::to_token_stream(other).to_string(),
    }
}

/// `String`, `std::string::String`, `&str`, `&'static str` or `()`, as written.
fn is_plain_output(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => t.elems.is_empty(),
        Type::Reference(r) => {
            r.mutability.is_none()
                && matches!(&*r.elem, Type::Path(p) if p.qself.is_none() && p.path.is_ident("str"))
        }
        Type::Path(p) if p.qself.is_none() => {
            let names: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let plain = p.path.segments.iter().all(|s| s.arguments.is_none());
            plain
                && (names == ["String"]
                    || names == ["std", "string", "String"]
                    || names == ["alloc", "string", "String"])
        }
        Type::Paren(inner) => is_plain_output(&inner.elem),
        _ => false,
    }
}

/// Whether `ty` is written as a path ending in `name` (`Task`, `llm_tools_core::Task`).
fn names_type(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == name),
        Type::Paren(p) => names_type(&p.elem, name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn read(sig: Signature, role: Role) -> (Method, Vec<String>) {
        let mut sig = sig;
        let mut errors = darling::Error::accumulator();
        let m = read_signature(&mut sig, role, &mut errors);
        let msgs = errors
            .into_inner()
            .iter()
            .map(ToString::to_string)
            .collect();
        (m, msgs)
    }

    #[test]
    fn context_is_injected_and_values_are_read() {
        let (m, errs) = read(
            parse_quote!(async fn weather(
                #[arg(description = "Lat")] latitude: f64,
                /// Long
                longitude: f64,
                ctx: &ToolContext,
                #[arg(default)] r#type: Option<String>,
            )),
            Role::Fn,
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(m.params.len(), 4);
        assert!(matches!(m.params[2], Param::Context { by_ref: true }));
        let v: Vec<_> = m.values().collect();
        assert_eq!(v[0].description.as_deref(), Some("Lat"));
        assert_eq!(v[1].description.as_deref(), Some("Long"));
        assert_eq!(v[2].json_name, "type");
        assert!(v[2].default.is_some());
    }

    #[test]
    fn signature_mistakes_are_all_reported() {
        let (_, errs) = read(
            parse_quote!(fn bad<T>(a: &str, (b, c): (u8, u8), d: impl Sized)),
            Role::Fn,
        );
        assert_eq!(errs.len(), 5, "{errs:?}");
        assert!(errs[0].contains("must be an `async fn`"));
        assert!(errs[1].contains("generic functions"));
        assert!(errs[2].contains("take `String`"));
        assert!(errs[3].contains("plain name"));
        assert!(errs[4].contains("`impl Trait`"));
    }

    #[test]
    fn receivers_are_checked_for_methods() {
        let (_, errs) = read(parse_quote!(async fn execute(self)), Role::Execute);
        assert!(errs[0].contains("not `self` by value"), "{errs:?}");
        let (_, errs) = read(parse_quote!(async fn execute(&mut self)), Role::Execute);
        assert!(errs[0].contains("not `&mut self`"), "{errs:?}");
        let (_, errs) = read(parse_quote!(async fn a(&self)), Role::Fn);
        assert!(errs[0].contains("needs `#[toolset]`"), "{errs:?}");
        let (m, errs) = read(
            parse_quote!(async fn resume(&self, task: Task, city: String)),
            Role::Resume,
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert!(matches!(m.params[0], Param::Task));
    }
}
