//! Phase 1: the attribute arguments, parsed with darling (`#[tool(…)]`, `#[arg(…)]`).
//!
//! Unknown and duplicate keys are darling's errors (with a "did you mean"); values are only
//! parsed here, the model phase validates them.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::Flag;
use darling::{Error, FromMeta, Result};
use proc_macro2::TokenStream;
use syn::{Expr, ExprLit, Lit};

/// `#[tool(…)]`: every key is optional.
#[derive(Default, FromMeta)]
pub(crate) struct ToolArgs {
    /// The tool's name (default: the fn name, or the type name in snake_case).
    pub(crate) name: Option<syn::LitStr>,
    /// What the model reads (default: the doc comment).
    pub(crate) description: Option<syn::LitStr>,
    /// A path to a `Namespace` const, a string, or `none`.
    pub(crate) namespace: Option<NamespaceArg>,
    /// The description of a namespace given as a string.
    pub(crate) namespace_description: Option<syn::LitStr>,
    /// `"90s"`, `"2h"`, …
    pub(crate) max_run_time: Option<syn::LitStr>,
    /// Left out of requests until found by tool search.
    pub(crate) defer: Option<BoolArg>,
    /// `false`, or a character limit.
    pub(crate) spill_to_file: Option<SpillArg>,
    /// A flag, a bool, or a path to `fn(&ToolCall) -> bool`.
    pub(crate) needs_approval: Option<ApprovalArg>,
    /// A barrier when a round's calls run in parallel.
    pub(crate) sequential: Option<BoolArg>,
    /// Failed calls in a row a turn allows.
    pub(crate) max_retries: Option<Lit>,
    /// A title for people.
    pub(crate) title: Option<syn::LitStr>,
    /// Hints for clients: `annotations(read_only, destructive = false, …)`.
    pub(crate) annotations: Option<AnnotationsArg>,
    /// The single parameter's type is the whole argument object.
    pub(crate) args: Flag,
    /// A literal JSON Schema (a `serde_json::Value` expression).
    pub(crate) schema: Option<SchemaArg>,
    /// Fields added to the tool's definition per protocol:
    /// `provider_options(anthropic = { "cache_control": { "type": "ephemeral" } })`.
    pub(crate) provider_options: Option<ProviderOptionsArg>,
    /// Path to `llm_tools_core`.
    #[darling(rename = "crate")]
    pub(crate) krate: Option<syn::Path>,
    /// The generated type's name (default: the fn name in PascalCase).
    pub(crate) struct_name: Option<syn::Path>,
}

impl ToolArgs {
    /// The keys of `#[tool(…)]`.
    pub(crate) const KEYS: &[&str] = &[
        "name",
        "description",
        "namespace",
        "namespace_description",
        "max_run_time",
        "defer",
        "spill_to_file",
        "needs_approval",
        "sequential",
        "max_retries",
        "title",
        "annotations",
        "args",
        "schema",
        "provider_options",
        "crate",
        "struct_name",
    ];

    /// The generated type's name given with `struct_name = Name`, or `default`; a value that is
    /// not one identifier is reported to `errors`.
    pub(crate) fn struct_ident(&self, default: syn::Ident, errors: &mut Accumulator) -> syn::Ident {
        let Some(path) = &self.struct_name else {
            return default;
        };
        match path.get_ident() {
            Some(ident) => ident.clone(),
            None => {
                errors.push(
                    Error::custom(
                        "`struct_name` takes one identifier: `struct_name = WeatherTool`",
                    )
                    .with_span(path),
                );
                default
            }
        }
    }

    /// Parses the tokens inside `#[tool(…)]`; see [`parse_keys`].
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Accumulator) -> Self {
        let tokens = without_assigned_options(tokens, errors);
        parse_keys(tokens, "#[tool]", Self::KEYS, errors)
    }
}

/// The attribute's tokens without a `provider_options = …` item, which is reported: its value
/// would be JSON written inline, which is no expression, and would fail the parse of the whole
/// attribute instead of this key alone.
fn without_assigned_options(tokens: TokenStream, errors: &mut Accumulator) -> TokenStream {
    use proc_macro2::TokenTree;
    let is_comma = |t: &TokenTree| matches!(t, TokenTree::Punct(p) if p.as_char() == ',');
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out: Vec<TokenTree> = Vec::with_capacity(trees.len());
    let mut at_item_start = true;
    let mut i = 0;
    while let Some(tree) = trees.get(i) {
        if let (true, TokenTree::Ident(key), Some(TokenTree::Punct(eq))) =
            (at_item_start, tree, trees.get(i + 1))
            && key == "provider_options"
            && eq.as_char() == '='
        {
            errors.push(
                Error::custom(
                    "`provider_options` takes a list, one JSON object per provider: `provider_options(anthropic = { \"cache_control\": { \"type\": \"ephemeral\" } })`",
                )
                .with_span(key),
            );
            while trees.get(i).is_some_and(|t| !is_comma(t)) {
                i += 1;
            }
            i += 1;
            continue;
        }
        at_item_start = is_comma(tree);
        out.push(tree.clone());
        i += 1;
    }
    out.into_iter().collect()
}

