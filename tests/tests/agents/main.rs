//! Agents: reusable definitions, sub-agents as tools (answers, pauses through the parent,
//! durable, streamed, bounded) and handoffs, with scripted models. Run one module with
//! `cargo test -p llm-tools-tests --test agents <module>::`.

mod durable;
mod handoffs;
mod replay;
mod spans;
mod subagents;
