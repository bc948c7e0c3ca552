//! Phase 4: the generated code, from a checked [`ToolModel`]. Nothing here validates.
//!
//! For `#[tool] async fn weather(…)` it emits:
//!
//! - `pub struct Weather;` (the fn's visibility), documented;
//! - `impl Weather { pub const NAME, NAMESPACE, JOINED_NAME }`;
//! - in a `const _: () = { … };` block: the arguments struct (a serde derive through
//!   `__private`, generic over the parameter types), the schema fn (one `params_schema` call on
//!   a table of the parameters, instead of a schemars derive per tool: a third of the build
//!   time of a tool), the `ArgsOps` const whose generic gate checks the parameter types, a
//!   compile-time check of the joined name, and `impl Tool for Weather` (spec built once in a
//!   `static OnceLock`).
//!
//! What this costs to build is measured by `scripts/build-cost.sh` against the same tools
//! written by hand (README, "Build cost").

use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use super::model::{
    Approval, Input, Method, NamespaceModel, OptionsModel, Param, Spill, ToolModel, ToolType,
    ValueParam,
};
use crate::docs::Description;
use crate::json::{Json, Member};
use crate::paths;

/// Everything a tool adds next to the user's item.
pub(crate) fn tool(model: &ToolModel) -> TokenStream {
    let p = private(model);
    let self_ty = model.ty.self_ty();
    let type_def = type_def(model);
    let consts = consts(model);
    let name_check = joined_name_check(model);
    // `resume` and `cancel`, when the tool has them: their arguments struct and their method.
    let optional = |method: &Option<Method>, role| {
        method
            .as_ref()
            .map(|m| (args_items(model, m, role), method_fn(model, m, role)))
            .unzip()
    };
    let (resume_items, resume) = optional(&model.resume, Role::Resume);
    let (cancel_items, cancel) = optional(&model.cancel, Role::Cancel);
    let args_items = args_items(model, &model.execute, Role::Execute);
    let (spec_static, spec) = spec_fns(model);
    let call = method_fn(model, &model.execute, Role::Execute);
    let approval = approval_fn(model);
    let registration = registration(model);
    quote! {
        #type_def
        #consts
        const _: () = {
            #registration
            #name_check
            #args_items
            #resume_items
            #cancel_items
            #spec_static
            #[automatically_derived]
            impl #p::Tool for #self_ty {
                #spec
                #call
                #resume
                #cancel
                #approval
            }
        };
    }
}

/// Submits the tool's spec to `llm_tools_core::all_tool_specs` (see core's `registration`).
fn registration(model: &ToolModel) -> TokenStream {
    let krate = &model.krate;
    let self_ty = model.ty.self_ty();
    quote! {
        #krate::registration::__inventory::submit! {
            #krate::registration::ToolRegistration::new(<#self_ty>::tool_spec)
        }
    }
}

/// `#[tool]` requires `async`, so clippy's `unused_async` (pedantic) has nothing to suggest on a
/// tool fn; it is allowed on the fns the macro calls.
pub(crate) fn allow_unused_async(attrs: &mut Vec<syn::Attribute>) {
    attrs.push(syn::parse_quote!(#[allow(clippy::unused_async)]));
}

/// What is emitted when the macro reports errors: the tool type and its consts, and a `Tool`
/// impl that is never run, so code using the tool does not add errors of its own.
pub(crate) fn stub(model: &ToolModel) -> TokenStream {
    if model.generated_type_in_signature().is_some() {
        // The name is the user's type's: a stub would be a second definition, and its impls
        // would land on the user's type.
        return TokenStream::new();
    }
    let p = private(model);
    let self_ty = model.ty.self_ty();
    let type_def = type_def(model);
    let name = &model.name;
    let consts_owner = match &model.ty {
        ToolType::Existing(syn::Type::Path(tp)) if has_generics(tp) => return type_def,
        _ => &self_ty,
    };
    quote! {
        #type_def
        #[allow(dead_code)]
        impl #consts_owner {
            #[doc = "The tool's name."]
            pub const NAME: &'static str = #name;
            #[doc = "The tool's namespace."]
            pub const NAMESPACE: ::core::option::Option<#p::Namespace> = ::core::option::Option::None;
            #[doc = "The tool's joined name."]
            pub const JOINED_NAME: &'static str = #name;
            #[doc = "The tool's spec."]
            pub fn tool_spec() -> &'static #p::ToolSpec {
                ::core::unreachable!()
            }
        }
        #[automatically_derived]
        impl #p::Tool for #self_ty {
            fn spec(&self) -> &#p::ToolSpec {
                ::core::unreachable!()
            }
            fn call<'a>(&'a self, _: #p::RawArgs<'a>, _: #p::ToolContext) -> #p::BoxFuture<'a, #p::ToolOutcome> {
                ::core::unreachable!()
            }
        }
    }
}

