//! Wire protocols for `llm-tools`, one module per protocol behind its own cargo feature.
