//! Debug output from the environment: `LLM_TOOLS_DEBUG=1` or `RUST_LOG` shows every request
//! sent to a provider (its body, the URL with any key in it redacted; headers, where the keys
//! travel, are never printed), every answer, and each tool call with its arguments and result.
//!
//! The library only emits [`tracing`] events and spans; an application that already installs a
//! subscriber sees them there (targets `llm_tools::request`, `llm_tools::tool`,
//! `llm_tools_providers`). One that does not can call [`init_from_env`] at start-up; its
//! output is coloured only when stderr is a terminal and `NO_COLOR` is unset (or empty):
//!
//! ```
//! // With LLM_TOOLS_DEBUG=1 (or RUST_LOG=llm_tools=debug) in the environment, this prints
//! // the library's traffic to stderr; with neither, it does nothing.
//! let installed = llm_tools_core::debug_log::init_from_env();
//! # let _ = installed;
//! ```

/// The directives that turn on the library's debug output.
const LIBRARY_DEBUG: &str = "llm_tools=debug,llm_tools_core=debug,llm_tools_providers=debug";

/// Installs a subscriber printing to stderr when `LLM_TOOLS_DEBUG` is on (`1`, `true`, `yes`,
/// `on`) or `RUST_LOG` is set, filtered by `RUST_LOG` with the library's debug output added
/// by `LLM_TOOLS_DEBUG`. Returns whether it installed one: `false` when neither variable asks
/// for output, or when the application already installed a global subscriber (which is kept).
pub fn init_from_env() -> bool {
    let debug = std::env::var("LLM_TOOLS_DEBUG").ok();
    let rust_log = std::env::var("RUST_LOG").ok();
    let Some(directives) = directives(debug.as_deref(), rust_log.as_deref()) else {
        return false;
    };
    let filter = tracing_subscriber::EnvFilter::builder().parse_lossy(directives);
    let colour = use_colour(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .try_init()
        .is_ok()
}

/// Whether the output gets ANSI colours: only on a terminal, and not when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>). A file or a pipe gets plain text.
fn use_colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(std::ffi::OsStr::is_empty)
}

/// The filter for the values of `LLM_TOOLS_DEBUG` and `RUST_LOG`, or `None` for no output.
fn directives(llm_tools_debug: Option<&str>, rust_log: Option<&str>) -> Option<String> {
    let rust_log = rust_log.map(str::trim).filter(|v| !v.is_empty());
    let on = llm_tools_debug.is_some_and(|v| {
        ["1", "true", "yes", "on"]
            .iter()
            .any(|yes| v.trim().eq_ignore_ascii_case(yes))
    });
    match (on, rust_log) {
        (true, Some(log)) => Some(format!("{log},{LIBRARY_DEBUG}")),
        (true, None) => Some(LIBRARY_DEBUG.to_owned()),
        (false, log) => log.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::{LIBRARY_DEBUG, directives, use_colour};

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        // NO_COLOR set to anything turns colours off; set but empty counts as unset.
        assert!(!use_colour(true, Some(OsStr::new("1"))));
        assert!(!use_colour(true, Some(OsStr::new("0"))));
        assert!(use_colour(true, Some(OsStr::new(""))));
        // A file or a pipe never gets escape codes.
        assert!(!use_colour(false, None));
        assert!(!use_colour(false, Some(OsStr::new(""))));
        assert!(!use_colour(false, Some(OsStr::new("1"))));
    }

    #[test]
    fn nothing_is_printed_unless_asked() {
        assert_eq!(directives(None, None), None);
        assert_eq!(directives(Some("0"), None), None);
        assert_eq!(directives(Some("false"), Some("  ")), None);
        assert_eq!(directives(Some(""), None), None);
    }

    #[test]
    fn llm_tools_debug_turns_on_the_library_output() {
        for on in ["1", "true", "YES", " on "] {
            assert_eq!(directives(Some(on), None).as_deref(), Some(LIBRARY_DEBUG));
        }
    }

    #[test]
    fn rust_log_filters_alone_or_with_the_library_output_added() {
        assert_eq!(
            directives(None, Some("warn,hyper=info")).as_deref(),
            Some("warn,hyper=info")
        );
        assert_eq!(
            directives(Some("1"), Some("warn")),
            Some(format!("warn,{LIBRARY_DEBUG}"))
        );
    }
}
