//! What a client measures about itself: CPU time of the whole process (user + system, every
//! thread) and how the kernel splits it, wall time, context switches, peak resident memory;
//! and the report it prints.

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

/// User and system CPU time of this process so far, in clock ticks, as the kernel's accounting
/// splits them (`utime` and `stime` of `/proc/self/stat`, every thread); `(0, 0)` where that
/// file cannot be read. Ticks are coarse (10 ms at 100 Hz): use them for the split of
/// [`cpu_time`], not for the total.
pub fn cpu_ticks() -> (u64, u64) {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| user_and_system_ticks(&stat))
        .unwrap_or((0, 0))
}

/// `utime` and `stime` (fields 14 and 15) of a `/proc/PID/stat` line.
fn user_and_system_ticks(stat: &str) -> Option<(u64, u64)> {
    // The command name (field 2) is in parentheses and may hold spaces and parentheses:
    // count the fields after the last closing one.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let user = fields.next()?.parse().ok()?;
    let system = fields.next()?.parse().ok()?;
    Some((user, system))
}

/// Context switches of this process's main thread so far, voluntary (it waited) plus
/// involuntary (it was preempted), from `/proc/self/status`; 0 where it cannot be read.
pub fn context_switches() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .map(|status| switches_in(&status))
        .unwrap_or(0)
}

/// Voluntary plus involuntary context switches in a `/proc/PID/status` text.
fn switches_in(status: &str) -> u64 {
    status
        .lines()
        .filter_map(|line| {
            line.strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
        })
        .filter_map(|n| n.trim().parse::<u64>().ok())
        .sum()
}

/// The peak resident set size of this process, in KiB (`VmHWM` in `/proc/self/status`).
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// The resident memory of this process now that is not backed by a file (its heap and stacks;
/// `RssAnon`), in KiB.
pub fn anonymous_rss_kib() -> u64 {
    status_kib("RssAnon:")
}

/// The resident memory of this process now that a file backs (its code and read-only data,
/// shared libraries; `RssFile`), in KiB.
pub fn file_rss_kib() -> u64 {
    status_kib("RssFile:")
}

/// A field of `/proc/self/status` in KiB, or 0 where there is none.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)
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
    /// Clock ticks of user time over the timed conversations (see [`cpu_ticks`]).
    pub user_ticks: u64,
    /// Clock ticks of system time over the timed conversations.
    pub system_ticks: u64,
    /// Context switches over the timed conversations (see [`context_switches`]).
    pub context_switches: u64,
    /// Wall time of the timed conversations, in nanoseconds.
    pub wall_ns: u64,
    /// Peak resident set size of the client process, in KiB.
    pub peak_rss_kib: u64,
    /// Resident memory not backed by a file (heap, stacks) at the end, in KiB.
    #[serde(default)]
    pub anonymous_rss_kib: u64,
    /// Resident memory backed by a file (code, read-only data) at the end, in KiB.
    #[serde(default)]
    pub file_rss_kib: u64,
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

    /// The share of [`cpu_ns`](Self::cpu_ns) the kernel counted as user time (0 to 1; NaN
    /// when no tick fell in the timed span).
    pub fn user_share(&self) -> f64 {
        self.user_ticks as f64 / (self.user_ticks + self.system_ticks) as f64
    }

    /// User CPU time per tool round, in microseconds: [`cpu_us_per_round`](Self::cpu_us_per_round)
    /// times [`user_share`](Self::user_share).
    pub fn user_us_per_round(&self) -> f64 {
        self.cpu_us_per_round() * self.user_share()
    }

    /// System CPU time per tool round, in microseconds.
    pub fn system_us_per_round(&self) -> f64 {
        self.cpu_us_per_round() * (1.0 - self.user_share())
    }

    /// Context switches per tool round.
    pub fn switches_per_round(&self) -> f64 {
        self.context_switches as f64 / self.rounds.max(1) as f64
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_system_ticks_are_fields_14_and_15_whatever_the_command_name() {
        let stat = "4242 (e2e (odd) name) S 1 4242 4242 0 -1 4194304 345 0 0 0 17 5 0 0 20 0 1 0";
        assert_eq!(user_and_system_ticks(stat), Some((17, 5)));
        assert_eq!(user_and_system_ticks("4242 (cut short) S 1"), None);
    }

    #[test]
    fn context_switches_add_the_voluntary_and_involuntary_ones() {
        let status = "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(switches_in(status), 15);
        assert_eq!(switches_in("Name:\tx\n"), 0);
    }

    #[test]
    fn this_process_has_a_stat_and_a_status_to_read() {
        assert!(
            std::fs::read_to_string("/proc/self/stat")
                .ok()
                .and_then(|s| user_and_system_ticks(&s))
                .is_some()
        );
        assert!(peak_rss_kib() > 0);
    }
}
