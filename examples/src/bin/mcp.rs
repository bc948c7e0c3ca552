//! MCP: a chat uses the tools of MCP servers, and serves its own `#[tool]`s to any MCP client.
//!
//! 1. The reference server `@modelcontextprotocol/server-everything`, started over stdio (with
//!    Node.js: the copy the tests install in `target/mcp-servers/`, else `npx`), joins a chat
//!    under the namespace `everything`: the model adds two numbers, runs a long operation whose
//!    progress is printed, and asks the user a question through the server.
//! 2. Two `#[tool]`s are served over Streamable HTTP on a loopback port, and a second chat
//!    connects to them as it would to any server.
//!
//! The model's side is scripted, so it runs offline; without Node.js part 1 says so and part 2
//! still runs.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin mcp
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::path::PathBuf;

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{ToolContext, ToolError, tool};
use llm_tools_examples::print_transcript;
use llm_tools_mcp::{McpChat as _, McpServer, ToolServer};
use serde_json::json;

/// The reference server as a command: the copy `cargo test` installs, or `npx`.
fn everything() -> Option<McpServer> {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        return None;
    }
    let installed: Option<PathBuf> = std::fs::read_dir("target/mcp-servers")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| {
            e.path()
                .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        })
        .find(|p| p.exists());
    Some(match installed {
        Some(script) => McpServer::stdio("node").arg(script).arg("stdio"),
        None => McpServer::stdio("npx").args([
            "-y",
            "@modelcontextprotocol/server-everything@2026.8.31",
            "stdio",
        ]),
    })
}

async fn use_a_server(server: McpServer) -> Result<(), Box<dyn std::error::Error>> {
    let everything = server
        .allow([
            "get-sum",
            "trigger-long-running-operation",
            "trigger-elicitation-request",
        ])
        .connect("everything")
        .await?;
    println!(
        "connected ({}): {:?}\n",
        everything.protocol_version().unwrap_or_default(),
        everything.tool_names()
    );

    let model = ScriptedProvider::new()
        .then_call("everything_get-sum", json!({"a": 2, "b": 3}))
        .then_call(
            "everything_trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        )
        .then_call("everything_trigger-elicitation-request", json!({}))
        .then_text("2 + 3 = 5, the operation finished, and you are signed up.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&everything)?;
    chat.on_tool_progress(|p| println!("  progress {}/{}", p.progress, p.total.unwrap_or(0.0)));

    let mut outcome = chat
        .ask("Add 2 and 3, run the long operation, then sign me up.")
        .await?;
    while let Outcome::Paused(_) = outcome {
        let pending: Vec<(String, String)> = chat
            .pending_questions()
            .iter()
            .map(|q| (q.call.id.clone(), q.question.message().to_owned()))
            .collect();
        for (call_id, message) in pending {
            println!("  the server asks: {message} → answering for the user");
            chat.answer(&call_id, json!({"name": "Ada Lovelace"}))?;
        }
        outcome = chat.complete().await?;
    }
    print_transcript(chat.messages());
    everything.close().await;
    Ok(())
}

/// Converts a temperature from Celsius to Fahrenheit
///
/// # Arguments
/// * `celsius` - The temperature in °C
#[tool]
async fn to_fahrenheit(celsius: f64) -> String {
    format!("{:.1}°F", celsius * 9.0 / 5.0 + 32.0)
}

/// Books a table after confirming the time with the user
#[tool]
async fn book_table(time: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx.ask(format!("Book a table at {time}?")).await?;
    Ok(if answer.is_accepted() {
        format!("booked for {time}")
    } else {
        "not booked".into()
    })
}

async fn serve_tools() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let server = ToolServer::new("kitchen")
        .with_instructions("Temperature conversion and table bookings")
        .with_tools((ToFahrenheit, BookTable))?;
    tokio::spawn(server.serve_http(listener));
    println!("serving `kitchen` at {url}");

    // Any MCP client can connect now; this one is a chat.
    let kitchen = McpServer::http(url).connect("kitchen").await?;
    let model = ScriptedProvider::new()
        .then_calls([
            ("kitchen_to_fahrenheit", json!({"celsius": 21.5})),
            ("kitchen_book_table", json!({"time": "19:30"})),
        ])
        .then_text("21.5°C is 70.7°F, and the table is booked.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&kitchen)?;
    let outcome = chat
        .ask("Convert 21.5°C and book a table at 19:30.")
        .await?;
    if let Outcome::Paused(_) = outcome {
        let call_id = chat.pending_questions()[0].call.id.clone();
        println!("  the served tool asks through MCP elicitation → accepting");
        chat.answer(&call_id, json!({}))?;
        let _answer = chat.complete().await?;
    }
    print_transcript(chat.messages());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    println!("— 1. a chat with an MCP server's tools —");
    match everything() {
        Some(server) => use_a_server(server).await?,
        None => println!(
            "Node.js is not installed here, so the reference MCP server cannot run; install Node.js \
             (https://nodejs.org, or `apt-get install nodejs npm`) to see this part.\n"
        ),
    }
    println!("\n— 2. serving #[tool]s over MCP —");
    serve_tools().await
}
