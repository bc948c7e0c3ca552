//! The durable chats' integration tests (SQLite files, a real PostgreSQL server, crashed
//! workers), in one test binary: each former test file of `tests/tests/` is a module here, its
//! tests named `<module>::<test>`. Run one module with
//! `cargo test -p llm-tools-tests --test durable <module>::`.
//!
//! One binary per area, not one per file: each test binary links the whole library (over
//! 100 MB in a debug build), so fewer binaries build faster and take less disk.

mod durable_crash;
mod durable_crash_postgres;
mod durable_edges;
mod durable_hooks_approvals;
mod durable_loop_control;
mod durable_postgres;
mod durable_postgres_tls;
mod durable_secrets;
mod durable_sqlite;
mod durable_stored_state;
mod hostile_spending;
