//! Both clients play the whole scenario against the real mock server, in their own processes,
//! streaming and not, and their self-checks pass (tool executions, requests, tools declared,
//! every request as the scenario says). No timing is asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

struct Mock(Child, String);

impl Mock {
    fn start() -> Mock {
        let mut child = Command::new(env!("CARGO_BIN_EXE_e2e-mock"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("the mock starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line}");
        Mock(child, line.trim().to_owned())
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(client: &str, url: &str, stream: bool) -> e2e_bench::measure::Report {
    let mut command = Command::new(client);
    command.args(["--url", url, "--conversations", "3", "--warmup", "1"]);
    if stream {
        command.arg("--stream");
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{client} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn both_clients_play_the_scenario_and_send_the_same_requests() {
    let mock = Mock::start();
    for stream in [false, true] {
        let floor = run(env!("CARGO_BIN_EXE_e2e-floor"), &mock.1, stream);
        let ours = run(env!("CARGO_BIN_EXE_e2e-llm-tools"), &mock.1, stream);
        for r in [&floor, &ours] {
            assert_eq!(r.stream, stream);
            assert_eq!(r.conversations, 3);
            assert_eq!(r.rounds, 30);
            assert_eq!(r.requests, 33);
            assert!(r.peak_rss_kib > 0 && r.cpu_ns > 0);
        }
        // The mock accepts only the scenario's requests, so the bodies can differ only in how
        // an empty assistant text is written (`null` by the floor, `""` by the provider).
        let per_conversation = |r: &e2e_bench::measure::Report| r.request_bytes / 3;
        assert!(
            per_conversation(&ours) <= per_conversation(&floor),
            "llm-tools sends {} bytes per conversation, the floor {}",
            per_conversation(&ours),
            per_conversation(&floor)
        );
    }
}

#[test]
fn a_request_off_the_scenario_is_rejected_and_counted() {
    let mock = Mock::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let answer = http
            .post(format!("{}/v1/chat/completions", mock.1))
            .body(r#"{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"tools":[],"stream":false}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400);
        let stats = e2e_bench::stats::fetch(&http, &mock.1).await.unwrap();
        assert_eq!((stats.requests, stats.invalid), (1, 1));
        assert!(stats.first_error.unwrap().contains("tool definitions differ"));
    });
}
