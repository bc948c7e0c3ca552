//! Rules across the tools of one toolset.

use darling::error::Accumulator;

use crate::tool::model::{NamespaceModel, ToolModel};

/// Two tools of one toolset may not share a joined name.
pub(crate) fn check(tools: &[ToolModel], errors: &mut Accumulator) {
    for (i, tool) in tools.iter().enumerate() {
        let key = joined_key(tool);
        if tools[..i].iter().any(|earlier| joined_key(earlier) == key) {
            errors.push(
                darling::Error::custom(format!(
                    "two tools in this toolset are named `{}`: give one another name with `#[tool(name = \"…\")]`",
                    tool.name
                ))
                .with_span(&tool.name_span),
            );
        }
    }
}

/// The namespace as written plus the name: equal keys mean equal joined names.
fn joined_key(tool: &ToolModel) -> (String, &str) {
    let ns = match &tool.namespace {
        NamespaceModel::None => String::new(),
        NamespaceModel::Name { name, .. } => format!("\"{}\"", name.value()),
        NamespaceModel::Path(p) => quote::quote!(#p).to_string(),
    };
    (ns, &tool.name)
}
