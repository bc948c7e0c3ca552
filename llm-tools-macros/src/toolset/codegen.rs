//! Phase 3 of `#[toolset]`: what the set adds beside its tools.

use proc_macro2::TokenStream;
use quote::quote;

use crate::tool::model::{ToolModel, ToolType};

/// `T::tools(self: Arc<Self>)`, `T::tool_specs()`, and `IntoTools` for `T` and (through
/// `SharedTools`) for `Arc<T>`.
pub(crate) fn toolset(krate: &syn::Path, self_ty: &syn::Type, tools: &[ToolModel]) -> TokenStream {
    let p = quote!(#krate::__private);
    let idents: Vec<&syn::Ident> = tools
        .iter()
        .filter_map(|t| match &t.ty {
            ToolType::Shared { ident, .. } => Some(ident),
            _ => None,
        })
        .collect();
    let names = tools
        .iter()
        .map(|t| format!("`{}`", t.name))
        .collect::<Vec<_>>()
        .join(", ");
    let doc = format!(
        "The tools of this toolset ({names}), each sharing `self`. `chat.with_tools(value)` also takes the value itself, or an `Arc` of it (through `IntoTools`)."
    );
    let specs_doc = format!(
        "The specs of this toolset's tools ({names}): names, descriptions and schemas, without an instance (for schema checks in CI)."
    );
    quote! {
        #[allow(dead_code)]
        impl #self_ty {
            #[doc = #doc]
            pub fn tools(self: #p::Arc<Self>) -> #p::Vec<#p::Arc<dyn #p::Tool>> {
                ::std::vec![
                    #(#p::Arc::new(#idents::new(#p::Arc::clone(&self))) as #p::Arc<dyn #p::Tool>),*
                ]
            }

            #[doc = #specs_doc]
            pub fn tool_specs() -> #p::Vec<&'static #p::ToolSpec> {
                ::std::vec![#(#idents::tool_spec()),*]
            }
        }

        #[automatically_derived]
        impl #p::IntoTools for #self_ty {
            fn into_tools(self, out: &mut #p::Vec<#p::Arc<dyn #p::Tool>>) {
                out.extend(Self::tools(#p::Arc::new(self)));
            }
        }

        #[automatically_derived]
        impl #p::SharedTools for #self_ty {
            fn shared_tools(self: #p::Arc<Self>) -> #p::Vec<#p::Arc<dyn #p::Tool>> {
                Self::tools(self)
            }
        }
    }
}