/// Parses `key = value, …` into `T`, reporting every problem (unknown key with a "did you
/// mean", duplicate, bad value) to `errors` and keeping every good key, so the rest of the
/// macro still sees the name, namespace and settings that were written correctly.
pub(crate) fn parse_keys<T: FromMeta + Default>(
    tokens: TokenStream,
    what: &str,
    keys: &[&str],
    errors: &mut Accumulator,
) -> T {
    let items = match NestedMeta::parse_meta_list(tokens) {
        Ok(items) => items,
        Err(e) => {
            errors.push(e.into());
            return T::default();
        }
    };
    let mut kept: Vec<NestedMeta> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for item in items {
        let NestedMeta::Meta(meta) = &item else {
            errors.push(
                Error::custom(format!(
                    "`{what}` takes `key = value` pairs or flags, not a bare literal"
                ))
                .with_span(&item),
            );
            continue;
        };
        let key = darling::util::path_to_string(meta.path());
        if !keys.contains(&key.as_str()) {
            let candidates: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
            let hint = match crate::naming::closest(&key, &candidates) {
                Some(close) => format!("did you mean `{close}`? "),
                None => String::new(),
            };
            let list = keys
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            errors.push(
                Error::custom(format!(
                    "unknown `{what}` key `{key}`; {hint}expected one of: {list}"
                ))
                .with_span(meta.path()),
            );
            continue;
        }
        if seen.contains(&key) {
            errors.push(
                Error::custom(format!("`{key}` is given twice: keep one")).with_span(meta.path()),
            );
            continue;
        }
        match T::from_list(std::slice::from_ref(&item)) {
            Ok(_) => {
                seen.push(key);
                kept.push(item);
            }
            Err(e) => errors.push(e),
        }
    }
    match T::from_list(&kept) {
        Ok(parsed) => parsed,
        Err(e) => {
            errors.push(e);
            T::default()
        }
    }
}

/// `#[arg(…)]` on a parameter.
#[derive(Default, FromMeta)]
pub(crate) struct ArgAttr {
    /// The parameter's description (wins over the doc comment).
    pub(crate) description: Option<syn::LitStr>,
    /// `default` (the type's `Default`) or `default = expr`.
    pub(crate) default: Option<DefaultArg>,
}

impl ArgAttr {
    /// Parses the tokens inside `#[arg(…)]`; see [`parse_keys`].
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Accumulator) -> Self {
        parse_keys(tokens, "#[arg]", &["description", "default"], errors)
    }
}

/// A bool key given as a word (`defer`) or a literal (`defer = false`).
#[derive(Clone, Copy)]
pub(crate) struct BoolArg {
    pub(crate) value: bool,
}

impl FromMeta for BoolArg {
    fn from_word() -> Result<Self> {
        Ok(BoolArg { value: true })
    }

    fn from_bool(value: bool) -> Result<Self> {
        Ok(BoolArg { value })
    }
}

/// `annotations(read_only, destructive = false, idempotent, open_world = false)`: hints for
/// clients, each a word (`true`) or a bool.
#[derive(Default, FromMeta)]
pub(crate) struct AnnotationsArg {
    read_only: Option<HintArg>,
    destructive: Option<HintArg>,
    idempotent: Option<HintArg>,
    open_world: Option<HintArg>,
}

impl AnnotationsArg {
    /// `read_only`, `destructive`, `idempotent`, `open_world`, in that order.
    pub(crate) fn hints(&self) -> [Option<bool>; 4] {
        [
            self.read_only,
            self.destructive,
            self.idempotent,
            self.open_world,
        ]
        .map(|hint| hint.map(|h| h.0))
    }
}

/// One hint of `annotations(…)`: a word (`true`) or a bool.
#[derive(Clone, Copy)]
pub(crate) struct HintArg(bool);

