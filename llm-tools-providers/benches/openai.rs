//! Benchmarks of the OpenAI protocols.
fn main() {}
