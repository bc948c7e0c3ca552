//! Workspace-level integration tests of `llm-tools`; the tests live in `tests/tests/`.
//!
//! This library holds what several tests share: the tools the recorded traffic in
//! `shared/fixtures/recorded` was made with ([`fixtures`]), and reading a recording's script.

pub mod fixtures;