impl FromMeta for HintArg {
    fn from_word() -> Result<Self> {
        Ok(HintArg(true))
    }

    fn from_bool(value: bool) -> Result<Self> {
        Ok(HintArg(value))
    }

    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Ok(HintArg(b.value)),
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom(
                "an annotation takes no value (`read_only`) or a bool (`destructive = false`)",
            )
            .with_span(other)),
        }
    }
}

/// `namespace = CRM`, `namespace = "crm"`, `namespace = none`.
pub(crate) enum NamespaceArg {
    Path(syn::Path),
    Name(syn::LitStr),
    None,
}

impl FromMeta for NamespaceArg {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => Ok(NamespaceArg::Name(s.clone())),
            Expr::Path(p) if p.qself.is_none() && p.path.is_ident("none") => {
                Ok(NamespaceArg::None)
            }
            Expr::Path(p) if p.qself.is_none() => Ok(NamespaceArg::Path(p.path.clone())),
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom(
                "expected a path to a `Namespace` const (`namespace = CRM`), a string (`namespace = \"crm\"`) or `none`",
            )
            .with_span(other)),
        }
    }
}

/// `spill_to_file = false` or `spill_to_file = 20_000`.
pub(crate) enum SpillArg {
    Never,
    After(syn::LitInt),
}

impl FromMeta for SpillArg {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) if !b.value => Ok(SpillArg::Never),
            Expr::Lit(ExprLit {
                lit: Lit::Int(i), ..
            }) => Ok(SpillArg::After(i.clone())),
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(spill_error().with_span(other)),
        }
    }

    fn from_word() -> Result<Self> {
        Err(spill_error())
    }
}

fn spill_error() -> Error {
    Error::custom(
        "`spill_to_file` takes `false` (always send results whole) or a character limit such as `20_000`",
    )
}

/// `needs_approval`, `needs_approval = true`, or `needs_approval = path::to::fn`.
pub(crate) enum ApprovalArg {
    Always,
    Never,
    Fn(syn::Path),
}

impl FromMeta for ApprovalArg {
    fn from_word() -> Result<Self> {
        Ok(ApprovalArg::Always)
    }

    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(b), ..
            }) => Ok(if b.value {
                ApprovalArg::Always
            } else {
                ApprovalArg::Never
            }),
            Expr::Path(p) if p.qself.is_none() => Ok(ApprovalArg::Fn(p.path.clone())),
            Expr::Group(g) => Self::from_expr(&g.expr),
            other => Err(Error::custom(
                "`needs_approval` takes no value, a bool, or a path to a `fn(&ToolCall) -> bool` that decides per call",
            )
            .with_span(other)),
        }
    }
}

/// `schema = <expr>`: any expression of type `serde_json::Value`, kept as written.
pub(crate) struct SchemaArg(pub(crate) Expr);

impl FromMeta for SchemaArg {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Str(_), ..
            }) => Err(Error::custom(
                "`schema` takes a `serde_json::Value` expression, not a string: write `schema = llm_tools_core::serde_json::json!({ … })` or call a fn that returns the schema",
            )
            .with_span(expr)),
            Expr::Group(g) => Self::from_expr(&g.expr),
            _ => Ok(SchemaArg(expr.clone())),
        }
    }
}

/// `provider_options(anthropic = { … }, gemini = options_fn())`: per provider key, a JSON
/// object written inline (its tokens, checked by the model phase) or a `serde_json::Value`
/// expression.
pub(crate) struct ProviderOptionsArg(pub(crate) Vec<ProviderOptionsEntry>);

/// One `provider = value` of `provider_options(…)`.
pub(crate) struct ProviderOptionsEntry {
    pub(crate) provider: syn::Ident,
    pub(crate) value: OptionsValue,
}

/// The value of one provider's options, as written.
pub(crate) enum OptionsValue {
    /// `{ "field": … }` (or `[ … ]`, which the model refuses): JSON written inline.
    Inline(proc_macro2::Group),
    /// Any other expression, of type `serde_json::Value`, evaluated when the spec is built.
    Expr(Expr),
}

impl FromMeta for ProviderOptionsArg {
    fn from_meta(item: &syn::Meta) -> Result<Self> {
        match item {
            syn::Meta::List(list) => list
                .parse_args_with(parse_options_entries)
                .map(ProviderOptionsArg)
                .map_err(Error::from),
            other => Err(Error::custom(
                "`provider_options` takes a list of JSON objects by provider: `provider_options(anthropic = { \"cache_control\": { \"type\": \"ephemeral\" } })`",
            )
            .with_span(other)),
        }
    }
}

