//! Doc comments: a tool's description, and its parameters' descriptions from the rustdoc
//! `# Arguments` list.
//!
//! ```text
//! /// Gets current weather for a location        → the description
//! ///
//! /// # Arguments                                 → removed from the description
//! /// * `latitude` - Latitude in decimal degrees  → the description of `latitude`
//! ```

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The doc comment of an item.
pub(crate) struct Docs {
    /// The description, `# Arguments` section removed.
    pub(crate) description: Description,
    /// The entries of the `# Arguments` list, in order.
    pub(crate) arguments: Vec<ArgumentDoc>,
    /// Bullets of the `# Arguments` list that are no entry (`* latitude in degrees`), with their
    /// text, to report.
    pub(crate) unreadable: Vec<(String, Span)>,
    /// The first doc attribute, to point errors at.
    pub(crate) span: Option<Span>,
}

/// A description: text known at compile time, or (when a doc attribute is not a literal, as in
/// `#[doc = include_str!("weather.md")]`) an expression that builds it.
pub(crate) enum Description {
    Text(String),
    Expr(TokenStream),
}

impl Description {
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Description::Text(t) if t.is_empty())
    }
}

impl ToTokens for Description {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Description::Text(text) => text.to_tokens(tokens),
            Description::Expr(expr) => expr.to_tokens(tokens),
        }
    }
}

/// One `` * `name` - text `` entry of an `# Arguments` list.
pub(crate) struct ArgumentDoc {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) span: Span,
}

pub(crate) fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident("doc") && matches!(attr.meta, Meta::NameValue(_))
}

/// Reads the doc comment of an item from its attributes.
pub(crate) fn collect(attrs: &[Attribute]) -> Docs {
    let mut lines: Vec<(String, Span)> = Vec::new();
    let mut exprs: Vec<&Expr> = Vec::new();
    let mut all_literal = true;
    let mut span = None;
    for attr in attrs.iter().filter(|a| is_doc(a)) {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        span.get_or_insert(attr.span());
        exprs.push(&nv.value);
        match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) => {
                for line in s.value().split('\n') {
                    lines.push((line.to_owned(), attr.span()));
                }
            }
            _ => all_literal = false,
        }
    }
    if !all_literal {
        let mut parts = Vec::new();
        for (i, e) in exprs.iter().enumerate() {
            if i > 0 {
                parts.push(quote!("\n"));
            }
            parts.push(e.to_token_stream());
        }
        return Docs {
            description: Description::Expr(quote!(::core::concat!(#(#parts),*).trim())),
            arguments: Vec::new(),
            unreadable: Vec::new(),
            span,
        };
    }
    dedent(&mut lines);
    let (description, arguments, unreadable) = split_arguments(&lines);
    Docs {
        description: Description::Text(description),
        arguments,
        unreadable,
        span,
    }
}

/// The doc comment of a parameter (`/// Latitude` above it), as one text.
pub(crate) fn collect_text(attrs: &[Attribute]) -> Option<(String, Span)> {
    let docs = collect(attrs);
    match docs.description {
        Description::Text(t) if !t.is_empty() => Some((t, docs.span?)),
        _ => None,
    }
}

/// Removes the indentation common to the non-blank lines (the space after `///`).
fn dedent(lines: &mut [(String, Span)]) {
    let indent = lines
        .iter()
        .filter(|(l, _)| !l.trim().is_empty())
        .map(|(l, _)| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    for (line, _) in lines.iter_mut() {
        let cut = indent.min(line.len() - line.trim_start().len());
        *line = line[cut..].trim_end().to_owned();
    }
}

/// Heading level of a Markdown ATX heading line (`## Arguments` → 2).
fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|c| *c == '#').count();
    (1..=6)
        .contains(&level)
        .then_some(level)
        .filter(|_| line[level..].starts_with(' ') || line.len() == level)
}

fn is_arguments_heading(line: &str) -> Option<usize> {
    let level = heading_level(line)?;
    let title = line[level..].trim().to_ascii_lowercase();
    matches!(title.as_str(), "arguments" | "parameters" | "args").then_some(level)
}

/// Splits the text into the description (without the `# Arguments` section), the argument
/// entries, and the bullets of the section that are no entry.
fn split_arguments(lines: &[(String, Span)]) -> (String, Vec<ArgumentDoc>, Vec<(String, Span)>) {
    let mut kept: Vec<&str> = Vec::new();
    let mut arguments: Vec<ArgumentDoc> = Vec::new();
    let mut unreadable = Vec::new();
    let mut in_fence = false;
    let mut section: Option<usize> = None;
    for (line, span) in lines {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        }
        if !in_fence {
            if let Some(level) = section {
                if heading_level(line).is_some_and(|l| l <= level) {
                    section = None;
                }
            } else if let Some(level) = is_arguments_heading(line) {
                section = Some(level);
                continue;
            }
        }
        if section.is_none() {
            kept.push(line);
            continue;
        }
        // An indented line (a nested list, a wrapped sentence) continues the entry above.
        let top_level = trimmed.len() == line.len();
        if let Some(entry) = parse_entry(trimmed).filter(|_| top_level) {
            arguments.push(ArgumentDoc {
                name: entry.0,
                text: entry.1,
                span: *span,
            });
        } else if top_level && bullet(trimmed).is_some() {
            unreadable.push((trimmed.to_owned(), *span));
        } else if !trimmed.is_empty()
            && let Some(last) = arguments.last_mut()
        {
            if !last.text.is_empty() {
                last.text.push(' ');
            }
            last.text.push_str(trimmed);
        }
    }
    // Collapse the blank lines the removed section leaves behind.
    let mut text = String::new();
    let mut blank = false;
    for line in kept {
        if line.is_empty() {
            blank = !text.is_empty();
            continue;
        }
        if blank {
            text.push_str("\n\n");
        } else if !text.is_empty() {
            text.push('\n');
        }
        blank = false;
        text.push_str(line);
    }
    (text, arguments, unreadable)
}

