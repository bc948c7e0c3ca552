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
//!
//! rmcp's `debug` and `trace` events are refused before the application's subscriber is asked
//! about them, so its filters keep no state for an event that never comes. An event whose
//! fields hold a secret can only be seen once it is made, after the subscriber enabled its
//! callsite: with tracing-subscriber's per-layer filters, the next event of the thread from a
//! callsite every layer always wants may then skip a layer that had not enabled the refused
//! one (rmcp writes the code and the token responses at `debug`, refused first).
//!
//! The wrapper does not forward `Subscriber::downcast_raw` (a `Dispatch` offers no way to ask
//! its subscriber for a type named at run time), so while an rmcp call of a login is polled,
//! `Dispatch::downcast_ref` on the current dispatcher finds none of the application's
//! subscriber's parts: tracing-opentelemetry's `OpenTelemetrySpanExt::context` or
//! tracing-error's `SpanTrace::capture` there find nothing. Spans are made, entered and closed
//! by the application's subscriber as usual; rmcp's own code makes no such lookups.

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
        if rmcp_verbose(event.metadata()) {
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

/// Whether `metadata` is of an rmcp event at `debug` or `trace`, which [`quiet`] keeps from the
/// application's subscriber whatever its fields.
fn rmcp_verbose(metadata: &Metadata<'_>) -> bool {
    let target = metadata.target();
    let from_rmcp = target == "rmcp" || target.starts_with("rmcp::");
    let verbose = *metadata.level() == Level::DEBUG || *metadata.level() == Level::TRACE;
    metadata.is_event() && from_rmcp && verbose
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

    // rmcp's verbose events are refused here, before the application's subscriber is asked:
    // one asked keeps state for the event it expects next (tracing-subscriber's per-layer
    // filters note in a thread-local which layers enabled it, cleared when the event is
    // recorded), and an event refused after that would leave it for the next event of the
    // thread, which a layer might then skip.
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        !rmcp_verbose(metadata) && self.inner.enabled(metadata)
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

    // Asked for every event, whatever the callsite's cached interest (`enabled` is not asked
    // for a callsite the subscribers always want). The application's own event filters are
    // asked after ours, by `Dispatch::event` in `event` below (a `Dispatch` has no
    // `event_enabled` of its own), so an event refused here leaves them untouched.
    fn event_enabled(&self, event: &Event<'_>) -> bool {
        self.passes(event)
    }

    // `Dispatch::event` asks the application's subscriber's `event_enabled` first.
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

    /// A layer that notes the message of each event it is given.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl Seen {
        fn messages(&self) -> Vec<String> {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
        }
    }

    impl<S: Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_event(&self, event: &Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            struct Message(String);
            impl Visit for Message {
                fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                    if field.name() == "message" {
                        self.0 = format!("{value:?}");
                    }
                }
            }
            let mut message = Message(String::new());
            event.record(&mut message);
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(message.0);
        }
    }

    #[test]
    fn a_refused_rmcp_event_leaves_per_layer_filters_as_they_were() {
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::{Layer as _, registry};
        // An application's usual setup: a console at `info`, and another layer (a file, an
        // exporter) at `trace`, each with its own filter.
        let console = Seen::default();
        let file = Seen::default();
        let subscriber = registry()
            .with(console.clone().with_filter(LevelFilter::INFO))
            .with(file.clone().with_filter(LevelFilter::TRACE));
        tracing::subscriber::with_default(subscriber, || {
            block_on(quiet(&[], async {
                tracing::debug!(target: "rmcp::transport::auth", "exchange token result: …");
                tracing::info!(target: "app", "first after");
            }));
            tracing::info!(target: "app", "second after");
        });
        assert_eq!(console.messages(), ["first after", "second after"]);
        assert_eq!(file.messages(), ["first after", "second after"]);
    }

    #[test]
    fn the_applications_own_event_filters_still_hold() {
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::registry;
        /// Refuses every event of the target `app::noisy`.
        struct Refuse;
        impl<S: Subscriber> tracing_subscriber::Layer<S> for Refuse {
            fn event_enabled(
                &self,
                event: &Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) -> bool {
                event.metadata().target() != "app::noisy"
            }
        }
        let seen = Seen::default();
        let subscriber = registry().with(seen.clone()).with(Refuse);
        tracing::subscriber::with_default(subscriber, || {
            block_on(quiet(&["canary"], async {
                tracing::info!(target: "app::noisy", "refused by the application");
                tracing::info!(target: "app", "kept");
            }));
        });
        assert_eq!(seen.messages(), ["kept"]);
    }
}
