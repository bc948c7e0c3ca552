//! Phase 3: rules across the model: names, namespaces, where the schema comes from, the shape of
//! a tool `impl` block. Reads the model; never builds or quotes.

use darling::error::Accumulator;

use super::model::{Input, Method, NamespaceModel, Role, ToolModel, ToolType};
use crate::naming::{NAME_RULE, is_valid_tool_name};

/// The rules one tool's model must meet.
pub(crate) fn check(model: &ToolModel, errors: &mut Accumulator) {
    if let Some(ident) = model.generated_type_in_signature() {
        let (macro_name, key_note) = match &model.ty {
            ToolType::Shared { .. } => ("#[toolset]", " on the method"),
            _ => ("#[tool]", ""),
        };
        errors.push(
            darling::Error::custom(format!(
                "`{macro_name}` names the tool type it generates `{ident}`, and this signature uses a type `{ident}` of yours: two types cannot have one name; name the generated one with `#[tool(struct_name = {ident}Tool)]`{key_note}"
            ))
            .with_span(ident),
        );
    }
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
            } else if let Some(what) = not_an_object(&values[0].ty) {
                errors.push(
                    darling::Error::custom(format!(
                        "with `#[tool(args)]` this parameter is the whole argument object, which is a JSON object; its type is {what}: drop `args` so that each parameter is one argument, or use a struct with named fields"
                    ))
                    .with_span(&values[0].ty),
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
    let companions = [(Role::Resume, &model.resume), (Role::Cancel, &model.cancel)];
    for (role, method) in companions {
        let Some(method) = method else { continue };
        if matches!(model.input, Input::Params) {
            takes_execute_arguments(model, method, role.method_name(), errors);
        } else if method.values().count() > 1 {
            errors.push(
                darling::Error::custom(format!(
                    "`{}` receives the arguments like `execute` does: in one parameter",
                    role.method_name()
                ))
                .with_span(&method.sig_span),
            );
        }
    }
}

/// `resume` and `cancel` decode the arguments the call gave `execute`: each of their parameters
/// must be one of `execute`'s, with the same type.
fn takes_execute_arguments(
    model: &ToolModel,
    method: &Method,
    name: &str,
    errors: &mut Accumulator,
) {
    let execute: Vec<_> = model.execute.values().collect();
    for param in method.values() {
        let Some(same) = execute.iter().find(|e| e.json_name == param.json_name) else {
            let names: Vec<String> = execute
                .iter()
                .map(|e| format!("`{}`", e.json_name))
                .collect();
            let offered = if names.is_empty() {
                "`execute` takes none".to_owned()
            } else {
                format!("`execute` takes {}", names.join(", "))
            };
            errors.push(
                darling::Error::custom(format!(
                    "`{name}` takes `{}`, which `execute` does not: `{name}` receives the arguments of the call `execute` received, so it takes some of `execute`'s parameters ({offered})",
                    param.json_name
                ))
                .with_span(&param.ident),
            );
            continue;
        };
        let (ty, expected) = (&param.ty, &same.ty);
        let written = |t: &syn::Type| quote::quote!(#t).to_string().replace(' ', "");
        if written(ty) != written(expected) {
            errors.push(
                darling::Error::custom(format!(
                    "`{}` is `{}` in `execute` but `{}` here: `{name}` decodes the same arguments, so give it the type `execute` has",
                    param.json_name,
                    written(expected),
                    written(ty)
                ))
                .with_span(ty),
            );
        }
    }
}

/// Types whose schema is not an object, as written: primitives, strings, sequences, tuples,
/// `Option`. `#[tool(args)]` on one of them is a compile error; other types are checked when
/// the spec is built (`ToolSpec::validate`, the portability check).
fn not_an_object(ty: &syn::Type) -> Option<&'static str> {
    const SCALARS: &[&str] = &[
        "bool", "char", "str", "String", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
        "u32", "u64", "u128", "usize", "f32", "f64",
    ];
    const SEQUENCES: &[&str] = &["Vec", "VecDeque", "HashSet", "BTreeSet", "LinkedList"];
    match ty {
        syn::Type::Tuple(_) => Some("a tuple (a JSON array)"),
        syn::Type::Array(_) | syn::Type::Slice(_) => Some("a sequence (a JSON array)"),
        syn::Type::Reference(r) => not_an_object(&r.elem),
        syn::Type::Paren(p) => not_an_object(&p.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            if SCALARS.contains(&name.as_str()) {
                Some("a scalar (a JSON string, number or boolean)")
            } else if SEQUENCES.contains(&name.as_str()) {
                Some("a sequence (a JSON array)")
            } else if name == "Option" {
                Some("an `Option` (the arguments are always an object)")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A tool `impl` is inherent and not generic.
pub(crate) fn impl_header(imp: &syn::ItemImpl, what: &str, errors: &mut Accumulator) {
    if let Some((path, _)) = &imp.trait_ {
        errors.push(
            darling::Error::custom(format!(
                "`{what}` goes on an inherent `impl` block (`impl MyTool {{ … }}`), not on a trait impl"
            ))
            .with_span(path),
        );
    }
    if !imp.generics.params.is_empty() {
        errors.push(
            darling::Error::custom(format!(
                "`{what}` does not support generic `impl` blocks: a tool's type must be concrete (implement `Tool` by hand for generic tools)"
            ))
            .with_span(&imp.generics),
        );
    }
}
