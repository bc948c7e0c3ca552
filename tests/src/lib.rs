//! Workspace-level integration tests of `llm-tools`; the tests live in `tests/tests/`.
//!
//! This library holds what several tests share: the tools the recorded traffic in
//! `tests/fixtures/recorded` was made with ([`fixtures`]), reading a recording's script, and
//! driving the real chat loop against a replayed recording ([`chat_replay`]).

pub mod chat_replay;
pub mod fixtures;

/// The README's code, compiled and run as doctests so it stays true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
