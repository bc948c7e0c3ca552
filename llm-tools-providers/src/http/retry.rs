//! Retries: the policy (how many, how long between them), which failures are retried, and the
//! delay a server asks for in its `retry-after` headers.

use std::time::{Duration, SystemTime};

use llm_tools_core::ProviderError;
use reqwest::header::HeaderMap;

/// How failed requests are tried again.
///
/// Rate limits (429), timeouts (408), conflicts (409), server errors (5xx) and connection
/// failures are retried; 400, 401, 403, 404 and every other client error are not. The delay
/// before try `n` (from 0) is `initial_backoff · 2ⁿ`, capped at `max_backoff`, minus up to
/// `jitter` of it at random; a `retry-after-ms` or `retry-after` header from the server replaces
/// it when it asks for at most `max_retry_after`.
///
/// ```
/// use std::time::Duration;
/// use llm_tools_providers::http::RetryPolicy;
///
/// let policy = RetryPolicy::default().with_max_retries(5).with_jitter(0.0);
/// assert_eq!(policy.delay(0, None), Duration::from_millis(500));
/// assert_eq!(policy.delay(2, None), Duration::from_secs(2));
/// assert_eq!(policy.delay(2, Some(Duration::from_millis(30))), Duration::from_millis(30));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// How many times a request is tried again after the first try (default 2).
    pub max_retries: u32,
    /// The delay before the first retry (default 500 ms).
    pub initial_backoff: Duration,
    /// The longest computed delay (default 8 s).
    pub max_backoff: Duration,
    /// The fraction of each computed delay taken off at random, from 0 to 1 (default 0.25).
    pub jitter: f64,
    /// The longest server-requested delay that is honoured (default 60 s); a longer one falls
    /// back to the computed delay.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn with_max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Sets the first delay and the cap of computed delays.
    #[must_use]
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the random fraction taken off each computed delay (clamped to 0..=1).
    #[must_use]
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter.clamp(0.0, 1.0);
        self
    }

    /// The delay before retry number `attempt` (from 0), honouring the server's request.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after
            && after <= self.max_retry_after
        {
            return after;
        }
        let factor = 2u32.saturating_pow(attempt.min(20));
        let base = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        // (A NaN can be set through the public field.)
        if self.jitter.is_nan() || self.jitter <= 0.0 {
            return base;
        }
        let cut = base.mul_f64(self.jitter.min(1.0) * fastrand::f64());
        base.saturating_sub(cut)
    }
}

/// Whether an HTTP status is worth trying again.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// What one retry looked like, for [`HttpSettings::on_retry`](super::HttpSettings::on_retry) observers (logging, metrics).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RetryInfo {
    /// The retry number, from 1.
    pub attempt: u32,
    /// How long the client waits before it.
    pub delay: Duration,
    /// What failed.
    pub error: ProviderError,
}

/// An observer of retries.
pub(crate) type RetryObserver = std::sync::Arc<dyn Fn(&RetryInfo) + Send + Sync>;

/// How long the server asked us to wait: `retry-after-ms`, then `retry-after` in seconds or as
/// an HTTP date (RFC 9110 §10.2.3; a date already past means "now"). A value too large for a
/// [`Duration`] (`retry-after: 1e300`) counts as no value.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after_at(headers, SystemTime::now())
}

/// A number of seconds as a delay: `None` unless it is finite, not negative and fits.
pub(crate) fn seconds(value: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(value).ok()
}

/// [`retry_after`] as seen at `now`.
fn retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let number = |v: &str| v.parse::<f64>().ok().and_then(seconds);
    let get = |h| headers.get(h).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(number) {
        return Some(ms / 1000);
    }
    let value = get("retry-after")?;
    number(value).or_else(|| {
        let date = httpdate::parse_http_date(value).ok()?;
        Some(date.duration_since(now).unwrap_or(Duration::ZERO))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::http::test_headers as headers;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_jitter_only_shortens() {
        let p = RetryPolicy::default()
            .with_backoff(Duration::from_millis(100), Duration::from_millis(350))
            .with_jitter(0.0);
        assert_eq!(p.delay(0, None), Duration::from_millis(100));
        assert_eq!(p.delay(1, None), Duration::from_millis(200));
        assert_eq!(p.delay(2, None), Duration::from_millis(350));
        assert_eq!(p.delay(40, None), Duration::from_millis(350));
        let j = p.clone().with_jitter(0.5);
        for _ in 0..100 {
            let d = j.delay(1, None);
            assert!(d <= Duration::from_millis(200) && d >= Duration::from_millis(100));
        }
    }

    #[test]
    fn a_jitter_that_is_not_a_number_means_no_jitter() {
        let mut p =
            RetryPolicy::default().with_backoff(Duration::from_millis(100), Duration::from_secs(1));
        p.jitter = f64::NAN;
        assert_eq!(p.delay(0, None), Duration::from_millis(100));
        p.jitter = f64::INFINITY;
        assert!(p.delay(0, None) <= Duration::from_millis(100));
    }

    #[test]
    fn server_requested_delay_wins_unless_too_long() {
        let p = RetryPolicy::default().with_jitter(0.0);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3600))),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn retry_after_headers_are_read_in_milliseconds_first() {
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "7")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
    }

    #[test]
    fn retry_after_values_too_large_for_a_duration_are_ignored() {
        for value in ["1e300", "inf", "NaN", "18446744073709551616"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", value)])),
                None,
                "{value}"
            );
            assert_eq!(
                retry_after(&headers(&[("retry-after-ms", value)])),
                None,
                "{value}"
            );
        }
    }

    #[test]
    fn retry_after_is_read_as_an_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let at = |value: &'static str| retry_after_at(&headers(&[("retry-after", value)]), now);
        assert_eq!(
            at("Wed, 21 Oct 2015 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        // The two obsolete formats RFC 9110 still asks recipients to accept.
        assert_eq!(
            at("Wednesday, 21-Oct-15 07:29:00 GMT"),
            Some(Duration::from_secs(60))
        );
        assert_eq!(at("Wed Oct 21 07:28:05 2015"), Some(Duration::from_secs(5)));
        assert_eq!(at("Wed, 21 Oct 2015 07:00:00 GMT"), Some(Duration::ZERO));
    }

    #[test]
    fn statuses_that_are_retried() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 410, 422] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }
}