/// The text after a list bullet (`*`, `-` or `+` and a space).
fn bullet(line: &str) -> Option<&str> {
    line.strip_prefix("* ")
        .or_else(|| line.strip_prefix("- "))
        .or_else(|| line.strip_prefix("+ "))
        .map(str::trim_start)
}

/// One entry, in the forms Rust docs use: `` * `name` - text `` (the separator may also be
/// `:`, `–` or `—`, or missing after a backticked name), or `* name - text` and `* name: text`
/// without backticks (then a separator is required, so prose is not read as an entry); `*`,
/// `-` or `+` bullets, and `**name**` as well as `` `name` ``.
fn parse_entry(line: &str) -> Option<(String, String)> {
    let rest = bullet(line)?;
    let (name, after, quoted) = if let Some(quoted) = rest.strip_prefix('`') {
        let end = quoted.find('`')?;
        (&quoted[..end], &quoted[end + 1..], true)
    } else if let Some(bold) = rest.strip_prefix("**") {
        let end = bold.find("**")?;
        (bold[..end].trim_matches('`'), &bold[end + 2..], true)
    } else {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#'))
            .unwrap_or(rest.len());
        (&rest[..end], &rest[end..], false)
    };
    let name = name.trim().trim_start_matches("r#");
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let after = after.trim_start();
    let text = after.trim_start_matches(['-', ':', '–', '—']);
    if !quoted && text.len() == after.len() {
        return None;
    }
    Some((name.to_owned(), text.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn docs(attrs: Vec<Attribute>) -> (String, Vec<(String, String)>) {
        let d = collect(&attrs);
        let Description::Text(text) = d.description else {
            panic!("expected literal docs")
        };
        (
            text,
            d.arguments.into_iter().map(|a| (a.name, a.text)).collect(),
        )
    }

    #[test]
    fn arguments_section_becomes_parameter_descriptions() {
        let (text, args) = docs(vec![
            parse_quote!(#[doc = " Gets current weather for a location"]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " # Arguments"]),
            parse_quote!(#[doc = " * `latitude` - Latitude in decimal degrees, e.g. 52.52"]),
            parse_quote!(#[doc = " * `longitude` - Longitude in decimal"]),
            parse_quote!(#[doc = "   degrees"]),
            parse_quote!(#[doc = " - `r#type`: The kind"]),
        ]);
        assert_eq!(text, "Gets current weather for a location");
        assert_eq!(
            args,
            vec![
                (
                    "latitude".into(),
                    "Latitude in decimal degrees, e.g. 52.52".into()
                ),
                ("longitude".into(), "Longitude in decimal degrees".into()),
                ("type".into(), "The kind".into()),
            ]
        );
    }

    #[test]
    fn entries_in_the_common_rust_forms() {
        for (line, name, text) in [
            ("* `latitude` - In degrees", "latitude", "In degrees"),
            ("- `latitude`: In degrees", "latitude", "In degrees"),
            ("+ `latitude` – In degrees", "latitude", "In degrees"),
            ("* `latitude` In degrees", "latitude", "In degrees"),
            ("* latitude - In degrees", "latitude", "In degrees"),
            ("* latitude: In degrees", "latitude", "In degrees"),
            ("- latitude — In degrees", "latitude", "In degrees"),
            ("* **latitude** - In degrees", "latitude", "In degrees"),
            ("* **`latitude`**: In degrees", "latitude", "In degrees"),
            ("* `r#type` - The kind", "type", "The kind"),
        ] {
            assert_eq!(
                parse_entry(line),
                Some((name.to_owned(), text.to_owned())),
                "{line}"
            );
        }
        for prose in [
            "* latitude in degrees",
            "* 3 - a number",
            "* - nothing",
            "* `two words` - x",
            "not a bullet",
        ] {
            assert_eq!(parse_entry(prose), None, "{prose}");
        }
    }

    #[test]
    fn a_bullet_that_is_no_entry_is_reported() {
        let d = collect(&[
            parse_quote!(#[doc = " Finds places"]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " # Arguments"]),
            parse_quote!(#[doc = " * latitude - In degrees"]),
            parse_quote!(#[doc = "   and more about it"]),
            parse_quote!(#[doc = " * the longitude in degrees"]),
        ]);
        assert_eq!(d.arguments.len(), 1);
        assert_eq!(d.arguments[0].text, "In degrees and more about it");
        assert_eq!(d.unreadable.len(), 1);
        assert_eq!(d.unreadable[0].0, "* the longitude in degrees");
    }

    #[test]
    fn a_nested_list_continues_its_entry() {
        let d = collect(&[
            parse_quote!(#[doc = " # Arguments"]),
            parse_quote!(#[doc = " * `mode` - How to search:"]),
            parse_quote!(#[doc = "   - `fast`: quick"]),
            parse_quote!(#[doc = "   - `deep`: thorough"]),
        ]);
        assert_eq!(d.arguments.len(), 1);
        assert_eq!(
            d.arguments[0].text,
            "How to search: - `fast`: quick - `deep`: thorough"
        );
        assert!(d.unreadable.is_empty());
    }

    #[test]
    fn sections_after_arguments_are_kept() {
        let (text, args) = docs(vec![
            parse_quote!(#[doc = " Finds a customer."]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " ## Arguments"]),
            parse_quote!(#[doc = " * `email` - Their email"]),
            parse_quote!(#[doc = ""]),
            parse_quote!(#[doc = " ## Notes"]),
            parse_quote!(#[doc = " Slow on Mondays."]),
            parse_quote!(#[doc = " ```"]),
            parse_quote!(#[doc = " # Arguments"]),
            parse_quote!(#[doc = " ```"]),
        ]);
        assert_eq!(
            text,
            "Finds a customer.\n\n## Notes\nSlow on Mondays.\n```\n# Arguments\n```"
        );
        assert_eq!(args.len(), 1);
    }

    #[test]
    fn block_comments_and_indentation() {
        let (text, _) = docs(vec![parse_quote!(
            #[doc = "\n    Line one\n      indented\n    Line two\n"]
        )]);
        assert_eq!(text, "Line one\n  indented\nLine two");
    }

    #[test]
    fn non_literal_docs_become_an_expression() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[doc = " Reads"]),
            parse_quote!(#[doc = include_str!("x.md")]),
        ];
        let d = collect(&attrs);
        let Description::Expr(e) = d.description else {
            panic!()
        };
        assert!(e.to_string().contains("include_str"));
        assert!(d.arguments.is_empty());
    }

    #[test]
    fn no_docs_is_empty() {
        let d = collect(&[]);
        assert!(d.description.is_empty());
        assert!(d.span.is_none());
    }
}
