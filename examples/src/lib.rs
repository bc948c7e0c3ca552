//! Runnable examples of `llm-tools`; each program is in `examples/src/bin/`.
