//! The MCP conformance suite's client scenarios (`@modelcontextprotocol/conformance`, run on
//! Node 22 from npm) against `llm-tools-mcp`: the runner starts each scenario's server and runs
//! `mcp_conformance_client` (this crate's binary) on it, then grades what the client did. The
//! stable runner's scenarios at 2025-11-25, and the alpha runner's at 2026-07-28. The `auth/*`
//! scenarios run in `llm-tools-mcp/tests/oauth.rs`: they need the crate's `auth` feature, which
//! this test crate does not turn on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::{Path, PathBuf};
use std::process::Command;

use llm_tools_tests::mcp;
use serde_json::Value;

/// What one scenario's checks came to: the runner grades a check `SUCCESS`, `FAILURE` (the
/// client broke a MUST) or `WARNING` (a SHOULD, or a timing outside the runner's tolerance: a
/// reconnection measured late on a loaded machine), and exits with 1 on either of the last two.
#[derive(Debug, Default)]
struct Graded {
    passed: usize,
    failed: Vec<String>,
    warned: Vec<String>,
}

fn run_scenario(
    node: &Path,
    runner: &Path,
    scenario: &str,
    spec_version: Option<&str>,
    out: &Path,
) -> Result<Graded, String> {
    let client = env!("CARGO_BIN_EXE_mcp_conformance_client");
    let dir = out.join(scenario.replace('/', "_"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut command = Command::new(node.join("node"));
    command
        .arg(runner)
        .args(["client", "--command", client, "--scenario", scenario, "-o"])
        .arg(&dir)
        .env("PATH", path_with(node));
    if let Some(version) = spec_version {
        command.args(["--spec-version", version]);
    }
    let output = command
        .output()
        .map_err(|e| format!("the runner could not start: {e}"))?;
    let checks = std::fs::read_dir(&dir)
        .map_err(|e| format!("no results in {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path().join("checks.json"))
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "{scenario}: no checks.json; runner said: {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })?;
    let checks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(checks).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let mut graded = Graded::default();
    for check in &checks {
        match check["status"].as_str() {
            Some("SUCCESS") => graded.passed += 1,
            Some("FAILURE") => graded.failed.push(format!(
                "{}: {}",
                check["id"].as_str().unwrap_or("?"),
                check["errorMessage"].as_str().unwrap_or("")
            )),
            Some("WARNING") => graded.warned.push(format!(
                "{}: {} {}",
                check["id"].as_str().unwrap_or("?"),
                check["errorMessage"].as_str().unwrap_or(""),
                check["details"]
            )),
            _ => {}
        }
    }
    if graded.failed.is_empty() && graded.warned.is_empty() && !output.status.success() {
        graded.failed.push(format!(
            "the runner failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    Ok(graded)
}

fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "llm-tools-conformance-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_suite(version: &str, spec_version: Option<&str>, scenarios: &[&str]) {
    let Some(node) = mcp::or_skip("mcp_conformance", mcp::node_22()) else {
        return;
    };
    let Some(runner) = mcp::or_skip("mcp_conformance", mcp::conformance_runner(version)) else {
        return;
    };
    let out = out_dir(version);
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for scenario in scenarios {
        // A scenario with warnings runs once more: what the runner times (a reconnection's
        // delay) moves with the machine's load, and a test's verdict must not. Warnings in
        // both runs fail it, as a client that always warns falls short of a SHOULD.
        let mut graded = run_scenario(&node, &runner, scenario, spec_version, &out);
        if let Ok(first) = &graded
            && first.failed.is_empty()
            && !first.warned.is_empty()
        {
            eprintln!(
                "{scenario}: warnings, run again: {}",
                first.warned.join("; ")
            );
            graded = run_scenario(&node, &runner, scenario, spec_version, &out);
        }
        match graded {
            Ok(graded) => {
                report.push(format!("{scenario}: {} passed", graded.passed));
                if graded.passed == 0 {
                    failures.push(format!("{scenario}: no check passed"));
                }
                failures.extend(graded.failed.iter().map(|f| format!("{scenario}: {f}")));
                failures.extend(
                    graded
                        .warned
                        .iter()
                        .map(|w| format!("{scenario}: warned twice: {w}")),
                );
            }
            Err(why) => failures.push(why),
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    eprintln!("conformance {version}:\n{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_stable_client_scenarios_pass_at_2025_11_25() {
    run_suite(
        mcp::CONFORMANCE_VERSION,
        None,
        &[
            "initialize",
            "tools_call",
            "elicitation-sep1034-client-defaults",
            "sse-retry",
        ],
    );
}

#[test]
fn the_2026_07_28_client_scenarios_pass() {
    run_suite(
        mcp::CONFORMANCE_ALPHA_VERSION,
        Some("2026-07-28"),
        &[
            "tools_call",
            "request-metadata",
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
        ],
    );
}
