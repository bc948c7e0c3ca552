#!/usr/bin/env bash
# What an application's crate compiles of the library: with optimisations on, rustc can copy an
# async body into every codegen unit that polls it, the caller's crate included, and with it
# every async body that one polls in turn. Every public `async fn` of llm-tools-core and
# llm-tools-mcp that waits on anything, and the providers' `send`, `send_streaming`,
# `HttpClient::post_json`, `HttpResponse::bytes` and `ReplayServer::start`, therefore hold only a call to a plain
# function of the library that returns a boxed future, so all of that is compiled once, in the
# library (`ToolServer::serve`, generic over the caller's transport, is the one left out).
#
#   scripts/check-copies.sh
#
# Builds a crate that calls each of them (target/check-copies/) and fails when its object holds
# the body of any other async function of llm-tools-core, llm-tools-mcp or
# llm-tools-providers. The crate and the three libraries are built at opt-level 1 (rustc offers
# a body to other crates, and makes the copies, whenever it optimises), the crate in one
# codegen unit, with LLVM's passes off (`-C no-prepopulate-passes`) so that no copy is hidden
# by inlining.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WS="$ROOT/target/check-copies"
rm -rf "$WS"
mkdir -p "$WS/src"

cat > "$WS/Cargo.toml" <<EOF
[package]
name = "check-copies"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
path = "src/lib.rs"

[dependencies]
llm-tools-core = { path = "$ROOT/llm-tools-core", features = ["sqlite", "postgres"] }
llm-tools-mcp = { path = "$ROOT/llm-tools-mcp", features = ["server", "auth"] }
llm-tools-providers = { path = "$ROOT/llm-tools-providers", features = ["openai", "anthropic", "replay"] }
tokio = { version = "1", features = ["net"] }
futures = { version = "0.3", default-features = false, features = ["std"] }
serde_json = "1"

[workspace]

