//! Phase 2b: rules across the model: names, namespaces, where the schema comes from.

use darling::error::Accumulator;

use super::model::{Input, NamespaceModel, ToolModel};

/// The provider-wide name rule, as the error messages state it.
pub(crate) const NAME_RULE: &str = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";

/// The same rule as `llm_tools_core::is_valid_tool_name`.
pub(crate) fn is_valid_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

pub(crate) fn check(model: &ToolModel, errors: &mut Accumulator) {
    if !is_valid_tool_name(&model.name) {
        errors.push(
            darling::Error::custom(format!(
                "tool name `{}` is not accepted by every provider: it must match `{NAME_RULE}`; set another with `#[tool(name = \"…\")]`",
                model.name
            ))
            .with_span(&model.name_span),
        );
    } else if let NamespaceModel::Name { name: ns, .. } = &model.namespace {
        let joined = format!("{}_{}", ns.value(), model.name);
        if !is_valid_tool_name(&ns.value()) {
            errors.push(
                darling::Error::custom(format!(
                    "namespace `{}` must match `{NAME_RULE}`",
                    ns.value()
                ))
                .with_span(ns),
            );
        } else if !is_valid_tool_name(&joined) {
            errors.push(
                darling::Error::custom(format!(
                    "the joined name `{joined}` must match `{NAME_RULE}` (at most 64 characters): shorten the namespace or the tool name"
                ))
                .with_span(ns),
            );
        }
    }
    let values: Vec<_> = model.execute.values().collect();
    match &model.input {
        Input::Params => {}
        Input::Whole => {
            if values.len() != 1 {
                errors.push(
                    darling::Error::custom(format!(
                        "`#[tool(args)]` takes exactly one parameter (besides the `ToolContext`), whose type is the whole argument object; this tool has {}",
                        values.len()
                    ))
                    .with_span(&model.execute.sig_span),
                );
            }
        }
        Input::Schema(_) => {
            if values.len() > 1 {
                errors.push(
                    darling::Error::custom(
                        "with `#[tool(schema = …)]` the arguments arrive in one parameter (a `serde_json::Value` or a `Deserialize` type); this tool has several",
                    )
                    .with_span(&model.execute.sig_span),
                );
            }
        }
    }
    if !matches!(model.input, Input::Params) {
        for v in &values {
            if let Some(span) = v.attr_span {
                errors.push(
                    darling::Error::custom(
                        "`#[arg]` and parameter docs describe schema properties; with `args` or `schema` the schema comes from elsewhere: document the fields of the arguments type instead",
                    )
                    .with_span(&span),
                );
            }
        }
    }
    if let Some(resume) = &model.resume
        && !matches!(model.input, Input::Params)
        && resume.values().count() > 1
    {
        errors.push(
            darling::Error::custom(
                "`resume` receives the arguments like `execute` does: in one parameter",
            )
            .with_span(&resume.sig_span),
        );
    }
}

/// The candidate closest to `name` (for "did you mean"), if any is close.
pub(crate) fn closest<'a>(name: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule() {
        assert!(is_valid_tool_name("crm_lookup-2"));
        assert!(!is_valid_tool_name("2fa"));
        assert!(!is_valid_tool_name("météo"));
        assert!(!is_valid_tool_name(&"a".repeat(65)));
    }

    #[test]
    fn closest_candidate() {
        let c = vec!["latitude".to_owned(), "longitude".to_owned()];
        assert_eq!(closest("lattitude", &c), Some("latitude"));
        assert_eq!(closest("units", &c), None);
    }
}
