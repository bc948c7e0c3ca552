//! The path generated code uses to reach `llm-tools-core`.

use quote::quote;

/// `::llm_tools_core`, or the `crate = path` override (for crates that re-export
/// `llm-tools-core` under another name).
pub(crate) fn crate_path(explicit: Option<&syn::Path>) -> syn::Path {
    match explicit {
        Some(path) => path.clone(),
        None => syn::parse_quote!(::llm_tools_core),
    }
}

/// The path of the runtime support module, as the string serde and schemars attributes take
/// (`#[serde(crate = "…")]`).
pub(crate) fn private_path_str(krate: &syn::Path, module: &str) -> String {
    let module = syn::Ident::new(module, proc_macro2::Span::call_site());
    quote!(#krate::__private::#module)
        .to_string()
        .replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_override() {
        let default = crate_path(None);
        assert_eq!(
            private_path_str(&default, "serde"),
            "::llm_tools_core::__private::serde"
        );
        let custom: syn::Path = syn::parse_quote!(my_facade::tools);
        assert_eq!(
            private_path_str(&crate_path(Some(&custom)), "schemars"),
            "my_facade::tools::__private::schemars"
        );
    }
}
