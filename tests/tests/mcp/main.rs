//! The MCP client's and server's integration tests, in one test binary: each former test file
//! of `tests/tests/` is a module here, its tests named `<module>::<test>`. Run one module with
//! `cargo test -p llm-tools-tests --test mcp <module>::`.
//!
//! One binary per area, not one per file: each test binary links the whole library (over
//! 100 MB in a debug build), so fewer binaries build faster and take less disk.

mod hostile_mcp;
mod hostile_serving;
mod mcp_bad_input;
mod mcp_client;
mod mcp_client_features;
mod mcp_reconnect;
mod mcp_serving;
mod mcp_tasks;
mod mcp_token_store;
