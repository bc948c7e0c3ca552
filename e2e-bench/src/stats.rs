//! The mock server's counters, as `GET /stats` returns them.

use serde::{Deserialize, Serialize};

/// What the mock saw since its last reset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MockStats {
    /// Chat Completions requests.
    pub requests: u64,
    /// Their body bytes.
    pub request_bytes: u64,
    /// Requests that were streamed.
    pub streamed: u64,
    /// Requests that did not follow the scenario (answered with an HTTP 400).
    pub invalid: u64,
    /// Why the first invalid request was invalid.
    pub first_error: Option<String>,
    /// The fewest tools one request declared.
    pub tools_min: u64,
    /// The most tools one request declared.
    pub tools_max: u64,
    /// Final answers given (one per finished conversation).
    pub final_answers: u64,
}

/// Reads the mock's counters.
pub async fn fetch(http: &reqwest::Client, base: &str) -> Result<MockStats, String> {
    let response = http
        .get(format!("{base}/stats"))
        .send()
        .await
        .map_err(|e| format!("cannot read the mock's stats: {e}"))?;
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("cannot read the mock's stats: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("the mock's stats are not JSON: {e}"))
}

/// Sets the mock's counters to zero.
pub async fn reset(http: &reqwest::Client, base: &str) -> Result<(), String> {
    http.post(format!("{base}/reset"))
        .send()
        .await
        .map_err(|e| format!("cannot reset the mock's stats: {e}"))?;
    Ok(())
}
