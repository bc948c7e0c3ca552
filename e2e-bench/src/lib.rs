//! The end-to-end benchmark of llm-tools: framework cost per tool round against a hand-written
//! floor.
//!
//! Three programs and a runner:
//!
//! - `e2e-mock`: a Chat Completions server on 127.0.0.1 answering from pre-built JSON (or SSE):
//!   3 tool calls per answer until the request holds 10 rounds, then a final answer. It checks
//!   every request against the [`scenario`] (messages, tool results, the 20 tool definitions)
//!   and counts requests and request bytes (`GET /stats`, `POST /reset`).
//! - `e2e-floor`: the same conversations by hand, with reqwest and serde_json.
//! - `e2e-llm-tools`: the same conversations with `#[tool]` fns and a `Chat` on the Chat
//!   Completions provider.
//! - `e2e-run`: builds nothing; starts the mock, runs both clients in turn several times and
//!   prints CPU time per round (and its split into user and system time), wall time and context
//!   switches per round, peak RSS and request bytes per conversation, with the median, the
//!   spread and the ratio llm-tools / floor; with `--instructions`, what callgrind counts per
//!   round: instructions, allocations, and the lines and pages of code a round runs through;
//!   with `--syscalls`, the system calls per round that `strace -c -f` counts; with
//!   `--write-layout DIR`, nothing timed: each client's functions in the order of the
//!   instructions they ran under callgrind, for the linker.
//!
//! `scripts/e2e-bench.sh` builds them in release mode and runs `e2e-run`; with `--ordered`, it
//! first relinks both clients with their functions laid out by use (`--write-layout`).

pub mod cli;
pub mod client;
pub mod measure;
pub mod scenario;
pub mod stats;
