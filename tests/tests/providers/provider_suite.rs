//! The provider suite (`llm_tools_tests::provider_suite`) on every protocol the providers crate
//! speaks: the same cases, each protocol in its own wire format, through the real provider,
//! HTTP client and chat loop against the loopback replay server. A failure names the protocol
//! and each failed case.

use llm_tools_tests::provider_suite::{self, run_all};

#[tokio::test]
async fn openai_chat_completions_passes_the_provider_suite() {
    run_all(&provider_suite::CHAT_COMPLETIONS).await;
}

#[tokio::test]
async fn openai_responses_passes_the_provider_suite() {
    run_all(&provider_suite::RESPONSES).await;
}

#[tokio::test]
async fn anthropic_messages_passes_the_provider_suite() {
    run_all(&provider_suite::ANTHROPIC).await;
}

#[tokio::test]
async fn gemini_passes_the_provider_suite() {
    run_all(&provider_suite::GEMINI).await;
}

#[tokio::test]
async fn gemini_on_vertex_ai_passes_the_provider_suite() {
    run_all(&provider_suite::VERTEX).await;
}

#[tokio::test]
async fn bedrock_converse_passes_the_provider_suite() {
    run_all(&provider_suite::BEDROCK).await;
}

#[tokio::test]
async fn cohere_v2_passes_the_provider_suite() {
    run_all(&provider_suite::COHERE).await;
}

#[tokio::test]
async fn ollama_native_passes_the_provider_suite() {
    run_all(&provider_suite::OLLAMA).await;
}
