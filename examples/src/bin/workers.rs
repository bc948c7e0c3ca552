//! Workers: the web side stores each user's message (`Chat::enqueue`) and returns; worker
//! processes, on any number of machines, pick the chats that are due, run their tools and write
//! the answers. Here two workers run in this one process; run the same worker code in as many
//! processes as you like against one database.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin workers                       # SQLite in a temporary file
//! DATABASE_URL=postgres://user:password@host/db cargo run -p llm-tools-examples --bin workers
//! ```
//!
//! The model is a stand-in that works offline: it asks for the weather of the city the user
//! names, then answers with what the tool said.
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::sync::Arc;
use std::time::Duration;

use llm_tools_core::store::{PostgresStore, SqliteStore, Store, Worker};
use llm_tools_core::{
    BoxFuture, Chat, Message, Provider, ProviderError, Request, Response, Role, ToolCall, tool,
};
use llm_tools_examples::print_transcript;

/// Gets the weather for a city
///
/// # Arguments
/// * `city` - The city
#[tool]
async fn weather(city: String) -> String {
    let degrees = 10 + city.len() % 15;
    format!("{degrees}°C and clear in {city}")
}

/// Asks for the weather of the last word of the user's message, then repeats the tool's answer.
struct WeatherModel;

impl Provider for WeatherModel {
    fn protocol(&self) -> &str {
        "offline"
    }

    fn model(&self) -> &str {
        "weather-stand-in"
    }

    fn complete<'a>(
        &'a self,
        request: Request<'a>,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        let message = match request.messages.last() {
            Some(last) if last.role == Role::Tool => {
                Message::assistant(format!("{}.", last.text()))
            }
            Some(last) => {
                let text = last.text();
                let city = text
                    .trim_end_matches('?')
                    .rsplit(' ')
                    .next()
                    .unwrap_or("Berlin");
                let arguments = serde_json::json!({ "city": city }).to_string();
                Message::assistant_with_calls(
                    "",
                    vec![ToolCall::new("call_1", "weather", arguments)],
                )
            }
            None => Message::assistant("Ask me about the weather."),
        };
        Box::pin(async move { Ok(Response::new(message)) })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sqlite_file = None;
    let store: Arc<dyn Store> = match std::env::var("DATABASE_URL") {
        Ok(url) => {
            let store = PostgresStore::connect(&url).await?;
            println!("Chats are stored in {}", store.location());
            Arc::new(store)
        }
        Err(_) => {
            let path =
                std::env::temp_dir().join(format!("llm-tools-workers-{}.db", std::process::id()));
            println!("Chats are stored in {}", path.display());
            let store = SqliteStore::open(&path).await?;
            sqlite_file = Some(path);
            Arc::new(store)
        }
    };
    let run = std::process::id();

    // The web side: one chat per user, each message stored for a worker to answer.
    let questions = [
        "Weather in Lisbon?",
        "Weather in Oslo?",
        "Weather in Nairobi?",
        "Weather in Lima?",
    ];
    let mut ids = Vec::new();
    for (n, question) in questions.iter().enumerate() {
        let id = format!("user-{n}-{run}");
        let mut chat = Chat::create(store.clone(), id.as_str(), WeatherModel).await?;
        chat.enqueue(*question).await?;
        ids.push(id);
    }
    println!("{} messages enqueued; two workers answer them.", ids.len());

    // The worker side: the same code in every worker process.
    let all_answered = {
        let (store, ids) = (store.clone(), ids.clone());
        async move {
            loop {
                let mut due = 0;
                for id in &ids {
                    due +=
                        usize::from(store.load_chat(id).await.is_ok_and(|r| r.wake_at.is_some()));
                }
                if due == 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let workers: Vec<Worker> = (0..2)
        .map(|_| {
            Worker::new(store.clone(), WeatherModel)
                .with_concurrency(2)
                .with_idle_poll(Duration::from_millis(20))
                .with_setup(|_chat_id, chat| {
                    chat.with_tools(Weather)?;
                    Ok(())
                })
        })
        .collect();
    let shutdown = futures::FutureExt::shared(all_answered);
    let reports =
        futures::future::join_all(workers.iter().map(|w| w.run_until(shutdown.clone()))).await;
    for (n, report) in reports.iter().enumerate() {
        println!("worker {n}: answered {} chat(s)", report.done);
    }

    for id in &ids {
        let chat = Chat::load(store.clone(), id.as_str(), WeatherModel).await?;
        println!("{id}:");
        print_transcript(chat.messages());
    }
    drop(store);
    if let Some(path) = sqlite_file {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    Ok(())
}
