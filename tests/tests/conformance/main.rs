//! The MCP conformance suite's client scenarios, in a test binary of their own: the suite's
//! runner times the client (a reconnect must come within 200 ms of the time the server asked
//! for, a request is answered before the runner's timeout), so its scenarios run when no other
//! test binary runs, not beside the many servers of `tests/tests/mcp`. Run them with
//! `cargo test -p llm-tools-tests --test conformance`.

mod mcp_conformance;
