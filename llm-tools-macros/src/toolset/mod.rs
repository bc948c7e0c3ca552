//! `#[toolset]`: several tools on one `impl` block, sharing its type as state.
//!
//! The driver runs the same phases as `#[tool]`: parse ([`args`] for `#[toolset(…)]`, the tool
//! phase's `args` for each method's `#[tool(…)]`) → model (the tool phase's `model`, with the
//! toolset's namespace and crate path as defaults) → check (each tool by the tool phase's
//! `check`, then [`check`] across the tools) → codegen (each tool by the tool phase's `codegen`,
//! then [`codegen`] for the set's own items). It uses the tool phase modules, never the `#[tool]`
//! driver, so no file here imports a file that imports it.

mod args;
mod check;
mod codegen;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{ImplItem, Item};

use self::args::ToolsetArgs;
use crate::tool::args::ToolArgs;
use crate::tool::model::{self, Defaults, NamespaceModel, Role, ToolModel, ToolType};
use crate::tool::{check as tool_check, codegen as tool_codegen};
use crate::{docs, naming, paths};

/// Expands `#[toolset(args)] impl T { … }`.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut imp = match syn::parse2::<Item>(item.clone()) {
        Ok(Item::Impl(imp)) => imp,
        Ok(other) => {
            let err = syn::Error::new_spanned(
                &other,
                "`#[toolset]` goes on an `impl` block whose `#[tool]` methods become tools",
            )
            .into_compile_error();
            return quote!(#other #err);
        }
        Err(e) => {
            let err = e.into_compile_error();
            return quote!(#item #err);
        }
    };
    let mut errors = darling::Error::accumulator();
    // Parse the set's arguments; check its header.
    let set_args = ToolsetArgs::parse(args, &mut errors);
    let krate = paths::crate_path(set_args.krate.as_ref());
    tool_check::impl_header(&imp, "#[toolset]", &mut errors);
    // Model of the set.
    let self_ty = (*imp.self_ty).clone();
    let type_ident = model::type_ident(&self_ty, &mut errors);
    let type_name = naming::unraw(&type_ident);
    let namespace = NamespaceModel::from_args(
        set_args.namespace,
        set_args.namespace_description,
        NamespaceModel::None,
        &mut errors,
    );

    // Each tool: parse → model → check.
    let mut tools: Vec<ToolModel> = Vec::new();
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        let Some(pos) = f.attrs.iter().position(is_tool_attr) else {
            continue;
        };
        let attr = f.attrs.remove(pos);
        let tokens = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(list) => list.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                errors.push(
                    darling::Error::custom("write `#[tool]` or `#[tool(key = value, …)]`")
                        .with_span(nv),
                );
                TokenStream::new()
            }
        };
        let tool_args = ToolArgs::parse(tokens, &mut errors);
        if let Some(k) = &tool_args.krate {
            errors.push(
                darling::Error::custom(
                    "set `crate` on `#[toolset]`: every tool of the set uses the same path",
                )
                .with_span(k),
            );
        }
        let docs = docs::collect(&f.attrs);
        let execute = model::read_signature(&mut f.sig, Role::Execute, &mut errors);
        tool_codegen::allow_unused_async(&mut f.attrs);
        let method = naming::unraw(&f.sig.ident);
        let ident = tool_args.struct_ident(
            syn::Ident::new(
                &format!("{}{}", type_name, naming::pascal_case(&method)),
                f.sig.ident.span(),
            ),
            &mut errors,
        );
        let defaults = Defaults {
            krate: krate.clone(),
            ty: ToolType::Shared {
                ident,
                vis: f.vis.clone(),
                state: self_ty.clone(),
            },
            name: (method, f.sig.ident.span()),
            namespace: namespace.clone(),
            docs,
        };
        let tool = model::build(tool_args, defaults, execute, None, None, &mut errors);
        tool_check::check(&tool, &mut errors);
        tools.push(tool);
    }
    // Check across the tools.
    if tools.is_empty() {
        errors.push(
            darling::Error::custom(
                "`#[toolset]` found no `#[tool]` method: mark each method that is a tool with `#[tool]`",
            )
            .with_span(&imp.self_ty),
        );
    }
    check::check(&tools, &mut errors);

    // Codegen.
    let generated = match errors.finish() {
        Ok(()) => {
            let each = tools.iter().map(tool_codegen::tool);
            let set = codegen::toolset(&krate, &self_ty, &tools);
            quote!(#(#each)* #set)
        }
        Err(e) => {
            // The stubs and the set's own items keep code that uses the toolset from adding
            // errors of its own.
            let each = tools.iter().map(tool_codegen::stub);
            let set = (imp.generics.params.is_empty() && imp.trait_.is_none())
                .then(|| codegen::toolset(&krate, &self_ty, &tools));
            let errors = e.write_errors();
            quote!(#(#each)* #set #errors)
        }
    };
    let imp = imp.into_token_stream();
    quote!(#imp #generated)
}

/// `#[tool]` or `#[…::tool]` (matched by the last path segment).
fn is_tool_attr(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "tool")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_count(out: &str) -> usize {
        out.matches("compile_error").count()
    }

    #[test]
    fn toolset_strips_tool_attributes_and_rejects_duplicates() {
        let out = expand(
            quote!(
                namespace = "crm",
                namespace_description = "Customer records"
            ),
            quote! {
                impl Crm {
                    /// A
                    #[tool] async fn a(&self) {}
                    /// B
                    #[tool(name = "a")] async fn b(&self) {}
                }
            },
        )
        .to_string();
        assert_eq!(error_count(&out), 1, "{out}");
        assert!(
            out.contains("two tools in this toolset are named `a`"),
            "{out}"
        );
        assert!(!out.contains("# [tool"), "{out}");
    }
}
