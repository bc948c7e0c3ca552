//! Workspace-level integration tests of `llm-tools`; the tests live in `tests/tests/`.
