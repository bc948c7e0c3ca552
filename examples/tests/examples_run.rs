//! Every offline example runs as its own process, succeeds, and shows what it promises.
#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

use std::process::Command;

fn run(program: &str) -> String {
    let output = Command::new(program).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn shows(stdout: &str, expected: &[&str]) {
    for line in expected {
        assert!(stdout.contains(line), "expected {line:?} in:\n{stdout}");
    }
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