fn has_generics(tp: &syn::TypePath) -> bool {
    tp.path
        .segments
        .iter()
        .any(|s| !matches!(s.arguments, syn::PathArguments::None))
}

fn private(model: &ToolModel) -> TokenStream {
    let krate = &model.krate;
    quote!(#krate::__private)
}

/// A span at the user's tokens that resolves names like generated code does.
fn at(span: Span) -> Span {
    span.resolved_at(Span::call_site())
}

fn type_def(model: &ToolModel) -> TokenStream {
    let p = private(model);
    let summary = match &model.description {
        Description::Text(t) => t.split("\n\n").next().unwrap_or("").replace('\n', " "),
        Description::Expr(_) => String::new(),
    };
    let summary = if summary.is_empty() {
        String::new()
    } else {
        format!(": {}", summary.trim_end_matches('.'))
    };
    match &model.ty {
        ToolType::Unit { ident, vis } => {
            let doc = format!(
                "The `{}` tool{summary}.\n\nGenerated by `#[tool]` from `async fn {}`, which stays callable as written; this type implements `llm_tools_core::Tool`.",
                model.name, model.execute.ident
            );
            quote! {
                #[doc = #doc]
                #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
                #vis struct #ident;
            }
        }
        ToolType::Shared { ident, vis, state } => {
            let doc = format!(
                "The `{}` tool{summary}.\n\nGenerated by `#[toolset]` from the method `{}`; it shares its state with the other tools of the toolset.",
                model.name, model.execute.ident
            );
            let new_doc = "The tool, running on the toolset's shared state.";
            quote! {
                #[doc = #doc]
                #[derive(::core::clone::Clone)]
                #vis struct #ident {
                    state: #p::Arc<#state>,
                }

                impl #ident {
                    #[doc = #new_doc]
                    #vis fn new(state: #p::Arc<#state>) -> Self {
                        Self { state }
                    }
                }
            }
        }
        ToolType::Existing(_) => TokenStream::new(),
    }
}

