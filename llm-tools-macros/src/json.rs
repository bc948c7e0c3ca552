//! JSON written inline in an attribute (`provider_options(anthropic = { "cache_control": … })`),
//! read from its tokens into a [`Json`] value at compile time: what is not JSON is an error at
//! the token that is not. Rust's tokens carry it: strings are string literals (with Rust's
//! escapes), numbers are number literals without a suffix, a negative number is `-` and its
//! literal, and `true`, `false`, `null` are words. A trailing comma is let through, as
//! `serde_json::json!` does.

use darling::Error;
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::Lit;

/// A JSON value read from tokens.
pub(crate) enum Json {
    Null,
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer.
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<Member>),
}

/// One member of an object: its key, where the key is written, its value.
pub(crate) struct Member {
    pub(crate) key: String,
    pub(crate) span: Span,
    pub(crate) value: Json,
}

const WHAT_JSON_IS: &str = "a JSON value is an object `{ \"key\": value }`, an array `[…]`, a string, a number, `true`, `false` or `null`";

/// The members of the JSON object in `group` (`{ … }`).
pub(crate) fn object(group: &Group) -> Result<Vec<Member>, Error> {
    match value_of(group) {
        Ok(Json::Object(members)) => Ok(members),
        Ok(_) => Err(Error::custom("expected a JSON object `{ … }`").with_span(&group.span())),
        Err(e) => Err(e),
    }
}

fn value_of(group: &Group) -> Result<Json, Error> {
    match group.delimiter() {
        Delimiter::Brace => {
            let mut members: Vec<Member> = Vec::new();
            for item in items(group.stream())? {
                let mut tokens = item.into_iter();
                let (key, span) = match tokens.next() {
                    Some(TokenTree::Literal(lit)) => match Lit::new(lit.clone()) {
                        Lit::Str(s) => (s.value(), lit.span()),
                        _ => {
                            return Err(Error::custom(
                                "a JSON object's keys are strings: write the key in double quotes",
                            )
                            .with_span(&lit.span()));
                        }
                    },
                    Some(other) => {
                        return Err(Error::custom(format!(
                            "a JSON object's keys are strings: write `\"{other}\"`"
                        ))
                        .with_span(&other.span()));
                    }
                    None => {
                        return Err(Error::custom("expected a key").with_span(&group.span()));
                    }
                };
                match tokens.next() {
                    Some(TokenTree::Punct(p)) if p.as_char() == ':' => {}
                    Some(other) => {
                        return Err(Error::custom(format!(
                            "expected `:` after the key `\"{key}\"`"
                        ))
                        .with_span(&other.span()));
                    }
                    None => {
                        return Err(Error::custom(format!(
                            "the key `\"{key}\"` has no value: write `\"{key}\": value`"
                        ))
                        .with_span(&span));
                    }
                }
                let rest: Vec<TokenTree> = tokens.collect();
                let value = scalar_or_group(&rest, span)?;
                if members.iter().any(|m| m.key == key) {
                    return Err(Error::custom(format!(
                        "the key `\"{key}\"` is given twice in this object: keep one"
                    ))
                    .with_span(&span));
                }
                members.push(Member { key, span, value });
            }
            Ok(Json::Object(members))
        }
        Delimiter::Bracket => {
            let mut values = Vec::new();
            for item in items(group.stream())? {
                let span = item.first().map_or_else(Span::call_site, TokenTree::span);
                values.push(scalar_or_group(&item, span)?);
            }
            Ok(Json::Array(values))
        }
        Delimiter::None => {
            let tokens: Vec<TokenTree> = group.stream().into_iter().collect();
            scalar_or_group(&tokens, group.span())
        }
        Delimiter::Parenthesis => Err(Error::custom(format!(
            "parentheses are not JSON: {WHAT_JSON_IS}"
        ))
        .with_span(&group.span())),
    }
}

/// The comma-separated items of a group's tokens, none empty (a trailing comma is allowed).
fn items(stream: TokenStream) -> Result<Vec<Vec<TokenTree>>, Error> {
    let mut out = Vec::new();
    let mut current: Vec<TokenTree> = Vec::new();
    for tree in stream {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if current.is_empty() {
                    return Err(
                        Error::custom("expected a value before this comma").with_span(&p.span())
                    );
                }
                out.push(std::mem::take(&mut current));
            }
            _ => current.push(tree),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    Ok(out)
}

