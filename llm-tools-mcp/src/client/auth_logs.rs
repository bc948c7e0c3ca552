//! rmcp's own log lines that hold a secret of a login, kept from the application's tracing
//! subscriber (feature `auth`).
//!
//! rmcp (3.11) writes on its `rmcp::transport::auth` target, at `debug`, the authorization code
//! it exchanges (`start exchange code for token: "<code>"`) and each token response it gets
//! (`exchange token result: …`, `client credentials token result: …`). oauth2 shows the access
//! and refresh tokens there as `[redacted]`, but a response's other fields whole: an OpenID
//! `id_token`, a provider's own tokens. A library cannot set the application's log filter, so
//! each rmcp call that writes such a line (the code exchange, the client credentials grant)
//! runs under [`quiet`]: while its future is polled, events reach the application's subscriber
//! through one that passes every event on but rmcp's `debug` and `trace` ones, and those whose
//! fields hold a secret this client knows (the code, the client secret). Spans and every other
//! event are passed on as they are.
//!
//! What this cannot keep: tracing's events turned into `log` records (its `log-always` feature,
//! or its `log` feature in a program without a tracing subscriber) reach the `log` crate's
//! logger in rmcp's own code, before any subscriber is asked; such a program keeps `rmcp` at
//! `info` in its `log` filter. In a program that never set a tracing subscriber nothing is
//! wrapped: no subscriber can see the events, and setting one, even for a moment, would turn
//! tracing's `log` records off for the whole program.

use std::fmt::Write as _;
use std::future::Future;

use tracing::field::{Field, Visit};
use tracing::instrument::WithSubscriber as _;
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{Interest, NoSubscriber, Subscriber};
use tracing::{Dispatch, Event, Level, Metadata};

/// Runs `future` (an rmcp call of a login) with rmcp's `debug` and `trace` events, and every
/// event whose fields hold one of `secrets`, kept from the application's subscriber.
pub(crate) async fn quiet<F: Future>(secrets: &[&str], future: F) -> F::Output {
    let current = tracing::dispatcher::get_default(Dispatch::clone);
    if current.is::<NoSubscriber>() {
        // No subscriber to keep anything from (see the module's docs).
        return future.await;
    }
    let quiet = Dispatch::new(Quiet {
        inner: current,
        secrets: secrets
            .iter()
            .filter(|secret| !secret.is_empty())
            .map(|secret| (*secret).to_owned())
            .collect(),
        // Never more than the subscribers already set want: a wrapper with no hint would
        // raise the program's maximum level to `trace` while it lives.
        max_level: LevelFilter::current(),
    });
    future.with_subscriber(quiet).await
}

/// The application's subscriber, less the events [`quiet`] keeps from it.
struct Quiet {
    inner: Dispatch,
    secrets: Vec<String>,
    max_level: LevelFilter,
}

impl Quiet {
    /// Whether `event` may reach the application's subscriber.
    fn passes(&self, event: &Event<'_>) -> bool {
        let metadata = event.metadata();
        let target = metadata.target();
        let from_rmcp = target == "rmcp" || target.starts_with("rmcp::");
        let verbose = *metadata.level() == Level::DEBUG || *metadata.level() == Level::TRACE;
        if from_rmcp && verbose {
            return false;
        }
        if self.secrets.is_empty() {
            return true;
        }
        let mut seen = Holds {
            secrets: &self.secrets,
            text: String::new(),
            found: false,
        };
        event.record(&mut seen);
        !seen.found
    }
}

/// Whether an event's fields hold one of the secrets.
struct Holds<'a> {
    secrets: &'a [String],
    /// The field being looked at, written out.
    text: String,
    found: bool,
}

impl Holds<'_> {
    fn look(&mut self, text: &str) {
        self.found |= self
            .secrets
            .iter()
            .any(|secret| text.contains(secret.as_str()));
    }
}

impl Visit for Holds<'_> {
    fn record_str(&mut self, _field: &Field, value: &str) {
        self.look(value);
    }

    fn record_debug(&mut self, _field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        // Writing to a `String` does not fail.
        let _ = write!(text, "{value:?}");
        self.look(&text);
        self.text = text;
    }
}

impl Subscriber for Quiet {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(metadata)
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.inner.enabled(metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max_level)
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.inner.new_span(span)
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.inner.record(span, values);
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        self.inner.record_follows_from(span, follows);
    }

    // Asked for every event, whatever the callsite's cached interest (`enabled` is not).
    fn event_enabled(&self, event: &Event<'_>) -> bool {
        self.passes(event)
    }

    fn event(&self, event: &Event<'_>) {
        self.inner.event(event);
    }

    fn enter(&self, span: &Id) {
        self.inner.enter(span);
    }

    fn exit(&self, span: &Id) {
        self.inner.exit(span);
    }

    fn clone_span(&self, id: &Id) -> Id {
        self.inner.clone_span(id)
    }

    fn try_close(&self, id: Id) -> bool {
        self.inner.try_close(id)
    }

    fn current_span(&self) -> tracing_core::span::Current {
        self.inner.current_span()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// The lines a subscriber at `trace` wrote while `run` ran.
    fn captured(run: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(Level::TRACE)
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        let bytes = lines.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(runtime) => runtime.block_on(future),
            Err(error) => panic!("{error}"),
        }
    }

    /// rmcp's lines as it writes them during an exchange, and others.
    async fn exchange(code: &str) {
        tracing::debug!(target: "rmcp::transport::auth", "start exchange code for token: {:?}", code);
        tokio::task::yield_now().await;
        tracing::debug!(target: "rmcp::transport::auth", "exchange token result: id_token: \"canary-id-token\"");
        tracing::info!(target: "rmcp::transport::auth", "Refreshed access token.");
        tracing::warn!(target: "reqwest", "an error naming {code}");
        tracing::debug!(target: "hyper_util", "connecting to 127.0.0.1:9");
    }

    #[test]
    fn rmcp_debug_lines_and_the_secrets_never_reach_the_subscriber() {
        let logs = captured(|| block_on(quiet(&["canary-code-1"], exchange("canary-code-1"))));
        assert!(!logs.contains("canary-code-1"), "{logs}");
        assert!(!logs.contains("canary-id-token"), "{logs}");
        // The rest goes on.
        assert!(logs.contains("Refreshed access token."), "{logs}");
        assert!(logs.contains("connecting to 127.0.0.1:9"), "{logs}");
        // Outside `quiet`, the subscriber sees everything again.
        let logs = captured(|| block_on(exchange("canary-code-2")));
        assert!(logs.contains("canary-code-2"), "{logs}");
    }
}
