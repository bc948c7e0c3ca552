//! The `retry-after` and `retry-after-ms` headers, and Google's `retryDelay` in an error body,
//! with arbitrary values: no panic (a value too large for a `Duration` is no value).
#![no_main]

use libfuzzer_sys::fuzz_target;
use llm_tools_providers::http::retry_after;
use reqwest::header::{HeaderMap, HeaderValue};

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    if let Ok(value) = HeaderValue::from_str(&text) {
        for name in ["retry-after", "retry-after-ms"] {
            let mut headers = HeaderMap::new();
            headers.insert(name, value.clone());
            let _ = retry_after(&headers);
        }
    }
    let body = format!(
        r#"{{"error":{{"details":[{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"{}s"}}]}}}}"#,
        text.replace(['"', '\\'], "")
    );
    let _ = llm_tools_providers::gemini::retry_delay_in_body(body.as_bytes());
});
