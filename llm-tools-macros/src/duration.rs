//! `max_run_time = "90s"`: durations parsed at compile time.

/// Parses `"500ms"`, `"90s"`, `"10m"`, `"2h"`, `"1d"`, or a sequence of them (`"1h30m"`,
/// `"1m 30s"`) into milliseconds. Zero, an overflow, a fraction or an unknown unit is an error
/// whose message says what is accepted.
pub(crate) fn parse_millis(text: &str) -> Result<u64, String> {
    const HINT: &str =
        "expected a duration such as \"500ms\", \"90s\", \"10m\", \"2h\" or \"1h30m\"";
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut total: u64 = 0;
    let mut parts = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        let digits: String = text[start..i].chars().filter(|c| *c != '_').collect();
        if digits.is_empty() {
            return Err(format!("`{text}` is not a duration: {HINT}"));
        }
        if bytes.get(i) == Some(&b'.') || bytes.get(i) == Some(&b',') {
            return Err(format!(
                "`{text}` has a fraction: combine units instead (\"1h30m\", \"1500ms\")"
            ));
        }
        while bytes.get(i) == Some(&b' ') {
            i += 1;
        }
        let unit_start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = &text[unit_start..i];
        let factor: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" | "min" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => {
                return Err(format!(
                    "`{text}` has no unit: {HINT} (units: ms, s, m, h, d)"
                ));
            }
            other => {
                return Err(format!(
                    "unknown unit `{other}` in `{text}`: {HINT} (units: ms, s, m, h, d)"
                ));
            }
        };
        let value: u64 = digits
            .parse()
            .map_err(|_| format!("`{text}` is too long a duration"))?;
        total = value
            .checked_mul(factor)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("`{text}` is too long a duration"))?;
        parts += 1;
    }
    if parts == 0 {
        return Err(format!("empty duration: {HINT}"));
    }
    if total == 0 {
        return Err(format!(
            "`{text}` is zero: a tool needs time to run; {HINT}"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_durations() {
        for (text, ms) in [
            ("500ms", 500),
            ("90s", 90_000),
            ("10m", 600_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1h30m", 5_400_000),
            ("1m 30s", 90_000),
            ("2 h", 7_200_000),
            ("1_500ms", 1_500),
            ("5min", 300_000),
        ] {
            assert_eq!(parse_millis(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn rejected_durations_say_what_is_accepted() {
        for (text, needle) in [
            ("90", "has no unit"),
            ("1.5h", "has a fraction"),
            ("-5s", "is not a duration"),
            ("10 minutes", "unknown unit `minutes`"),
            ("0s", "is zero"),
            ("", "empty duration"),
            ("s", "is not a duration"),
            ("99999999999999999999h", "too long"),
        ] {
            let err = parse_millis(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