fn parse_options_entries(
    input: syn::parse::ParseStream<'_>,
) -> syn::Result<Vec<ProviderOptionsEntry>> {
    let mut entries = Vec::new();
    while !input.is_empty() {
        let provider: syn::Ident = input.parse()?;
        input.parse::<syn::Token![=]>()?;
        let value = if input.peek(syn::token::Brace) || input.peek(syn::token::Bracket) {
            match input.parse::<proc_macro2::TokenTree>()? {
                proc_macro2::TokenTree::Group(group) => OptionsValue::Inline(group),
                other => return Err(syn::Error::new(other.span(), "expected `{ … }` or `[ … ]`")),
            }
        } else {
            OptionsValue::Expr(input.parse()?)
        };
        entries.push(ProviderOptionsEntry { provider, value });
        if input.is_empty() {
            break;
        }
        input.parse::<syn::Token![,]>()?;
    }
    Ok(entries)
}

/// `default` or `default = expr` in `#[arg(…)]`.
pub(crate) enum DefaultArg {
    Trait,
    Expr(Expr),
}

impl FromMeta for DefaultArg {
    fn from_word() -> Result<Self> {
        Ok(DefaultArg::Trait)
    }

    fn from_expr(expr: &Expr) -> Result<Self> {
        Ok(DefaultArg::Expr(expr.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(tokens: TokenStream) -> std::result::Result<ToolArgs, Vec<String>> {
        let mut errors = Error::accumulator();
        let args = ToolArgs::parse(tokens, &mut errors);
        let errors: Vec<String> = errors
            .into_inner()
            .iter()
            .map(ToString::to_string)
            .collect();
        if errors.is_empty() {
            Ok(args)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn all_keys_parse() {
        let args = parse(quote!(
            name = "weather",
            description = "d",
            namespace = CRM,
            max_run_time = "90s",
            defer,
            spill_to_file = 20_000,
            needs_approval = check,
            sequential = false,
            crate = ::my::core
        ))
        .ok()
        .unwrap();
        assert_eq!(args.name.unwrap().value(), "weather");
        assert!(matches!(args.namespace, Some(NamespaceArg::Path(_))));
        assert!(args.defer.unwrap().value);
        assert!(matches!(args.spill_to_file, Some(SpillArg::After(_))));
        assert!(matches!(args.needs_approval, Some(ApprovalArg::Fn(_))));
        assert!(!args.sequential.unwrap().value);
        assert!(args.krate.is_some());
    }

    #[test]
    fn annotations_take_words_and_bools() {
        let args = parse(quote!(
            title = "City weather",
            annotations(read_only, destructive = false, open_world)
        ))
        .ok()
        .unwrap();
        assert_eq!(args.title.unwrap().value(), "City weather");
        assert_eq!(
            args.annotations.unwrap().hints(),
            [Some(true), Some(false), None, Some(true)]
        );
        let err = parse(quote!(annotations(read_only = 1))).err().unwrap();
        assert!(
            err[0].starts_with("an annotation takes no value"),
            "{err:?}"
        );
    }

    #[test]
    fn namespace_forms() {
        let ns = |t| parse(t).ok().unwrap().namespace;
        assert!(matches!(
            ns(quote!(namespace = "crm")),
            Some(NamespaceArg::Name(_))
        ));
        assert!(matches!(
            ns(quote!(namespace = none)),
            Some(NamespaceArg::None)
        ));
        assert!(matches!(
            ns(quote!(namespace = crate::ns::CRM)),
            Some(NamespaceArg::Path(_))
        ));
    }

    #[test]
    fn unknown_key_suggests_the_closest() {
        let err = parse(quote!(descripton = "x")).err().unwrap();
        assert_eq!(err.len(), 1);
        assert!(
            err[0].starts_with("unknown `#[tool]` key `descripton`; did you mean `description`? expected one of: `name`"),
            "{err:?}"
        );
    }

    #[test]
    fn errors_accumulate_and_good_keys_are_kept() {
        let mut errors = Error::accumulator();
        let args = ToolArgs::parse(
            quote!(
                nme = "x",
                spill_to_file,
                namespace = 3,
                name = "kept",
                name = "again",
                sequential
            ),
            &mut errors,
        );
        let errors = errors.into_inner();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[3].to_string().contains("`name` is given twice"));
        assert_eq!(args.name.unwrap().value(), "kept");
        assert!(args.sequential.unwrap().value);
    }
}
