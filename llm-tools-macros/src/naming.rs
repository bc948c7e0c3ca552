//! Names: tool names from type names, tool types from fn names, the provider-wide name rule,
//! and the "did you mean" finder. Every phase reads them; this file imports no phase.

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

/// `WeatherLookup` → `weather_lookup`: an `_` goes between a lowercase letter or digit and an
/// uppercase letter, and before the last uppercase letter of a run followed by a lowercase one
/// (`HTTPClient` → `http_client`); then everything is lowercased. This is RubyLLM's rule.
pub(crate) fn snake_case(ident: &str) -> String {
    let chars: Vec<char> = ident.chars().collect();
    let mut out = String::with_capacity(ident.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_is_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The tool name of a type: its name in snake_case with one trailing `_tool` dropped
/// (`WeatherTool` → `weather`, `HTTPClientTool` → `http_client`, `Tool` → `tool`).
pub(crate) fn tool_name_of_type(ident: &str) -> String {
    let snake = snake_case(ident);
    match snake.strip_suffix("_tool") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => snake,
    }
}

/// The tool type of a fn: `current_time` → `CurrentTime`.
pub(crate) fn pascal_case(ident: &str) -> String {
    let mut out = String::with_capacity(ident.len());
    for word in ident.split('_').filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// An identifier as written, without the `r#` of a raw identifier.
pub(crate) fn unraw(ident: &syn::Ident) -> String {
    let s = ident.to_string();
    match s.strip_prefix("r#") {
        Some(rest) => rest.to_owned(),
        None => s,
    }
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

    #[test]
    fn type_names_become_tool_names() {
        // The issue's table, then RubyLLM's (§1.2) where it applies to Rust identifiers.
        for (ty, name) in [
            ("CurrentTime", "current_time"),
            ("WeatherLookup", "weather_lookup"),
            ("WeatherTool", "weather"),
            ("HTTPClientTool", "http_client"),
            ("XMLHttpRequestTool", "xml_http_request"),
            ("Tool", "tool"),
            ("HTTPProxyTool", "http_proxy"),
            ("Weather_Tool", "weather"),
            ("weather_tool", "weather"),
            ("HTMLToPDFTool", "html_to_pdf"),
            ("ABCTool", "abc"),
            ("SQLTool", "sql"),
            ("IOTool", "io"),
            ("APIV2Tool", "apiv2"),
            ("Weather2Tool", "weather2"),
            ("A1B2Tool", "a1_b2"),
            ("GetOAuth2Token", "get_o_auth2_token"),
            ("getWeather", "get_weather"),
            ("ToolTool", "tool"),
        ] {
            assert_eq!(tool_name_of_type(ty), name, "{ty}");
        }
    }

    #[test]
    fn fn_names_become_type_names() {
        for (f, ty) in [
            ("weather", "Weather"),
            ("current_time", "CurrentTime"),
            ("get_http2_client", "GetHttp2Client"),
            ("_private_tool", "PrivateTool"),
            ("a__b", "AB"),
        ] {
            assert_eq!(pascal_case(f), ty, "{f}");
        }
    }

    #[test]
    fn raw_identifiers_lose_their_prefix() {
        let ident: syn::Ident = syn::parse_str("r#type").unwrap();
        assert_eq!(unraw(&ident), "type");
    }
}