# The test build's profile (the workspace's Cargo.toml), with this crate alone optimised: what
# it copies depends on its own optimisation level.
[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false

[profile.dev.package.check-copies]
opt-level = 1

# The library optimised too: rustc makes a body available to other crates (for inlining, and
# with it copying) only when the crate that defines it is optimised.
[profile.dev.package.llm-tools-core]
opt-level = 1

[profile.dev.package.llm-tools-mcp]
opt-level = 1

[profile.dev.package.llm-tools-providers]
opt-level = 1
EOF
# The repository's lock file: the same dependency versions, and no registry access needed.
cp "$ROOT/Cargo.lock" "$WS/Cargo.lock"

cat > "$WS/src/lib.rs" <<'EOF'
//! Calls every public `async fn` of llm-tools-core and llm-tools-mcp, and a provider's.
use std::future::Future;
use std::pin::Pin;

use futures::StreamExt as _;
use llm_tools_core::chat::{Chat, Compaction};
use llm_tools_core::store::{PostgresStore, SqliteStore, Worker};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::ToolContext;
use llm_tools_core::{Provider as _, Request};
use llm_tools_mcp::{LoopbackRedirect, McpClient, McpServer, Root, ToolServer};
use llm_tools_providers::anthropic::Anthropic;
use llm_tools_providers::openai::OpenAiChat;
use llm_tools_providers::replay::ReplayServer;

pub fn calls<'a>(
    chat: &'a mut Chat,
    compaction: &'a Compaction,
    worker: &'a Worker,
    client: &'a McpClient,
    listener: tokio::net::TcpListener,
    context: &'a ToolContext,
    openai: &'a OpenAiChat,
    anthropic: &'a Anthropic,
) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
    Box::pin(async move {
        let _ = chat.ask("hi").await;
        let _ = chat.complete().await;
        let _ = chat.step().await;
        let _ = chat.ask_stream("hi").next().await;
        let _ = chat.complete_stream().next().await;
        let _ = chat.cancel().await;
        let _ = chat.compact(Some(compaction)).await;
        let _ = chat.save().await;
        let _ = chat.enqueue("hi").await;
        let _ = worker.run_once().await;
        let _ = worker.run_until(std::future::pending()).await;
        let _ = McpServer::stdio("server").connect("server").await;
        let _ = client.refresh_tools().await;
        let _ = client.reconnect().await;
        let _ = ToolServer::new("tools").serve_stdio().await;
        let _ = ToolServer::new("tools").serve_http(listener).await;
        let _ = ToolServer::new("tools").serve_io(tokio::io::empty(), tokio::io::sink()).await;
        let _ = client.list_resources().await;
        let _ = client.list_resource_templates().await;
        let _ = client.read_resource("uri").await;
        let _ = client.subscribe("uri").await;
        let _ = client.unsubscribe("uri").await;
        let _ = client.list_prompts().await;
        let _ = client.get_prompt("prompt", serde_json::Value::Null).await;
        let _ = client.set_roots(Vec::<Root>::new()).await;
        let _ = client.resources_tool().await;
        let _ = client.accept_drift("tool").await;
        client.close().await;
        if let Ok(redirect) = LoopbackRedirect::bind(0).await {
            let _ = redirect.wait().await;
        }
        let _ = context.ask("question").await;
        let request = Request::new(&[], &[]);
        let _ = openai.send(request.clone()).await;
        let _ = openai.send_streaming(request.clone()).await;
        let _ = openai.complete(request.clone()).await;
        let _ = openai.stream(request.clone()).await;
        let _ = anthropic.complete(request.clone()).await;
        let _ = anthropic.stream(request.clone()).await;
        if let Ok(answer) = openai.http().post_json("/", Vec::new(), None).await {
            let _ = answer.bytes().await;
        }
        let _ = ReplayServer::start(Default::default()).await;
        let _ = ReplayServer::from_file("recording.json").await;
        let _ = ReplayServer::with_interactions(Vec::new()).await;
        if let Ok(store) = SqliteStore::open("chats.db").await {
            let _ = store.chat_ids().await;
            let _ = SqliteStore::open_with_busy_timeout("chats.db", Default::default()).await;
            let _ = Chat::create(store.clone(), "chat", ScriptedProvider::new()).await;
            let _ = Chat::load(store.clone(), "chat", ScriptedProvider::new()).await;
            let _ = chat.store_in(store, "chat").await;
        }
        if let Ok(store) = PostgresStore::connect("postgres://localhost/chats").await {
            let _ = store.migrate().await;
            let _ = store.chat_ids().await;
        }
    })
}
EOF
command -v nm > /dev/null || { echo "check-copies: needs nm (binutils, which the linker comes with)" >&2; exit 1; }
OBJ="$WS/check-copies.o"
CARGO_TARGET_DIR="$ROOT/target" cargo rustc --quiet --manifest-path "$WS/Cargo.toml" --lib -- \
    -C codegen-units=1 -C no-prepopulate-passes --emit="obj=$OBJ"