/// One value: a group, a literal, `-` and a number, or a word.
fn scalar_or_group(tokens: &[TokenTree], at: Span) -> Result<Json, Error> {
    match tokens {
        [] => Err(Error::custom(format!("expected a value: {WHAT_JSON_IS}")).with_span(&at)),
        [TokenTree::Group(g)] => value_of(g),
        [TokenTree::Literal(lit)] => literal(lit, false),
        [TokenTree::Punct(minus), TokenTree::Literal(lit)] if minus.as_char() == '-' => {
            literal(lit, true)
        }
        [TokenTree::Ident(word)] => match word.to_string().as_str() {
            "true" => Ok(Json::Bool(true)),
            "false" => Ok(Json::Bool(false)),
            "null" => Ok(Json::Null),
            other => Err(Error::custom(format!(
                "`{other}` is not JSON: {WHAT_JSON_IS}; for options computed in Rust, give a `serde_json::Value` expression instead of the inline object (`anthropic = my_options()`)"
            ))
            .with_span(&word.span())),
        },
        [_, second, ..] => Err(Error::custom(
            "expected `,` or the end of the object or array after a value",
        )
        .with_span(&second.span())),
        [other] => Err(Error::custom(format!("`{other}` is not JSON: {WHAT_JSON_IS}"))
            .with_span(&other.span())),
    }
}

fn literal(lit: &proc_macro2::Literal, negative: bool) -> Result<Json, Error> {
    let span = lit.span();
    let not_json = |what: &str| Error::custom(what.to_owned()).with_span(&span);
    match Lit::new(lit.clone()) {
        Lit::Str(s) if !negative && s.suffix().is_empty() => Ok(Json::Str(s.value())),
        Lit::Int(i) if i.suffix().is_empty() => {
            let digits = i.base10_digits();
            if negative {
                format!("-{digits}")
                    .parse::<i64>()
                    .map(Json::Int)
                    .map_err(|_| {
                        not_json("this integer is past the range JSON numbers keep exactly (i64)")
                    })
            } else {
                digits.parse::<u64>().map(Json::UInt).map_err(|_| {
                    not_json("this integer is past the range JSON numbers keep exactly (u64)")
                })
            }
        }
        Lit::Float(f) if f.suffix().is_empty() => match f.base10_parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Json::Float(if negative { -v } else { v })),
            _ => Err(not_json("this number is not a finite JSON number")),
        },
        Lit::Int(_) | Lit::Float(_) => Err(not_json(
            "a JSON number has no type suffix: write the digits alone",
        )),
        _ if negative => Err(not_json("only a number follows `-`")),
        _ => Err(not_json(&format!(
            "this literal is not JSON: {WHAT_JSON_IS}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn read(tokens: TokenStream) -> Result<Vec<Member>, String> {
        let group: Group = syn::parse2(quote!({ #tokens })).map_err(|e| e.to_string())?;
        object(&group).map_err(|e| e.to_string())
    }

    #[test]
    fn json_objects_read_from_tokens() {
        let members = read(quote!(
            "cache_control": { "type": "ephemeral", "ttl": null },
            "input_examples": [{ "city": "Paris", "days": 3, "ratio": -0.5, "offset": -2, "ok": true }],
        ))
        .unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].key, "cache_control");
        let Json::Array(examples) = &members[1].value else {
            panic!("an array")
        };
        let Json::Object(fields) = &examples[0] else {
            panic!("an object")
        };
        assert!(matches!(fields[1].value, Json::UInt(3)));
        assert!(matches!(fields[2].value, Json::Float(r) if r == -0.5));
        assert!(matches!(fields[3].value, Json::Int(-2)));
    }

    #[test]
    fn what_is_not_json_is_refused() {
        for (tokens, starts) in [
            (quote!(cache_control: 1), "a JSON object's keys are strings"),
            (quote!("a" 1), "expected `:`"),
            (quote!("a":), "expected a value"),
            (quote!("a": 1 2), "expected `,`"),
            (quote!("a": 1u8), "a JSON number has no type suffix"),
            (quote!("a": undefined), "`undefined` is not JSON"),
            (quote!("a": 'c'), "this literal is not JSON"),
            (quote!("a": (1)), "parentheses are not JSON"),
            (quote!("a": 1, "a": 2), "the key `\"a\"` is given twice"),
            (
                quote!("a": 1,, "b": 2),
                "expected a value before this comma",
            ),
        ] {
            let err = read(tokens.clone()).err().unwrap_or_default();
            assert!(err.starts_with(starts), "{tokens}: {err}");
        }
    }
}
