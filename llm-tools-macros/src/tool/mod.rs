//! `#[tool]`: on an `async fn`, or on an `impl` block with `execute` (and optionally `resume`).
//!
//! The driver runs the phases in order, one module each: [`args`] parses the attribute with
//! darling, [`model`] reads the signature and settles every default, [`check`] applies the rules
//! to the settled model, [`codegen`] quotes. Each phase imports only the ones before it (and the
//! crate's shared files); nothing imports this driver but `lib.rs`, and `#[toolset]` runs the
//! same phase modules per method. Errors from all phases are accumulated and reported together;
//! the user's item is always emitted (with stub tool items when there are errors), so one
//! mistake gives one error.

pub(crate) mod args;
pub(crate) mod check;
pub(crate) mod codegen;
pub(crate) mod model;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{ImplItem, Item, ItemFn, ItemImpl};

use self::args::ToolArgs;
use self::model::{Defaults, NamespaceModel, Role, ToolModel, ToolType};
use crate::{docs, naming, paths};

/// Expands `#[tool(args)] item`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Fn(f)) => expand_fn(args, f),
        Ok(Item::Impl(i)) => expand_impl(args, i),
        Ok(other) => with_error(
            other.into_token_stream(),
            syn::Error::new(
                first_token_span(&item),
                "`#[tool]` goes on an `async fn`, or on an `impl` block with an `async fn execute(&self, …)`",
            ),
        ),
        Err(e) => with_error(item, e),
    }
}