fn consts(model: &ToolModel) -> TokenStream {
    let p = private(model);
    let self_ty = model.ty.self_ty();
    let name = &model.name;
    let name_doc = format!("The tool's name: `{name}`.");
    let (namespace, ns_doc, joined, joined_doc) = match &model.namespace {
        NamespaceModel::None => (
            quote!(::core::option::Option::None),
            "The tool's namespace: none.".to_owned(),
            quote!(#name),
            format!("The name a chat knows the tool by: `{name}` (no namespace)."),
        ),
        NamespaceModel::Name {
            name: lit,
            description,
        } => {
            let joined = format!("{}_{name}", lit.value());
            let description = description.as_ref().map(|d| quote!(.description(#d)));
            (
                quote!(::core::option::Option::Some(#p::Namespace::new(#lit) #description)),
                format!("The tool's namespace: `{}`.", lit.value()),
                quote!(#joined),
                format!("The name a chat knows the tool by: `{joined}`."),
            )
        }
        NamespaceModel::Path(path) => {
            let path_str = quote!(#path).to_string().replace(' ', "");
            (
                quote!(::core::option::Option::Some(#path)),
                format!("The tool's namespace: `{path_str}`."),
                quote!({
                    const NS: &str = #p::namespace_name(#path);
                    const LEN: usize = #p::joined_name_len(NS, #name);
                    const BYTES: [u8; LEN] = #p::join_name::<LEN>(NS, #name);
                    #p::joined_name_str(&BYTES)
                }),
                format!(
                    "The name a chat knows the tool by: `{{namespace}}_{name}`, with the name of `{path_str}`."
                ),
            )
        }
    };
    quote! {
        #[allow(dead_code)]
        impl #self_ty {
            #[doc = #name_doc]
            pub const NAME: &'static str = #name;
            #[doc = #ns_doc]
            pub const NAMESPACE: ::core::option::Option<#p::Namespace> = #namespace;
            #[doc = #joined_doc]
            pub const JOINED_NAME: &'static str = #joined;
        }
    }
}

/// A namespace const is only known at compile time: its joined name is checked by a `const`
/// assertion, spanned on the namespace path.
fn joined_name_check(model: &ToolModel) -> TokenStream {
    let NamespaceModel::Path(path) = &model.namespace else {
        return TokenStream::new();
    };
    let p = private(model);
    let self_ty = model.ty.self_ty();
    let path_str = quote!(#path).to_string().replace(' ', "");
    let name_msg = format!(
        "the name of namespace `{path_str}` must be letters, digits, `_` and `-`, start with a letter or `_`, and have at most 64 characters (no spaces or dots): fix the name in its `Namespace::new`"
    );
    let joined_msg = format!(
        "the joined name of tool `{}` in namespace `{path_str}` (`{{{{namespace}}}}_{}`) has more than 64 characters: shorten the namespace's name or the tool's",
        model.name, model.name
    );
    let span = at(syn::spanned::Spanned::span(path));
    quote_spanned! {span=>
        const _: () = {
            let namespace_ok = #p::is_valid_tool_name(#p::namespace_name(#path));
            ::core::assert!(namespace_ok, #name_msg);
            ::core::assert!(
                !namespace_ok || #p::is_valid_tool_name(<#self_ty>::JOINED_NAME),
                #joined_msg
            );
        };
    }
}

/// Which method an arguments struct serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Execute,
    Resume,
    Cancel,
}

impl Role {
    fn struct_ident(self) -> syn::Ident {
        match self {
            Role::Execute => format_ident!("__LlmToolsArgs"),
            Role::Resume => format_ident!("__LlmToolsResumeArgs"),
            Role::Cancel => format_ident!("__LlmToolsCancelArgs"),
        }
    }

    fn gate_ident(self) -> syn::Ident {
        match self {
            Role::Execute => format_ident!("__llm_tools_args"),
            Role::Resume => format_ident!("__llm_tools_resume_args"),
            Role::Cancel => format_ident!("__llm_tools_cancel_args"),
        }
    }

    fn ops_ident(self) -> syn::Ident {
        match self {
            Role::Execute => format_ident!("__LLM_TOOLS_ARGS"),
            Role::Resume => format_ident!("__LLM_TOOLS_RESUME_ARGS"),
            Role::Cancel => format_ident!("__LLM_TOOLS_CANCEL_ARGS"),
        }
    }
}

/// The arguments of a method: the arguments struct (for parameters that become schema
/// properties) and the `ArgsOps` const that decodes them.
///
/// The struct is generic over the parameter types (`struct __LlmToolsArgs<T0, T1> { latitude:
/// T0, … }`), so its derived impls never mention the user's types; the only place the user's
/// types meet the bounds is the turbofish of the gate fn (`__llm_tools_args::<f64, Point>()`),
/// where a type that is not an argument type gets one error, on that type. The schema fn is
/// generic the same way (`__llm_tools_schema::<T0, T1>`, named only by the gate); whether a
/// parameter is an `Option` is read on the concrete type by an autoref probe that has no bound.
/// Parameters with a default stay concrete (their default fns name the type).
fn args_items(model: &ToolModel, method: &Method, role: Role) -> TokenStream {
    let p = private(model);
    let struct_ident = role.struct_ident();
    let gate = role.gate_ident();
    let ops = role.ops_ident();
    let execute = role == Role::Execute;
    let with_schema = execute && matches!(model.input, Input::Params);
    let bound = if execute && !matches!(model.input, Input::Schema(_)) {
        if crate::manifest::depends_on_other_schemars() {
            quote!(#p::ToolArgOtherSchemars)
        } else {
            quote!(#p::ToolArg)
        }
    } else {
        quote!(#p::ToolArgValue)
    };
    let constructor = if execute && matches!(model.input, Input::Params | Input::Whole) {
        quote!(derived)
    } else {
        quote!(decode_only)
    };
    if !matches!(model.input, Input::Params) {
        let Some(v) = method.values().next() else {
            return TokenStream::new();
        };
        let ty = &v.ty;
        return quote! {
            #[allow(non_snake_case)]
            const fn #gate<__LlmToolsT0: #bound>() -> #p::ArgsOps<__LlmToolsT0> {
                #p::ArgsOps::#constructor()
            }
            #[allow(non_upper_case_globals)]
            const #ops: #p::ArgsOps<#ty> = #gate::<#ty>();
        };
    }

    let serde_crate = paths::private_path_str(&model.krate, "serde");
    let mut helpers = TokenStream::new();
    let mut generics: Vec<syn::Ident> = Vec::new();
    let mut generic_tys: Vec<&syn::Type> = Vec::new();
    let mut fields = Vec::new();
    // One entry per parameter for `params_schema`, built in the generic schema fn.
    let mut schema_params = Vec::new();
    for v in method.values() {
        let ValueParam {
            ident: field,
            ty,
            json_name,
            ..
        } = v;
        let description = match &v.description {
            Some(d) => quote!(::core::option::Option::Some(#d)),
            None => quote!(::core::option::Option::None),
        };
        let (attr, field_ty) = match &v.default {
            None => {
                let g = format_ident!("__LlmToolsT{}", generics.len());
                schema_params.push(quote! {
                    #p::ParamSchema {
                        name: #json_name,
                        description: #description,
                        schema: #p::subschema::<#g>,
                        optional: (&#p::OptionProbe::<#ty>::NEW).optional(),
                        default: ::core::option::Option::None,
                    }
                });
                generics.push(g.clone());
                generic_tys.push(ty);
                (TokenStream::new(), quote!(#g))
            }
            Some(default) => {
                // `#[arg(default)]` is `default = <T as Default>::default()` through a bound
                // probe spanned on the type: a type without `Default` is one error there, not
                // one per derive that reads the default.
                let (expr, span) = match default {
                    super::args::DefaultArg::Trait => {
                        let span = at(syn::spanned::Spanned::span(ty));
                        (quote_spanned!(span=> #p::default_of::<#ty>()), span)
                    }
                    super::args::DefaultArg::Expr(expr) => {
                        (quote!(#expr), at(syn::spanned::Spanned::span(expr)))
                    }
                };
                let default_fn = format_ident!("__llm_tools_default_{}", v.json_name);
                let de_fn = format_ident!("__llm_tools_null_or_default_{}", v.json_name);
                let default_str = default_fn.to_string();
                let de_str = de_fn.to_string();
                helpers.extend(quote_spanned! {span=>
                    #[allow(non_snake_case)]
                    fn #default_fn() -> #ty {
                        #expr
                    }
                });
                helpers.extend(quote! {
                    #[allow(non_snake_case)]
                    fn #de_fn<'de, D: #p::serde::Deserializer<'de>>(
                        deserializer: D,
                    ) -> ::core::result::Result<#ty, D::Error> {
                        #p::null_or(deserializer, #default_fn)
                    }
                });
                let ty_span = at(syn::spanned::Spanned::span(ty));
                let subschema = quote_spanned!(ty_span=> #p::subschema::<#ty>);
                schema_params.push(quote! {
                    #p::ParamSchema {
                        name: #json_name,
                        description: #description,
                        schema: #subschema,
                        optional: true,
                        default: #p::DefaultValue(#default_fn()).to_json(),
                    }
                });
                (
                    quote!(#[serde(default = #default_str, deserialize_with = #de_str)]),
                    quote!(#ty),
                )
            }
        };
        fields.push(quote! {
            #attr
            #field: #field_ty,
        });
    }
    let serde_attr = if with_schema {
        quote!(#[serde(crate = #serde_crate, deny_unknown_fields)])
    } else {
        quote!(#[serde(crate = #serde_crate)])
    };
    // The schema: one `params_schema` call on the table of parameters (no `JsonSchema` derive
    // per tool), in a fn generic like the struct, so only the gate names the user's types
    // with bounds.
    let (schema_fn, constructor) = if with_schema {
        let schema_fn = format_ident!("__llm_tools_schema");
        let items = quote! {
            #[allow(non_snake_case)]
            fn #schema_fn<#(#generics: #p::schemars::JsonSchema),*>() -> #p::serde_json::Value {
                #[allow(unused_imports)]
                use #p::{IsOption as _, NoDefaultValue as _, NotOption as _};
                #p::params_schema(&[#(#schema_params),*])
            }
        };
        (items, quote!(with_schema(#schema_fn::<#(#generics),*>)))
    } else {
        (TokenStream::new(), quote!(#constructor()))
    };
    quote! {
        #helpers
        #[derive(#p::serde::Deserialize)]
        #serde_attr
        #[allow(non_camel_case_types, non_snake_case)]
        struct #struct_ident<#(#generics),*> {
            #(#fields)*
        }
        #schema_fn
        #[allow(non_snake_case)]
        const fn #gate<#(#generics: #bound),*>() -> #p::ArgsOps<#struct_ident<#(#generics),*>> {
            #p::ArgsOps::#constructor
        }
        #[allow(non_upper_case_globals)]
        const #ops: #p::ArgsOps<#struct_ident<#(#generic_tys),*>> = #gate::<#(#generic_tys),*>();
    }
}

/// The tool's spec, built once: an inherent `tool_spec()` (readable without an instance, for
/// schema checks in CI) and the `Tool::spec` that returns it.
fn spec_fns(model: &ToolModel) -> (TokenStream, TokenStream) {
    let p = private(model);
    let self_ty = model.ty.self_ty();
    let description = &model.description;
    let parameters = match &model.input {
        Input::Params if model.execute.values().next().is_none() => TokenStream::new(),
        Input::Params | Input::Whole => quote!(.with_parameters((__LLM_TOOLS_ARGS.schema)())),
        Input::Schema(expr) => {
            let span = at(syn::spanned::Spanned::span(expr));
            quote_spanned!(span=> .with_parameters(#p::normalize_schema(#expr)))
        }
    };
    let s = &model.settings;
    let max_run_time = s.max_run_time_ms.map(|(ms, _)| {
        let ms = Literal::u64_unsuffixed(ms);
        quote!(.with_max_run_time(::core::option::Option::Some(#p::Duration::from_millis(#ms))))
    });
    let defer = s.defer.then(|| quote!(.with_defer(true)));
    let spill = match s.spill {
        Spill::Default => None,
        Spill::Never => Some(quote!(.with_spill_to_file(#p::SpillToFile::Never))),
        Spill::After(n) => {
            let n = Literal::u64_unsuffixed(n);
            Some(quote!(.with_spill_to_file(#p::SpillToFile::After(#n))))
        }
    };
    let approval =
        matches!(s.approval, Approval::Always).then(|| quote!(.with_needs_approval(true)));
    let sequential = s.sequential.then(|| quote!(.with_sequential(true)));
    let max_retries = s.max_retries.map(|n| {
        let n = Literal::u32_unsuffixed(n);
        quote!(.with_max_retries(::core::option::Option::Some(#n)))
    });
    let title = s.title.as_ref().map(|title| quote!(.with_title(#title)));
    let annotations = (s.annotations != [None; 4]).then(|| {
        let setters = ["read_only", "destructive", "idempotent", "open_world"]
            .iter()
            .zip(s.annotations)
            .filter_map(|(name, hint)| {
                let setter = syn::Ident::new(name, Span::call_site());
                hint.map(|hint| quote!(.#setter(#hint)))
            });
        quote!(.with_annotations(#p::ToolAnnotations::new() #(#setters)*))
    });
    let provider_options = s.provider_options.iter().map(|options| {
        let id = options.id;
        let value = match &options.value {
            OptionsModel::Inline(members) => json_object(&p, members),
            OptionsModel::Expr(expr) => {
                let span = at(syn::spanned::Spanned::span(expr));
                quote_spanned!(span=> #expr)
            }
        };
        quote!(.with_provider_options(#id, #value))
    });
    // A structured result whose type has a JSON Schema of an object declares it.
    let output_schema = model.execute.output.as_ref().map(|ty| {
        quote! {
            .with_output_schema({
                #[allow(unused_imports)]
                use #p::{ViaNoSchema as _, ViaResultNoSchema as _, ViaResultSchema as _, ViaSchema as _};
                (&&&&#p::OutputProbe::<#ty>::new()).__llm_tools_output_schema()
            })
        }
    });
    let doc = format!(
        "The `{}` tool's spec (name, description, schema, settings), built once; readable without an instance.",
        model.name
    );
    let spec_static = quote! {
        #[allow(dead_code)]
        impl #self_ty {
            #[doc = #doc]
            pub fn tool_spec() -> &'static #p::ToolSpec {
                static SPEC: #p::OnceLock<#p::ToolSpec> = #p::OnceLock::new();
                SPEC.get_or_init(|| {
                    #p::ToolSpec::new(<#self_ty>::NAME, #description)
                        .with_namespace(<#self_ty>::NAMESPACE)
                        #parameters
                        #max_run_time
                        #defer
                        #spill
                        #approval
                        #sequential
                        #max_retries
                        #title
                        #annotations
                        #(#provider_options)*
                        #output_schema
                })
            }
        }
    };
    let spec = quote! {
        fn spec(&self) -> &#p::ToolSpec {
            <#self_ty>::tool_spec()
        }
    };
    (spec_static, spec)
}

/// The code that builds a JSON value read at compile time.
fn json_value(p: &TokenStream, json: &Json) -> TokenStream {
    let value = quote!(#p::serde_json::Value);
    match json {
        Json::Null => quote!(#value::Null),
        Json::Bool(b) => quote!(#value::Bool(#b)),
        Json::UInt(n) => {
            let n = Literal::u64_suffixed(*n);
            quote!(#value::from(#n))
        }
        Json::Int(n) => {
            let n = Literal::i64_suffixed(*n);
            quote!(#value::from(#n))
        }
        Json::Float(f) => {
            let f = Literal::f64_suffixed(*f);
            quote!(#value::from(#f))
        }
        Json::Str(s) => quote!(#value::String(#p::std::string::String::from(#s))),
        Json::Array(items) => {
            let items = items.iter().map(|item| json_value(p, item));
            quote!(#value::Array(#p::Vec::<#value>::from([#(#items),*])))
        }
        Json::Object(members) => json_object(p, members),
    }
}

/// The code that builds a JSON object read at compile time.
fn json_object(p: &TokenStream, members: &[Member]) -> TokenStream {
    let inserts = members.iter().map(|m| {
        let key = &m.key;
        let v = json_value(p, &m.value);
        quote!(map.insert(#p::std::string::String::from(#key), #v);)
    });
    quote!({
        let mut map = #p::serde_json::Map::new();
        #(#inserts)*
        #p::serde_json::Value::Object(map)
    })
}

/// Decodes the arguments into `__llm_tools_decoded` (or nothing when the method takes none).
fn decode(model: &ToolModel, method: &Method, role: Role) -> TokenStream {
    let p = private(model);
    let ops = role.ops_ident();
    let accepted = match &model.input {
        Input::Params => {
            let names = model.execute.values().map(|v| v.json_name.as_str());
            quote!(#p::Accepted::Names(&[#(#names),*]))
        }
        Input::Whole | Input::Schema(_) => {
            if method.values().next().is_none() {
                return TokenStream::new();
            }
            quote!(#p::Accepted::Schema(#p::Tool::spec(self)))
        }
    };
    // `cancel` has nothing to report to: arguments it cannot decode leave the task alone.
    let on_error = if role == Role::Cancel {
        quote!(::core::result::Result::Err(_) => return)
    } else {
        quote!(::core::result::Result::Err(error) => return #p::ToolOutcome::Error(error))
    };
    quote! {
        let __llm_tools_decoded = match (#ops.decode)(__llm_tools_args.as_str(), #accepted) {
            ::core::result::Result::Ok(decoded) => decoded,
            #on_error,
        };
    }
}

/// Calls the user's fn or method and converts what it returns into a `ToolOutcome`.
fn invoke(model: &ToolModel, method: &Method, role: Role) -> TokenStream {
    let p = private(model);
    let ident = &method.ident;
    let mut args: Vec<TokenStream> = Vec::new();
    let callee = match &model.ty {
        ToolType::Unit { .. } => quote!(#ident),
        ToolType::Existing(ty) => {
            args.push(quote!(self));
            quote!(<#ty>::#ident)
        }
        ToolType::Shared { state, .. } => {
            args.push(quote!(&*self.state));
            quote!(<#state>::#ident)
        }
    };
    let whole = !matches!(model.input, Input::Params);
    for param in &method.params {
        args.push(match param {
            Param::Context { by_ref: true } => quote!(&__llm_tools_ctx),
            Param::Context { by_ref: false } => {
                quote!(::core::clone::Clone::clone(&__llm_tools_ctx))
            }
            Param::Task => quote!(__llm_tools_task),
            Param::Value(_) if whole => quote!(__llm_tools_decoded),
            Param::Value(v) => {
                let field = &v.ident;
                quote!(__llm_tools_decoded.#field)
            }
        });
    }
    let sig_span = at(method.sig_span);
    let call = quote_spanned! {sig_span=>
        #p::check_send(#callee(#(#args),*))
    };
    if role == Role::Cancel {
        // `Tool::cancel` returns nothing: what the user's `cancel` returns is dropped.
        return quote! {
            let _ = #call.await;
        };
    }
    let out_span = at(method.output_span);
    if method.plain_output {
        return quote! {
            let __llm_tools_ret = #call.await;
            #p::IntoToolOutcome::into_tool_outcome(__llm_tools_ret)
        };
    }
    let convert = quote_spanned! {out_span=>
        {
            #[allow(unused_imports)]
            use #p::{ViaOutcome as _, ViaResultSerialize as _, ViaSerialize as _};
            (&&&#p::Probe::of(&__llm_tools_ret))
                .__llm_tools_kind()
                .into_outcome(__llm_tools_ret)
        }
    };
    quote! {
        let __llm_tools_ret = #call.await;
        #convert
    }
}

/// The `Tool` method that decodes its arguments for `method` and runs it: `call`, or `resume`
/// and `cancel` (which take the task first).
fn method_fn(model: &ToolModel, method: &Method, role: Role) -> TokenStream {
    let p = private(model);
    let decode = decode(model, method, role);
    let invoke = invoke(model, method, role);
    let task = quote! { __llm_tools_task: #p::Task, };
    let (name, task, output) = match role {
        Role::Execute => (quote!(call), TokenStream::new(), quote!(#p::ToolOutcome)),
        Role::Resume => (quote!(resume), task, quote!(#p::ToolOutcome)),
        Role::Cancel => (quote!(cancel), task, quote!(())),
    };
    quote! {
        fn #name<'a>(
            &'a self,
            #task
            __llm_tools_args: #p::RawArgs<'a>,
            __llm_tools_ctx: #p::ToolContext,
        ) -> #p::BoxFuture<'a, #output> {
            #p::Box::pin(async move {
                #decode
                #invoke
            })
        }
    }
}

fn approval_fn(model: &ToolModel) -> TokenStream {
    let Approval::Fn(path) = &model.settings.approval else {
        return TokenStream::new();
    };
    let p = private(model);
    let span = at(syn::spanned::Spanned::span(path));
    let call = quote_spanned!(span=> #p::needs_approval(#path, call));
    quote! {
        fn needs_approval(&self, call: &#p::ToolCall) -> bool {
            #call
        }
    }
}
