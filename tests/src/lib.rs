//! Workspace-level integration tests of `llm-tools`; the tests live in `tests/tests/`, one test
//! binary per area (`providers`, `mcp`, `durable`, `hostile`: `cargo test -p llm-tools-tests
//! --test mcp mcp_client::` runs one former file's tests).
//!
//! This library holds what several tests share: the tools the recorded traffic in
//! `tests/fixtures/recorded` was made with ([`fixtures`]), reading a recording's script,
//! driving the real chat loop against a replayed recording ([`chat_replay`]), the provider a
//! recording was made with ([`recorded_provider`]), and serving
//! answers and failures to the providers from the loopback replay server ([`serving`]).

pub mod chat_replay;
pub mod crash;
pub mod fixtures;
pub mod mcp;
pub mod postgres;
pub mod provider_suite;
pub mod recorded_provider;
pub mod served_tools;
pub mod serving;
pub mod store_suite;

/// Runs the ignored tests of this test binary whose names hold `filter` in a process of their
/// own, one at a time, and fails unless `count` of them ran and passed.
///
/// For tests that read what the library logs: `tracing` caches each log site's interest for
/// the whole process, so a subscriber a test sets for its own thread can find a site switched
/// off by another test's thread meeting it at the same moment. Alone in a process, a test's
/// subscriber sees every line.
#[allow(clippy::panic)] // a test helper: a child that fails fails the calling test
pub fn run_alone(filter: &str, count: usize) {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("no test binary: {e}"));
    let output = std::process::Command::new(exe)
        .arg(filter)
        .args(["--ignored", "--test-threads=1"])
        .output()
        .unwrap_or_else(|e| panic!("the test binary did not start again: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "a test run alone failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("{count} passed")),
        "not every test run alone ran:\n{stdout}"
    );
}

/// What a test's log subscriber wrote: every line of the events and spans it let through.
#[derive(Clone, Default)]
pub struct CapturedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl CapturedLog {
    /// A subscriber writing into a new buffer, set as this thread's default (with the
    /// `tracing_subscriber::EnvFilter` directives `filter`, else everything down to `TRACE`),
    /// until the guard is dropped. A test reading what the library logs on another test's
    /// thread can miss lines: run it alone ([`run_alone`]).
    pub fn start(filter: Option<&str>) -> (Self, tracing::subscriber::DefaultGuard) {
        let captured = Self::default();
        let writer = captured.clone();
        let builder = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false);
        let guard = match filter {
            Some(filter) => tracing::subscriber::set_default(
                builder
                    .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                    .finish(),
            ),
            None => tracing::subscriber::set_default(
                builder.with_max_level(tracing::Level::TRACE).finish(),
            ),
        };
        (captured, guard)
    }

    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for CapturedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The README's code, compiled and run as doctests so it stays true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The guide's code (`guide/src/`, one item per chapter), compiled and run as doctests as the
/// README's are: `cargo test -p llm-tools-tests --doc`.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../../guide/src/introduction.md")]
    pub struct Introduction;

    #[doc = include_str!("../../guide/src/tools.md")]
    pub struct Tools;

    #[doc = include_str!("../../guide/src/the-loop.md")]
    pub struct TheLoop;

    #[doc = include_str!("../../guide/src/pausing.md")]
    pub struct Pausing;

    #[doc = include_str!("../../guide/src/durable.md")]
    pub struct Durable;

    #[doc = include_str!("../../guide/src/workers.md")]
    pub struct Workers;

    #[doc = include_str!("../../guide/src/mcp.md")]
    pub struct Mcp;

    #[doc = include_str!("../../guide/src/providers.md")]
    pub struct Providers;

    #[doc = include_str!("../../guide/src/structured-output.md")]
    pub struct StructuredOutput;

    #[doc = include_str!("../../guide/src/provider-tools.md")]
    pub struct ProviderTools;

    #[doc = include_str!("../../guide/src/agents.md")]
    pub struct Agents;

    #[doc = include_str!("../../guide/src/security.md")]
    pub struct Security;

    #[doc = include_str!("../../guide/src/testing.md")]
    pub struct Testing;

    #[doc = include_str!("../../guide/src/performance.md")]
    pub struct Performance;
}
