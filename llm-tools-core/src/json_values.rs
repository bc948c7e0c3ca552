//! The bound on how many JSON values one document read from outside may hold.
//!
//! A parsed JSON value costs far more memory than its text: `[0,0,0,…]` spends two bytes of
//! text and some 70 bytes of `serde_json::Value` on each element. Every byte limit (a
//! provider's answer, a stream event, an MCP request) would so allow some 35 times its size in
//! memory. Documents read from a model, a provider or an MCP peer are therefore counted before
//! they are parsed into values: one holding more than [`MAX_JSON_VALUES`] is refused with the
//! reader's own error (invalid arguments the model reads, a provider's decode error, …) and
//! nothing is parsed.
//!
//! Counting looks at each byte once, and only documents at least as long as the limit are
//! counted: each byte adds at most one value, so a shorter one cannot pass it.
//!
//! ```
//! use llm_tools_core::json_values::{MAX_JSON_VALUES, too_many_values};
//!
//! assert_eq!(too_many_values(r#"{"city": "Paris"}"#), None);
//! let dense = format!("[{}0]", "0,".repeat(MAX_JSON_VALUES));
//! assert!(too_many_values(&dense).is_some_and(|n| n > MAX_JSON_VALUES));
//! ```

/// The most JSON values (objects, arrays, strings, numbers, booleans and nulls, each counted)
/// one document read from outside may hold: 1,048,576, some 75 MB of `serde_json::Value` at
/// most, and more than any real answer, tool arguments or request holds.
pub const MAX_JSON_VALUES: usize = 1 << 20;

/// How many values `text` holds past [`MAX_JSON_VALUES`] (an upper bound), or `None` when it
/// is within the limit (a text shorter than the limit always is, and is not counted).
pub fn too_many_values(text: impl AsRef<[u8]>) -> Option<usize> {
    too_many_values_of(text, MAX_JSON_VALUES)
}

/// [`too_many_values`] with a limit of `max` values.
pub fn too_many_values_of(text: impl AsRef<[u8]>, max: usize) -> Option<usize> {
    let text = text.as_ref();
    // At most one value per byte, and one more: a text shorter than `max` is within it.
    if text.len() < max {
        return None;
    }
    let count = count_values(text);
    (count > max).then_some(count)
}

/// An upper bound on the values parsing `text` makes: every value but the first follows a
/// `[`, a `,` or a `:` outside a string, so the count is at most one more than the bytes. Invalid JSON gets a number too; its parse fails anyway.
pub fn count_values(text: &[u8]) -> usize {
    let mut count = 1usize;
    outside_strings(text, |byte| {
        if matches!(byte, b'[' | b'{' | b',' | b':') {
            count += 1;
        }
    });
    count
}

/// Calls `each` with every byte of `text` outside a string (not the quotes), looking at each
/// byte once.
fn outside_strings(text: &[u8], mut each: impl FnMut(u8)) {
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if byte == b'"' {
            in_string = true;
        } else {
            each(byte);
        }
    }
}

/// How deeply `text` nests arrays and objects (`1` is `0`, `[]` and `{}` are `1`, `[{}]` is
/// `2`), counted in one look at each byte outside strings. Invalid JSON gets a number too.
pub(crate) fn depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    outside_strings(text, |byte| match byte {
        b'[' | b'{' => {
            depth += 1;
            deepest = deepest.max(depth);
        }
        b']' | b'}' => depth = depth.saturating_sub(1),
        _ => {}
    });
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_nested_arrays_and_objects_and_nothing_inside_strings() {
        assert_eq!(depth(b"1"), 0);
        assert_eq!(depth(b"[]"), 1);
        assert_eq!(depth(br#"{"a":[{"b":[]}],"c":{}}"#), 4);
        assert_eq!(depth(br#"["[[[{{", "\"[[["]"#), 1);
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert_eq!(depth(deep.as_bytes()), 300);
    }

    #[test]
    fn every_value_is_counted_and_nothing_inside_strings() {
        assert_eq!(count_values(b"1"), 1);
        assert_eq!(count_values(b"[1,2,3]"), 4);
        assert_eq!(count_values(b"[[],[]]"), 5, "an upper bound: 3 values");
        assert_eq!(count_values(br#"{"a":1,"b":[true]}"#), 6);
        assert_eq!(count_values(br#"["a,b:[{", "c\"],["]"#), 3);
        assert_eq!(
            count_values(br#"["\\",1]"#),
            3,
            "an escaped backslash ends no string"
        );
        assert_eq!(count_values(br#"["unterminated,,,"#), 2);
    }

    #[test]
    fn documents_past_the_limit_are_refused_whatever_the_limit() {
        // `[0,0,…]` of n values holds about one value per two bytes.
        let dense = |n: usize| format!("[{}0]", "0,".repeat(n - 1));
        assert_eq!(too_many_values_of(dense(600), 1000), None);
        assert_eq!(
            too_many_values_of(dense(999), 1000),
            None,
            "999 values and the array"
        );
        assert_eq!(too_many_values_of(dense(1000), 1000), Some(1001));
        assert_eq!(too_many_values_of("[]", 1), Some(2), "an upper bound");
        assert_eq!(too_many_values_of("1", 1), None);
        let text = format!("[\"{}\"]", "x".repeat(10_000));
        assert_eq!(
            too_many_values_of(&text, 10),
            None,
            "one long string is two values"
        );
        // Any text is within one more value than its bytes.
        for text in ["[[[[", ",,,,", "::::", r#"[1,"a",{"b":[]}]"#] {
            assert!(count_values(text.as_bytes()) <= text.len() + 1, "{text}");
        }
    }
}
