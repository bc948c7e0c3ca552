//! How often a session opens its event streams (`GET`s: the session's own stream, resumptions
//! of a response's stream, attempts after a network error), and when it stops.
//!
//! A stream the server ends is opened again as soon as the server asks (`retry: 0`). Two
//! bounds keep a server that ends its stream at every open from keeping the client busy:
//! - **a rate**: past [`MAX_STREAM_OPENS_PER_MINUTE`] opens within a minute, each further open
//!   waits until a minute has passed since the oldest of the last ten;
//! - **an end**: once the opens have been held to that rate for [`QUIET_STREAM_LIMIT`] (three
//!   minutes, about 40 opens) with no message arriving on the streams it opened, the
//!   session's event streams are given up: none is opened again, with one warning.
//!   The session goes on: calls are answered on their own requests. What is lost is what only
//!   the event stream carries (the server's notifications and requests between calls, and the
//!   rest of a response whose stream ended early: that call fails). A new session (a
//!   reconnect) starts with both bounds afresh.
//!
//! A stream that ends often but carries messages is never given up, and a stream that stayed
//! open for a minute or more starts the count afresh. So does a new session id (rmcp opens a
//! new session by itself when the server forgets one).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How many event streams one session opens within a minute before each further open waits:
/// 10.
pub const MAX_STREAM_OPENS_PER_MINUTE: usize = 10;

/// How long a session's event streams may be held to [`MAX_STREAM_OPENS_PER_MINUTE`] with no
/// message arriving on them before they are given up: 3 minutes (from the first open
/// that had to wait since the last message).
pub const QUIET_STREAM_LIMIT: Duration = Duration::from_secs(180);

/// The window of [`MAX_STREAM_OPENS_PER_MINUTE`].
const WINDOW: Duration = Duration::from_secs(60);

/// What the next open does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Open {
    /// Opens after this delay (zero: at once).
    After(Duration),
    /// Does not open: the session's event streams are given up (`first` for the open that
    /// gave them up, which says so in the log).
    GivenUp {
        /// Whether this open gave them up.
        first: bool,
    },
}

/// The opens of one session's event streams.
#[derive(Debug, Default)]
pub(crate) struct StreamOpens {
    /// The times of the last opens, in order: at most [`MAX_STREAM_OPENS_PER_MINUTE`].
    opens: VecDeque<Instant>,
    /// When the first open that had to wait since the last message was asked for.
    quiet_since: Option<Instant>,
    given_up: bool,
    /// The session the opens are of.
    session: Option<String>,
}

impl StreamOpens {
    /// The opens of `session`, already given up (for tests of what follows).
    #[cfg(test)]
    pub(crate) fn given_up(session: Option<&str>) -> Self {
        Self {
            given_up: true,
            session: session.map(str::to_owned),
            ..Self::default()
        }
    }

