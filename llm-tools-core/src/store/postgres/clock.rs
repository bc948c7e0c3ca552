//! The database server's clock, as one process reads it: every process sharing a PostgreSQL
//! store writes and compares claims, leases and wake times in the server's time, so machines
//! whose own clocks disagree still agree on when a lease ends.
//!
//! Reading the server's clock for every time would cost a round trip each; instead the offset
//! between the server's clock and this machine's is measured when the store connects and again
//! when the last measurement is a minute old (at the store's next use). A measurement takes
//! the midpoint of the query's round trip, so it is off by at most half of it.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

/// How old a measurement may be before the next use of the store measures again: 1 minute.
const REMEASURE_AFTER: Duration = Duration::from_secs(60);

/// The query that reads the server's clock, in milliseconds since the Unix epoch.
pub(super) const SERVER_NOW: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8";

/// The server's clock, as an offset from this machine's.
#[derive(Debug)]
pub(super) struct ServerClock {
    /// The server's time minus this machine's, in milliseconds.
    offset_ms: AtomicI64,
    /// When it was last measured, by this machine's clock; 0: never.
    measured_at: AtomicU64,
    /// How far this machine's clock is set off from the system's (a test's stand-in for a
    /// machine whose clock runs ahead or behind; 0 otherwise).
    skew_ms: i64,
}

impl ServerClock {
    /// A clock not measured yet (it reads this machine's time until it is).
    pub(super) fn new(skew_ms: i64) -> Self {
        Self {
            offset_ms: AtomicI64::new(0),
            measured_at: AtomicU64::new(0),
            skew_ms,
        }
    }

    /// This machine's clock.
    pub(super) fn local_ms(&self) -> u64 {
        shifted(crate::clock::now_ms(), self.skew_ms)
    }

    /// The server's time now, by the last measurement.
    pub(super) fn now_ms(&self) -> u64 {
        shifted(self.local_ms(), self.offset_ms.load(Ordering::Relaxed))
    }

    /// Whether the last measurement is old enough (or missing) to measure again.
    pub(super) fn is_due(&self) -> bool {
        let measured = self.measured_at.load(Ordering::Relaxed);
        measured == 0
            || self.local_ms().saturating_sub(measured)
                >= u64::try_from(REMEASURE_AFTER.as_millis()).unwrap_or(u64::MAX)
    }

    /// Keeps a measurement: the server read `server_ms` between `before` and `after` by this
    /// machine's clock ([`local_ms`](Self::local_ms)).
    pub(super) fn measured(&self, before: u64, server_ms: i64, after: u64) {
        let midpoint = before.saturating_add(after.saturating_sub(before) / 2);
        let offset = server_ms.saturating_sub(i64::try_from(midpoint).unwrap_or(i64::MAX));
        self.offset_ms.store(offset, Ordering::Relaxed);
        self.measured_at.store(after.max(1), Ordering::Relaxed);
    }
}

/// `ms` moved by `offset` milliseconds, within `u64`.
fn shifted(ms: u64, offset: i64) -> u64 {
    if offset >= 0 {
        ms.saturating_add(offset.unsigned_abs())
    } else {
        ms.saturating_sub(offset.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measurement_corrects_a_clock_that_runs_ahead_or_behind() {
        for skew in [40_000, -40_000, 0] {
            let clock = ServerClock::new(skew);
            assert!(clock.is_due());
            // The server reads the true time halfway through a 10 ms round trip.
            let before = clock.local_ms();
            let server = i64::try_from(crate::clock::now_ms()).unwrap() + 5;
            let after = before + 10;
            clock.measured(before, server, after);
            assert!(!clock.is_due());
            let off = i64::try_from(clock.now_ms()).unwrap()
                - i64::try_from(crate::clock::now_ms()).unwrap();
            assert!(off.abs() <= 50, "skew {skew}: still {off} ms off");
        }
    }

    #[test]
    fn a_measurement_a_minute_old_is_due_again() {
        let clock = ServerClock::new(0);
        let now = clock.local_ms();
        clock.measured(
            now - 61_000,
            i64::try_from(now).unwrap() - 60_500,
            now - 60_000,
        );
        assert!(clock.is_due());
    }
}
