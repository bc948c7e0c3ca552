//! The providers' integration tests, in one test binary: each former test file of
//! `tests/tests/` is a module here, its tests named `<module>::<test>`. Run one module with
//! `cargo test -p llm-tools-tests --test providers <module>::`.
//!
//! One binary per area, not one per file: each test binary links the whole library (over
//! 100 MB in a debug build), so fewer binaries build faster and take less disk.
//!
//! `secrets_never_leave` stays a test binary of its own: it captures every log line with a
//! thread's own `tracing` subscriber, and with the other tests emitting the same events on other
//! threads of one process, `tracing`'s per-callsite interest cache sometimes left its events
//! unrecorded (about one run in two).

mod anthropic_citations_back;
mod anthropic_errors;
mod anthropic_fixtures;
mod anthropic_gemini_portability;
mod anthropic_mapping;
mod anthropic_pause_turn;
mod api_keys_from_environment;
mod bad_input_catalogue;
mod bedrock_errors;
mod bedrock_fixtures;
mod bedrock_mapping;
mod bedrock_profiles;
mod code_execution;
mod cohere_fixtures;
mod cohere_mapping;
mod context_length_errors;
mod fallback;
mod gemini_errors;
mod gemini_fixtures;
mod gemini_mapping;
mod gemini_vertex;
mod hosted_mcp_tokens;
mod ollama_native;
mod openai_errors;
mod openai_fixtures;
mod openai_mapping;
mod openai_reasoning_items;
mod openai_record;
mod openai_tool_search;
mod provider_suite;
mod provider_tools;
mod provider_tools_more;
mod structured_output;
mod tool_citations;
