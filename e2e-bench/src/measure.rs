//! What a client measures about itself: CPU time of the whole process (user + system, every
//! thread), wall time, peak resident memory; and the report it prints.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CPU time used by this process so far, user and system, all threads
/// (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The peak resident set size of this process, in KiB (`VmHWM` in `/proc/self/status`).
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")
                    .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// What one client run measured, printed as one JSON line on stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `floor` or `llm-tools`.
    pub client: String,
    /// Whether the answers were streamed.
    pub stream: bool,
    /// Timed conversations (after the warm-up).
    pub conversations: u64,
    /// Tool rounds in the timed conversations.
    pub rounds: u64,
    /// CPU time of the client process over the timed conversations, in nanoseconds.
    pub cpu_ns: u64,
    /// Wall time of the timed conversations, in nanoseconds.
    pub wall_ns: u64,
    /// Peak resident set size of the client process, in KiB.
    pub peak_rss_kib: u64,
    /// Requests the mock received during the timed conversations.
    pub requests: u64,
    /// Request body bytes the mock received during the timed conversations.
    pub request_bytes: u64,
}

impl Report {
    /// CPU time per tool round, in microseconds.
    pub fn cpu_us_per_round(&self) -> f64 {
        self.cpu_ns as f64 / 1000.0 / self.rounds.max(1) as f64
    }

    /// Wall time per tool round, in microseconds.
    pub fn wall_us_per_round(&self) -> f64 {
        self.wall_ns as f64 / 1000.0 / self.rounds.max(1) as f64
    }

    /// Request body bytes per conversation.
    pub fn bytes_per_conversation(&self) -> f64 {
        self.request_bytes as f64 / self.conversations.max(1) as f64
    }
}
