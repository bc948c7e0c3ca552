//! Workspace-level integration tests of `llm-tools`; the tests live in `tests/tests/`.
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
pub mod recorded_provider;
pub mod served_tools;
pub mod serving;
pub mod store_suite;

/// The README's code, compiled and run as doctests so it stays true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
