//! The path generated code uses to reach `llm-tools-core`.

use proc_macro_crate::FoundCrate;
use quote::quote;

/// The name of the core crate on crates.io.
const CORE_PACKAGE: &str = "llm-tools-core";

/// The `crate = path` override (for crates that re-export `llm-tools-core`), else the name the
/// compiled crate's `Cargo.toml` gives `llm-tools-core` (`tools = { package = "llm-tools-core", … }`
/// gives `::tools`), else `::llm_tools_core`.
pub(crate) fn crate_path(explicit: Option<&syn::Path>) -> syn::Path {
    if let Some(path) = explicit {
        return path.clone();
    }
    match proc_macro_crate::crate_name(CORE_PACKAGE) {
        Ok(FoundCrate::Name(name)) => {
            let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
            syn::parse_quote!(::#ident)
        }
        // The core crate's own doctests and examples reach it by its name. A manifest that
        // cannot be read, or a crate that reaches core through another crate, keeps the
        // default (and `crate = …` is there for the latter).
        Ok(FoundCrate::Itself) | Err(_) => syn::parse_quote!(::llm_tools_core),
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
        // This crate's own manifest has `llm-tools-core` as a dev-dependency under its name.
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
