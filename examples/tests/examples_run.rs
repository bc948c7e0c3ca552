//! Every offline example runs as its own process, succeeds, and shows what it promises.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use std::process::Command;

/// The variables that would make an example talk to a live provider or print debug output.
const LIVE_AND_DEBUG: [&str; 7] = [
    "DATABASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "LLM_TOOLS_DEBUG",
    "RUST_LOG",
];

/// Runs an example offline with `env` added, and returns its stdout and stderr.
fn run_with(program: &str, env: &[(&str, &str)]) -> (String, String) {
    let mut command = Command::new(program);
    for var in LIVE_AND_DEBUG {
        command.env_remove(var);
    }
    let output = command.envs(env.iter().copied()).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{program} failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

fn run(program: &str) -> String {
    run_with(program, &[]).0
}

fn shows(stdout: &str, expected: &[&str]) {
    for line in expected {
        assert!(stdout.contains(line), "expected {line:?} in:\n{stdout}");
    }
}

#[test]
fn quickstart_replays_its_recording_without_a_key() {
    let (stdout, stderr) = run_with(env!("CARGO_BIN_EXE_quickstart"), &[]);
    shows(
        &stdout,
        &[
            "No API key is set: replaying a recorded OpenAI conversation",
            r#"[tool call] weather({"latitude":"52.5200","longitude":"13.4050"})"#,
            "[tool result] Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h",
        ],
    );
    assert!(stderr.is_empty(), "no debug output unless asked:\n{stderr}");
}

#[test]
fn llm_tools_debug_prints_requests_and_tool_traffic_without_the_key() {
    let (_, stderr) = run_with(
        env!("CARGO_BIN_EXE_quickstart"),
        &[("LLM_TOOLS_DEBUG", "1")],
    );
    shows(
        &stderr,
        &[
            "sending a request",
            r#""name":"weather""#,
            "the provider answered",
            "calling the tool",
            "the tool answered",
            "the model answered",
        ],
    );
    assert!(
        !stderr.contains("offline-replay"),
        "the API key leaked:\n{stderr}"
    );
}

#[test]
fn tools() {
    shows(
        &run(env!("CARGO_BIN_EXE_tools")),
        &[
            "duplicate tool name `weather`",
            "[result call_3] \"Ada Lovelace\"",
            "There is no tool `wether`. Tools with similar names: `weather`",
            "After clear_tools: 0 tool(s)",
        ],
    );
}

#[test]
fn namespaces() {
    shows(
        &run(env!("CARGO_BIN_EXE_namespaces")),
        &[
            r#"Registered: ["crm_lookup", "customer_count", "billing_lookup"]"#,
            "[result c2] invoice 7: 42 EUR, paid",
            r#"Tool choice per request: [Auto, Auto, Tool("crm_lookup"), Auto]"#,
        ],
    );
}

#[test]
fn options() {
    shows(
        &run(env!("CARGO_BIN_EXE_options")),
        &[
            "at most 3 tool calls of one answer run",
            "[error call_6] Deleting files is not allowed in this chat.",
            "[result call_7] <html>https://insecure.example</html>",
            "the chat's round budget",
            "After `complete`: Finally done.",
        ],
    );
}

#[test]
fn driving_the_loop() {
    shows(
        &run(env!("CARGO_BIN_EXE_driving_the_loop")),
        &[
            "step 3: the model called tools and they ran",
            "step 4: the model answered: You rolled 4, 4 and 4.",
            "Rolling once more… [dice_roll({})] → 4 Another 4!",
        ],
    );
}

#[test]
fn long_running() {
    shows(
        &run(env!("CARGO_BIN_EXE_long_running")),
        &[
            "[result call_1] report for Q3: revenue up 12%",
            "[error call_2] The call ran longer than its limit of 200ms and was cancelled.",
        ],
    );
}

#[test]
fn pausing() {
    shows(
        &run(env!("CARGO_BIN_EXE_pausing")),
        &[
            "still paused: Deploying",
            "[result call_1] pricing is live (run 1)",
            "[error call_3] The user denied the `drop_table` tool call: users holds customer data",
            "[error call_4] This call was cancelled before it finished.",
        ],
    );
}

#[test]
fn asking_the_user() {
    shows(
        &run(env!("CARGO_BIN_EXE_asking_the_user")),
        &[
            "missing required field(s): answer",
            "[result call_1] The team says: eu-west-1",
            "[result call_2] Nobody answered",
            "input required: Anyone?",
        ],
    );
}

#[test]
fn error_handling() {
    shows(
        &run(env!("CARGO_BIN_EXE_error_handling")),
        &[
            "[error c1] Location too short",
            "argument `location`: invalid type: integer `42`",
            "were not valid JSON",
            "`read_note` failed (call_6)",
            "after the failure: I couldn't read your note",
        ],
    );
}

#[test]
fn bedrock_streams_two_signed_turns_with_tool_calls() {
    shows(
        &run(env!("CARGO_BIN_EXE_bedrock")),
        &[
            r#"[tool call] weather({"latitude":"52.5200","longitude":"13.4050"})"#,
            r#"[tool call] weather({"latitude":"48.8575","longitude":"2.3514"})"#,
            "[tool result] Current weather at 48.8575, 2.3514: 15°C, Wind: 10 km/h",
            "The current weather in Paris (48.8575, 2.3514) is **15°C**",
            "4 of 4 requests SigV4-signed",
        ],
    );
}

#[test]
fn more_providers_runs_cohere_ollama_and_vertex_offline() {
    shows(
        &run(env!("CARGO_BIN_EXE_more_providers")),
        &[
            "Cohere (replayed from",
            "The current weather in Berlin is 15°C with winds of 10 km/h.",
            "(1 citation of the tool's result)",
            "[thinking] The user wants the weather; I'll call the tool.",
            "It is 15°C in Berlin, with wind at 10 km/h.",
            r#"{"name":"John","age":30}"#,
            "(a token exchange at /token, then gemini-3-flash-preview:generateContent with a bearer token)",
        ],
    );
}

#[test]
fn three_providers() {
    shows(
        &run(env!("CARGO_BIN_EXE_three_providers")),
        &[
            "OpenAI (openai-responses, replayed from",
            "Anthropic (anthropic, replayed from",
            "Gemini (gemini, replayed from",
            r#"[tool call] weather({"latitude":"52.5200","longitude":"13.4050"})"#,
            "[tool result] Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h",
            "The weather in Berlin is 15°C, with wind at 10 km/h.",
            "The tools on every dialect: portable.",
        ],
    );
}

#[test]
fn durable_pauses_in_one_process_and_finishes_in_the_next() {
    let dir = std::env::temp_dir().join(format!(
        "llm-tools-durable-example-test-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("chats.db");
    let program = env!("CARGO_BIN_EXE_durable");
    let first = Command::new(program).arg(&db).output().unwrap();
    let first = String::from_utf8_lossy(&first.stdout).into_owned();
    shows(
        &first,
        &[
            "> Drop the sessions table",
            "Run the program again to approve it.",
        ],
    );
    let second = Command::new(program).arg(&db).output().unwrap();
    let second = String::from_utf8_lossy(&second.stdout).into_owned();
    shows(
        &second,
        &[
            r#"Loaded `support-42`: drop_table({"table":"sessions"}) waits for an approval; approving."#,
            "dropped sessions (call call_1, attempt 1)",
            "Answered: Dropped the sessions table.",
        ],
    );
    let third = Command::new(program).arg(&db).output().unwrap();
    shows(
        &String::from_utf8_lossy(&third.stdout),
        &["is finished; starting over.", "Run the program again"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn workers_answer_what_the_web_side_enqueued() {
    let (stdout, _) = run_with(env!("CARGO_BIN_EXE_workers"), &[]);
    shows(
        &stdout,
        &[
            "4 messages enqueued; two workers answer them.",
            "[call call_1] weather({\"city\":\"Lisbon\"})",
            "16°C and clear in Lisbon.",
            "17°C and clear in Nairobi.",
        ],
    );
    let answered: usize = stdout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("worker ")
                .and_then(|l| l.split("answered ").nth(1))
        })
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(answered, 4, "{stdout}");
}

#[test]
fn structured_output_decodes_a_typed_answer_then_answers_in_prose() {
    let stdout = run(env!("CARGO_BIN_EXE_structured_output"));
    shows(
        &stdout,
        &[
            "No ANTHROPIC_API_KEY is set: replaying a recorded conversation.",
            "Bob is 30 years old",
            "# Ruby",
        ],
    );
}

#[test]
fn provider_tools_shows_the_search_its_citations_and_the_follow_up() {
    let stdout = run(env!("CARGO_BIN_EXE_provider_tools"));
    shows(
        &stdout,
        &[
            "No ANTHROPIC_API_KEY is set: replaying a recorded conversation.",
            r#"[web_search ran on the provider] {"query":"latest stable Ruby version 2026"}"#,
            "The current stable version is 4.0.6.",
            "  cites: ",
            "(1 provider tool request(s),",
            "> Thanks. Now just say OK.\nOK.",
        ],
    );
}

#[test]
fn serving_securely_refuses_a_client_without_the_token_and_keeps_an_unapproved_note() {
    shows(
        &run(env!("CARGO_BIN_EXE_serving_securely")),
        &[
            "a client without the token is refused",
            r#"resource_metadata="https://notes.example.com/.well-known/oauth-protected-resource""#,
            "The tool `delete` wants to run with these arguments:",
            "[result call_2] deleted note 2",
            "[error call_3] the call to `delete` was denied: the user did not approve it",
            r#"notes left: ["1: Q3 plan"]"#,
        ],
    );
}
