//! The database server's clock, as one process reads it: every process sharing a PostgreSQL
//! store writes and compares claims, leases and wake times in the server's time, so machines
//! whose own clocks disagree still agree on when a lease ends.
//!
//! Reading the server's clock for every time would cost a round trip each; instead the server's
//! time is read when the store connects and again when the last reading is a minute old (at the
//! store's next use), and carried forward on this machine's monotonic clock in between. A
//! reading is taken as made at the midpoint of the query's one round trip (the statement is
//! prepared before it), so it is off by at most half of that round trip; a step of this
//! machine's wall clock changes nothing.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How old a measurement may be before the next use of the store measures again: 1 minute.
const REMEASURE_AFTER: Duration = Duration::from_secs(60);

/// The query that reads the server's clock, in milliseconds since the Unix epoch.
pub(super) const SERVER_NOW: &str = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8";

/// One reading of the server's clock: its time (milliseconds since the Unix epoch), when it was
/// read on this machine's monotonic clock, and this machine's wall clock then.
#[derive(Clone, Copy, Debug)]
struct Reading {
    server_ms: u64,
    at: Instant,
    wall_ms: u64,
}

/// How far the monotonic clock and the wall clock may drift apart since a reading before it is
/// read again: 1 s. More means the machine was suspended (the monotonic clock stood still) or
/// its wall clock was stepped; either way the carried reading is not trusted.
const DRIFT_MS: u64 = 1_000;

/// The server's clock: what it read at a measurement, and when that was on this machine's
/// monotonic clock. Times are the server's reading plus the monotonic time since, so a step of
/// this machine's wall clock (set back or forward) changes nothing.
#[derive(Debug)]
pub(super) struct ServerClock {
    /// The last reading; `None` until measured.
    measured: Mutex<Option<Reading>>,
    /// How far this machine's wall clock is set off from the system's (a test's stand-in for a
    /// machine whose clock runs ahead or behind; 0 otherwise). Read only until the first
    /// measurement.
    skew_ms: i64,
}

impl ServerClock {
    /// A clock not measured yet (it reads this machine's time until it is).
    pub(super) fn new(skew_ms: i64) -> Self {
        Self {
            measured: Mutex::new(None),
            skew_ms,
        }
    }

    fn reading(&self) -> Option<Reading> {
        *self
            .measured
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The server's time now, by the last measurement (this machine's wall clock before the
    /// first).
    pub(super) fn now_ms(&self) -> u64 {
        match self.reading() {
            Some(reading) => reading
                .server_ms
                .saturating_add(millis(reading.at.elapsed())),
            None => self.wall_ms(),
        }
    }

    /// This machine's wall clock (as a test sets it off).
    fn wall_ms(&self) -> u64 {
        shifted(crate::clock::now_ms(), self.skew_ms)
    }

    /// Whether the last measurement is old enough (or missing) to measure again, or the
    /// machine's two clocks drifted apart since (a suspend, a stepped wall clock).
    pub(super) fn is_due(&self) -> bool {
        self.reading().is_none_or(|reading| {
            let monotonic = millis(reading.at.elapsed());
            let wall = self.wall_ms().saturating_sub(reading.wall_ms);
            reading.at.elapsed() >= REMEASURE_AFTER || monotonic.abs_diff(wall) > DRIFT_MS
        })
    }

    /// Keeps a measurement: the server read `server_ms` between `before` and `after` on this
    /// machine's monotonic clock (taken as read at the midpoint).
    pub(super) fn measured(&self, before: Instant, server_ms: i64, after: Instant) {
        let midpoint = before + after.saturating_duration_since(before) / 2;
        let reading = Reading {
            server_ms: u64::try_from(server_ms).unwrap_or(0),
            at: midpoint,
            wall_ms: self.wall_ms().saturating_sub(millis(midpoint.elapsed())),
        };
        *self
            .measured
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(reading);
    }
}

/// A duration in whole milliseconds, within `u64`.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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
    fn a_measured_clock_reads_the_server_whatever_this_machines_clock_says() {
        for skew in [40_000, -40_000, 0] {
            let clock = ServerClock::new(skew);
            assert!(clock.is_due());
            let unmeasured = i64::try_from(clock.now_ms()).unwrap()
                - i64::try_from(crate::clock::now_ms()).unwrap();
            assert!(
                (unmeasured - skew).abs() <= 50,
                "before measuring: {unmeasured}"
            );
            // The server reads an hour ahead of the system halfway through a round trip.
            let before = Instant::now();
            let server = i64::try_from(crate::clock::now_ms()).unwrap() + 3_600_000;
            clock.measured(before, server, Instant::now());
            assert!(!clock.is_due());
            let off = i64::try_from(clock.now_ms()).unwrap()
                - i64::try_from(crate::clock::now_ms()).unwrap();
            assert!((off - 3_600_000).abs() <= 50, "skew {skew}: {off} ms off");
        }
    }

    #[test]
    fn a_measurement_a_minute_old_is_due_again() {
        let clock = ServerClock::new(0);
        let Some(long_ago) = Instant::now().checked_sub(Duration::from_secs(61)) else {
            return; // a machine up for less than a minute cannot hold such an instant
        };
        clock.measured(long_ago, 1_000, long_ago);
        assert!(clock.is_due());
        assert!(clock.now_ms() >= 61_000);
    }

    #[test]
    fn a_reading_the_wall_clock_drifted_from_is_due_again() {
        let clock = ServerClock::new(0);
        let now = Instant::now();
        clock.measured(now, 1_000, now);
        assert!(!clock.is_due());
        // As if the machine had been suspended for a minute: the wall clock moved on, the
        // monotonic clock did not.
        if let Some(reading) = clock.measured.lock().unwrap().as_mut() {
            reading.wall_ms -= 60_000;
        }
        assert!(clock.is_due());
    }
}