# The public wrappers: their bodies are the caller's, each awaiting one boxed future of the
# library (`run_until` also its shutdown future).
WRAPPERS=(
    'llm_tools_core::chat::Chat::ask'
    'llm_tools_core::chat::Chat::complete'
    'llm_tools_core::chat::Chat::step'
    'llm_tools_core::chat::Chat::cancel'
    'llm_tools_core::chat::compaction::steps::<impl llm_tools_core::chat::Chat>::compact'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::save'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::enqueue'
    'llm_tools_core::chat::durable::worker::Worker::run_once'
    'llm_tools_core::chat::durable::worker::Worker::run_until'
    'llm_tools_mcp::client::mcp_client::<impl llm_tools_mcp::client::config::McpServer>::connect'
    'llm_tools_mcp::client::mcp_client::McpClient::refresh_tools'
    'llm_tools_mcp::client::mcp_client::McpClient::reconnect'
    'llm_tools_mcp::server::tool_server::ToolServer::serve_stdio'
    'llm_tools_mcp::server::tool_server::ToolServer::serve_http'
    'llm_tools_mcp::server::tool_server::ToolServer::serve_http_with'
    'llm_tools_mcp::server::tool_server::ToolServer::serve_io'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::list_resources'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::list_resource_templates'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::read_resource'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::subscribe'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::unsubscribe'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::list_prompts'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::get_prompt'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::set_roots'
    'llm_tools_mcp::client::resources::<impl llm_tools_mcp::client::mcp_client::McpClient>::resources_tool'
    'llm_tools_mcp::client::mcp_client::McpClient::accept_drift'
    'llm_tools_mcp::client::mcp_client::McpClient::close'
    'llm_tools_mcp::client::auth::LoopbackRedirect::bind'
    'llm_tools_mcp::client::auth::LoopbackRedirect::wait'
    'llm_tools_core::context::ToolContext::ask'
    'llm_tools_core::store::sqlite::SqliteStore::open'
    'llm_tools_core::store::sqlite::SqliteStore::open_with_busy_timeout'
    'llm_tools_core::store::sqlite::SqliteStore::open_with'
    'llm_tools_core::store::sqlite::SqliteStore::chat_ids'
    'llm_tools_core::store::postgres::PostgresStore::connect'
    'llm_tools_core::store::postgres::PostgresStore::connect_with'
    'llm_tools_core::store::postgres::PostgresStore::migrate'
    'llm_tools_core::store::postgres::PostgresStore::chat_ids'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::create'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::create_shared'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::load'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::load_shared'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::store_in'
    'llm_tools_core::chat::durable::<impl llm_tools_core::chat::Chat>::store_in_shared'
    'llm_tools_providers::protocol::HttpProvider<P>::send'
    'llm_tools_providers::protocol::HttpProvider<P>::send_streaming'
    'llm_tools_providers::http::client::HttpClient::post_json'
    'llm_tools_providers::http::client::HttpResponse::bytes'
    'llm_tools_providers::replay::ReplayServer::start'
    'llm_tools_providers::replay::ReplayServer::from_file'
    'llm_tools_providers::replay::ReplayServer::with_interactions'
)
SYMBOLS="$WS/symbols.txt"
nm --demangle "$OBJ" > "$SYMBOLS"
# Nothing checked is no pass: each wrapper's name must be read in the object, defined or not
# (a symbol mangled another way, or an nm without Rust demangling, reads as nothing).
for wrapper in "${WRAPPERS[@]}"; do
    if ! grep -qE " ${wrapper}(::\{\{closure\}\})?$" "$SYMBOLS"; then
        echo "check-copies: no symbol of ${wrapper} in $OBJ: nothing would be checked" >&2
        exit 1
    fi
done
# Plain closures (no async body) of code generic over a provider's protocol: compiled for each
# protocol where the provider is made into a `dyn Provider`, by design (reading an answer is
# the protocol's own code). The exchange they are part of is compiled once.
PER_PROTOCOL=(
    'llm_tools_providers::protocol::HttpProvider<P>::parse_counted'
    '<llm_tools_providers::protocol::Driver<B,A> as futures_core::stream::Stream>::poll_next'
)
allowed="^($(IFS='|'; echo "${WRAPPERS[*]}"))(::\{\{closure\}\})+$"
allowed_per_protocol="^($(IFS='|'; echo "${PER_PROTOCOL[*]}"))::\{\{closure\}\}$"
# Every async body (`{{closure}}`) of core, MCP or the providers the object defines, methods of
# their types' trait impls included, save the wrappers' and the per-protocol closures.
copied=$(awk '$2 ~ /^[tTwW]$/ { $1 = ""; $2 = ""; print substr($0, 3) }' "$SYMBOLS" |
    grep -E '^(<llm_tools_(core|mcp|providers)::[^ ]* as [^>]+>|llm_tools_(core|mcp|providers))::.*\{\{closure\}\}' |
    grep -vE "$allowed" | grep -vE "$allowed_per_protocol" | sort -u) || true
if [[ -n "$copied" ]]; then
    echo "check-copies: the caller's crate compiles these async bodies of the library:" >&2
    echo "$copied" >&2
    echo "Call them from a plain function of the library that returns a boxed future." >&2
    exit 1
fi
echo "check-copies: the caller's crate holds no async body of the library beyond its ${#WRAPPERS[@]} public wrappers"