fn first_token_span(tokens: &TokenStream) -> Span {
    tokens
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

fn with_error(item: TokenStream, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    quote!(#item #error)
}

/// Emits the generated items, or the stubs and every error.
fn finish(model: &ToolModel, errors: darling::error::Accumulator) -> TokenStream {
    match errors.finish() {
        Ok(()) => codegen::tool(model),
        Err(e) => {
            let stub = codegen::stub(model);
            let errors = e.write_errors();
            quote!(#stub #errors)
        }
    }
}

fn expand_fn(args: TokenStream, mut f: ItemFn) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    // Parse.
    let tool_args = ToolArgs::parse(args, &mut errors);
    remove_repeated_tool(&mut f.attrs, &mut errors);
    // Model.
    let krate = paths::crate_path(tool_args.krate.as_ref());
    let docs = docs::collect(&f.attrs);
    let execute = model::read_signature(&mut f.sig, Role::Fn, &mut errors);
    let fn_name = naming::unraw(&f.sig.ident);
    let mut type_name = naming::pascal_case(&fn_name);
    if type_name.is_empty() {
        type_name = "UnnamedTool".into();
    }
    let ident =
        tool_args.struct_ident(syn::Ident::new(&type_name, f.sig.ident.span()), &mut errors);
    let defaults = Defaults {
        krate,
        ty: ToolType::Unit {
            ident,
            vis: f.vis.clone(),
        },
        name: (fn_name, f.sig.ident.span()),
        namespace: NamespaceModel::None,
        docs,
    };
    let model = model::build(tool_args, defaults, execute, None, None, &mut errors);
    // Check.
    check::check(&model, &mut errors);
    // Codegen.
    codegen::allow_unused_async(&mut f.attrs);
    if f.sig.receiver().is_some() {
        // A method in an impl block: stub items cannot live there; report and keep the method.
        let errors = errors.finish().err().map(darling::Error::write_errors);
        return quote!(#f #errors);
    }
    let generated = finish(&model, errors);
    quote!(#f #generated)
}

fn expand_impl(args: TokenStream, mut imp: ItemImpl) -> TokenStream {
    let mut errors = darling::Error::accumulator();
    // Parse.
    let tool_args = ToolArgs::parse(args, &mut errors);
    remove_repeated_tool(&mut imp.attrs, &mut errors);
    // The header is checked before the model is built: a trait impl has no model to build.
    check::impl_header(&imp, "#[tool]", &mut errors);
    if let Some(name) = &tool_args.struct_name {
        errors.push(
            darling::Error::custom(
                "`struct_name` names the type `#[tool]` generates for a fn; on an `impl` block the tool is the type itself",
            )
            .with_span(name),
        );
    }
    if imp.trait_.is_some() {
        let e = errors.finish().err().map(darling::Error::write_errors);
        return quote!(#imp #e);
    }
    // Model.
    let krate = paths::crate_path(tool_args.krate.as_ref());
    let self_ty = (*imp.self_ty).clone();
    let type_ident = model::type_ident(&self_ty, &mut errors);
    let mut execute = None;
    let mut resume = None;
    let mut cancel = None;
    let mut docs = None;
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        let role = if f.sig.ident == "execute" {
            docs = Some(docs::collect(&f.attrs));
            Role::Execute
        } else if f.sig.ident == "resume" {
            Role::Resume
        } else if f.sig.ident == "cancel" {
            Role::Cancel
        } else {
            continue;
        };
        codegen::allow_unused_async(&mut f.attrs);
        let method = model::read_signature(&mut f.sig, role, &mut errors);
        match role {
            Role::Execute => execute = Some(method),
            Role::Cancel => cancel = Some(method),
            _ => resume = Some(method),
        }
    }
    let (Some(execute), Some(mut docs)) = (execute, docs) else {
        errors.push(
            darling::Error::custom(
                "`#[tool]` on an `impl` block needs an `async fn execute(&self, …)`: it runs the tool (its parameters are the tool's arguments)",
            )
            .with_span(&imp.self_ty),
        );
        let e = errors.finish().err().map(darling::Error::write_errors);
        return quote!(#imp #e);
    };
    if docs.description.is_empty() {
        docs = docs::collect(&imp.attrs);
    }
    let name = naming::tool_name_of_type(&naming::unraw(&type_ident));
    let defaults = Defaults {
        krate,
        ty: ToolType::Existing(self_ty),
        name: (name, type_ident.span()),
        namespace: NamespaceModel::None,
        docs,
    };
    let model = model::build(tool_args, defaults, execute, resume, cancel, &mut errors);
    // Check.
    check::check(&model, &mut errors);
    // Codegen.
    let generated = finish(&model, errors);
    quote!(#imp #generated)
}

/// Removes a second `#[tool]` (or `#[llm_tools_core::tool]`) from an item's attributes and
/// reports it once, instead of the dozen duplicate definitions a second expansion would make.
fn remove_repeated_tool(attrs: &mut Vec<syn::Attribute>, errors: &mut darling::error::Accumulator) {
    attrs.retain(|attr| {
        let repeated = attr
            .path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "tool");
        if repeated {
            errors.push(
                darling::Error::custom("`#[tool]` is applied twice to this item: remove one")
                    .with_span(&attr.meta),
            );
        }
        !repeated
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: TokenStream, item: TokenStream) -> String {
        expand(args, item).to_string()
    }

    fn error_count(out: &str) -> usize {
        out.matches("compile_error").count()
    }

    #[test]
    fn fn_form_keeps_the_fn_and_adds_the_tool_type() {
        let out = expand_str(
            quote!(),
            quote! {
                /// Gets the weather
                pub async fn weather(#[arg(description = "Lat")] latitude: f64, /// Long
                    longitude: f64) -> String { String::new() }
            },
        );
        assert_eq!(error_count(&out), 0, "{out}");
        assert!(
            out.contains("pub async fn weather (latitude : f64 , longitude : f64)"),
            "{out}"
        );
        assert!(
            !out.contains("# [arg"),
            "macro attributes are stripped: {out}"
        );
        assert!(out.contains("pub struct Weather ;"), "{out}");
        assert!(
            out.contains("impl :: llm_tools_core :: __private :: Tool for Weather"),
            "{out}"
        );
        assert!(
            out.contains("pub const NAME : & 'static str = \"weather\""),
            "{out}"
        );
        assert!(out.contains("Some (\"Lat\")"), "{out}");
        assert!(out.contains("Some (\"Long\")"), "{out}");
    }

    #[test]
    fn generated_paths_are_absolute_or_overridden() {
        /// Every `llm_tools_core` ident follows `::`.
        fn all_absolute(tokens: TokenStream) -> bool {
            let mut previous = String::new();
            for tree in tokens {
                match &tree {
                    proc_macro2::TokenTree::Group(g) if !all_absolute(g.stream()) => return false,
                    proc_macro2::TokenTree::Ident(i)
                        if i == "llm_tools_core" && previous != ":" =>
                    {
                        return false;
                    }
                    _ => {}
                }
                previous = tree.to_string();
            }
            true
        }
        let out = expand(
            quote!(),
            quote!(
                /// Does a
                async fn a(x: u8) {}
            ),
        );
        assert!(all_absolute(out.clone()), "{out}");
        assert!(out.to_string().contains(":: llm_tools_core :: __private"));
        let out = expand_str(
            quote!(crate = my::core),
            quote!(
                /// Does a
                async fn a(x: u8) {}
            ),
        );
        assert!(out.contains("my :: core :: __private :: Tool"), "{out}");
        assert!(out.contains("\"my::core::__private::serde\""), "{out}");
        assert!(!out.contains(":: llm_tools_core"), "{out}");
    }

    #[test]
    fn errors_are_accumulated_and_the_fn_is_still_emitted() {
        let out = expand_str(
            quote!(name = "3d", max_run_time = "soon", colour = 1),
            quote!(
                /// Renders
                fn render<T>(scene: &str) -> String {
                    String::new()
                }
            ),
        );
        assert_eq!(error_count(&out), 6, "{out}");
        assert!(
            out.contains("fn render < T > (scene : & str) -> String"),
            "{out}"
        );
        // Stubs keep code that names the tool type compiling.
        assert!(out.contains("struct Render"), "{out}");
        assert!(out.contains("unreachable"), "{out}");
    }

    #[test]
    fn impl_form_names_the_tool_after_the_type() {
        let out = expand_str(
            quote!(),
            quote! {
                impl HTTPClientTool {
                    /// Fetches
                    async fn execute(&self, url: String) -> String { url }
                }
            },
        );
        assert_eq!(error_count(&out), 0, "{out}");
        assert!(out.contains("\"http_client\""), "{out}");
        assert!(out.contains("Tool for HTTPClientTool"), "{out}");
        let out = expand_str(quote!(), quote!(impl Nothing { fn other(&self) {} }));
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(out.contains("needs an `async fn execute"), "{out}");
    }

    #[test]
    fn a_generated_type_named_like_a_signature_type_is_one_error_and_no_items() {
        let out = expand_str(
            quote!(),
            quote! {
                /// Signs up
                async fn signup(forms: Vec<Signup>) -> String { String::new() }
            },
        );
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(out.contains("struct_name = SignupTool"), "{out}");
        assert!(!out.contains("struct Signup"), "{out}");
        assert!(
            !out.contains("impl"),
            "no impl lands on the user's type: {out}"
        );
        // A path to another module's `Signup` does not clash with the generated one.
        let out = expand_str(
            quote!(),
            quote! {
                /// Signs up
                async fn signup(form: forms::Signup) -> String { String::new() }
            },
        );
        assert_eq!(error_count(&out), 0, "{out}");
        // Nor does a type the generated one is renamed away from.
        let out = expand_str(
            quote!(struct_name = SignupTool),
            quote! {
                /// Signs up
                async fn signup(form: Signup) -> String { String::new() }
            },
        );
        assert_eq!(error_count(&out), 0, "{out}");
        assert!(out.contains("struct SignupTool"), "{out}");
    }

    #[test]
    fn a_string_namespace_needs_a_description() {
        let fn_tool = quote! {
            /// Looks up
            async fn lookup() {}
        };
        let out = expand_str(quote!(namespace = "kb"), fn_tool.clone());
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(out.contains("add `namespace_description"), "{out}");
        let out = expand_str(
            quote!(
                namespace = "kb",
                namespace_description = "The knowledge base"
            ),
            fn_tool.clone(),
        );
        assert_eq!(error_count(&out), 0, "{out}");
        assert!(
            out.contains(". description (\"The knowledge base\")"),
            "{out}"
        );
        // The provider defines what its toolsets are.
        let out = expand_str(quote!(namespace = "computer"), fn_tool.clone());
        assert_eq!(error_count(&out), 0, "{out}");
        let out = expand_str(quote!(namespace_description = "Orphan"), fn_tool);
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(out.contains("add `namespace = "), "{out}");
    }

    #[test]
    fn provider_options_go_into_the_spec_per_protocol_id() {
        let fn_tool = quote! {
            /// Looks up
            async fn lookup() {}
        };
        let out = expand_str(
            quote!(provider_options(
                anthropic = { "cache_control": { "type": "ephemeral" }, "input_examples": [{}] },
                openai_responses = options(),
            )),
            fn_tool.clone(),
        );
        assert_eq!(error_count(&out), 0, "{out}");
        assert!(
            out.contains(". with_provider_options (\"anthropic\" ,"),
            "{out}"
        );
        assert!(out.contains("\"cache_control\""), "{out}");
        assert!(
            out.contains(". with_provider_options (\"openai-responses\" , options ())"),
            "{out}"
        );
        // Every mistake is reported, each once.
        let out = expand_str(
            quote!(provider_options(
                openai = {},
                cohere = {},
                gemini = { "parameters": {} },
                bedrock = "{}",
                anthropic = { "a": nul },
            )),
            fn_tool,
        );
        assert_eq!(error_count(&out), 5, "{out}");
        assert!(out.contains("did you mean `openai_responses`?"), "{out}");
        assert!(out.contains("`cohere` takes no provider options"), "{out}");
        assert!(
            out.contains("`parameters` is a field llm-tools writes"),
            "{out}"
        );
        assert!(out.contains("written inline without quotes"), "{out}");
        assert!(out.contains("`nul` is not JSON"), "{out}");
        // `provider_options = …` is one error, and the other keys are still read.
        let out = expand_str(
            quote!(provider_options = { "anthropic": {} }, name = "kept"),
            quote! {
                /// Looks up
                async fn lookup() {}
            },
        );
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(out.contains("`provider_options` takes a list"), "{out}");
        assert!(out.contains("\"kept\""), "{out}");
    }
}
