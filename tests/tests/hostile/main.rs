//! Hostile input at the library's boundaries (schemas, file tools, the network), in one test
//! binary: each former test file of `tests/tests/` is a module here, its tests named
//! `<module>::<test>`. Run one module with
//! `cargo test -p llm-tools-tests --test hostile <module>::`.
//!
//! One binary per area, not one per file: each test binary links the whole library (over
//! 100 MB in a debug build), so fewer binaries build faster and take less disk.

mod hostile_files;
mod hostile_network;
mod hostile_schemas;