    /// Counts an open of `session`'s stream asked for at `now` (`message`: whether a message
    /// arrived on an event stream since the last open) and says when it may go.
    pub(crate) fn next(&mut self, now: Instant, message: bool, session: Option<&str>) -> Open {
        if self.session.as_deref() != session {
            *self = Self {
                session: session.map(str::to_owned),
                ..Self::default()
            };
        }
        if self.given_up {
            return Open::GivenUp { first: false };
        }
        // The last stream stayed open a minute or more: it was not ending at every open.
        if self
            .opens
            .back()
            .is_some_and(|last| now.saturating_duration_since(*last) >= WINDOW)
        {
            self.quiet_since = None;
        }
        let mut at = now;
        while self.opens.len() >= MAX_STREAM_OPENS_PER_MINUTE {
            if let Some(oldest) = self.opens.pop_front() {
                at = at.max(oldest + WINDOW);
            }
        }
        if message {
            self.quiet_since = None;
        }
        let delay = at.saturating_duration_since(now);
        if !delay.is_zero() {
            let since = *self.quiet_since.get_or_insert(now);
            if now.saturating_duration_since(since) >= QUIET_STREAM_LIMIT {
                self.given_up = true;
                return Open::GivenUp { first: true };
            }
        }
        self.opens.push_back(at);
        Open::After(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opens asked for as soon as each may go (a server that ends the stream at once, with
    /// `retry: 0`), `gap` after each, `message(i)` saying whether one came before open `i`:
    /// what each open did, and when it was asked for.
    fn run(
        opens: &mut StreamOpens,
        count: usize,
        gap: Duration,
        message: impl Fn(usize) -> bool,
    ) -> Vec<(Open, Duration)> {
        let start = Instant::now();
        let mut now = start;
        (0..count)
            .map(|i| {
                let open = opens.next(now, message(i), Some("s1"));
                let asked = now - start;
                if let Open::After(delay) = open {
                    now += delay + gap;
                }
                (open, asked)
            })
            .collect()
    }

    #[test]
    fn ten_opens_a_minute_go_at_once_and_the_next_waits() {
        let mut opens = StreamOpens::default();
        let got = run(&mut opens, 11, Duration::ZERO, |_| false);
        assert!(
            got[..10]
                .iter()
                .all(|(o, _)| *o == Open::After(Duration::ZERO))
        );
        assert_eq!(got[10].0, Open::After(WINDOW));
    }

    #[test]
    fn a_stream_that_ends_at_every_open_with_nothing_on_it_is_given_up_after_three_minutes() {
        for gap in [
            Duration::ZERO,
            Duration::from_millis(5),
            Duration::from_secs(2),
        ] {
            let mut opens = StreamOpens::default();
            let got = run(&mut opens, 200, gap, |_| false);
            let first = got
                .iter()
                .position(|(o, _)| *o == Open::GivenUp { first: true })
                .unwrap();
            assert!(
                got[first + 1..]
                    .iter()
                    .all(|(o, _)| *o == Open::GivenUp { first: false })
            );
            // Given up three minutes after the first open that waited, about 40 opens in.
            let first_wait = got
                .iter()
                .position(|(o, _)| matches!(o, Open::After(d) if !d.is_zero()))
                .unwrap();
            let quiet = got[first].1 - got[first_wait].1;
            assert!(
                quiet >= QUIET_STREAM_LIMIT && quiet < QUIET_STREAM_LIMIT + WINDOW,
                "{gap:?}: {quiet:?}"
            );
            assert!((35..=45).contains(&first), "{gap:?}: {first}");
        }
    }

    #[test]
    fn a_stream_that_ends_often_but_carries_messages_is_never_given_up() {
        for every in [1, 10, 25] {
            let mut opens = StreamOpens::default();
            // An hour and more of opens, a message before every `every`th.
            let got = run(&mut opens, 1_000, Duration::ZERO, |i| i % every == 0);
            assert!(
                got.iter().all(|(o, _)| matches!(o, Open::After(_))),
                "a message every {every} opens"
            );
        }
    }

    #[test]
    fn opens_spread_out_are_never_delayed_nor_given_up() {
        let mut opens = StreamOpens::default();
        let got = run(&mut opens, 1_000, Duration::from_secs(7), |_| false);
        assert!(got.iter().all(|(o, _)| *o == Open::After(Duration::ZERO)));
    }

    #[test]
    fn a_stream_that_stayed_open_a_minute_starts_the_count_afresh() {
        let mut opens = StreamOpens::default();
        let start = Instant::now();
        // A burst that waits once (the count starts), then the stream stays open an hour.
        let mut now = start;
        for _ in 0..11 {
            if let Open::After(delay) = opens.next(now, false, Some("s1")) {
                now += delay;
            }
        }
        now += Duration::from_secs(3_600);
        // The next burst: it may wait again, and is not given up at its first wait.
        let got = run_from(&mut opens, now, 20);
        assert!(got.iter().all(|o| matches!(o, Open::After(_))), "{got:?}");
    }

    #[test]
    fn a_new_session_starts_afresh() {
        let mut opens = StreamOpens::given_up(Some("s1"));
        assert_eq!(
            opens.next(Instant::now(), false, Some("s2")),
            Open::After(Duration::ZERO)
        );
    }

    /// `count` opens of session `s1` asked for as soon as each may go, from `now`.
    fn run_from(opens: &mut StreamOpens, mut now: Instant, count: usize) -> Vec<Open> {
        (0..count)
            .map(|_| {
                let open = opens.next(now, false, Some("s1"));
                if let Open::After(delay) = open {
                    now += delay;
                }
                open
            })
            .collect()
    }
}
