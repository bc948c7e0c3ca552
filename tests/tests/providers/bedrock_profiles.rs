//! Bedrock finds its credentials and region in the AWS shared files when the environment
//! variables are not set: the profile `AWS_PROFILE` (else `default`) of `~/.aws/credentials`
//! and `~/.aws/config` (or the files `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`
//! name), and the variables still win over the files.
//!
//! A test's environment cannot be changed safely (other tests read it from other threads), so
//! each case runs this test binary again as a child process with the environment it needs; the
//! child prints the configuration's `Debug` (which shows the access key id and the region, and
//! never a secret) for the parent to check.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)] // test helpers

use std::process::Command;

use llm_tools_providers::bedrock::BedrockConfig;

const CHILD: &str = "LLM_TOOLS_BEDROCK_PROFILE_CHILD";

const VARIABLES: [&str; 9] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_BEARER_TOKEN_BEDROCK",
];

/// The child's side: the configuration as Bedrock builds it from the environment.
#[test]
#[ignore = "run by the other tests of this file in a child process with its own environment"]
fn child_prints_the_configuration() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "run as a child of the other tests"
    );
    println!(
        "CONFIG {:?}",
        BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
    );
}

/// A test's full name for the child's `--exact` filter: `<module>::<test>`, this file being a
/// module of its area's test binary.
fn full_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_owned(),
    }
}

/// The configuration a child with `home` as its home and `env` set prints.
fn configuration(home: &std::path::Path, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .arg(full_name("child_prints_the_configuration"))
        .args(["--exact", "--ignored", "--nocapture"])
        .env(CHILD, "1")
        .env("HOME", home);
    for variable in VARIABLES {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG "))
        .unwrap_or_else(|| panic!("the child printed no configuration: {stdout}"))
        .to_owned()
}

fn home_with_profiles() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret-1\n\n\
         [work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = work-secret-2\naws_session_token = work-token-3\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        "[default]\nregion = eu-west-3\n\n[profile work]\nregion = us-west-2\n",
    )
    .unwrap();
    home
}

fn assert_no_secret(shown: &str) {
    for secret in [
        "default-secret-1",
        "work-secret-2",
        "work-token-3",
        "env-secret-4",
    ] {
        assert!(!shown.contains(secret), "a secret in: {shown}");
    }
}

#[test]
fn the_default_profile_gives_keys_and_region() {
    let home = home_with_profiles();
    let shown = configuration(home.path(), &[]);
    assert!(shown.contains("AKIDDEFAULT"), "{shown}");
    assert!(shown.contains("eu-west-3"), "{shown}");
    assert_no_secret(&shown);
}

#[test]
fn aws_profile_picks_another_profile() {
    let home = home_with_profiles();
    let shown = configuration(home.path(), &[("AWS_PROFILE", "work")]);
    assert!(shown.contains("AKIDWORK"), "{shown}");
    assert!(shown.contains("us-west-2"), "{shown}");
    assert_no_secret(&shown);
}

#[test]
fn the_variables_win_over_the_files() {
    let home = home_with_profiles();
    let shown = configuration(
        home.path(),
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "env-secret-4"),
            ("AWS_REGION", "ap-south-1"),
        ],
    );
    assert!(
        shown.contains("AKIDENV") && !shown.contains("AKIDDEFAULT"),
        "{shown}"
    );
    assert!(
        shown.contains("ap-south-1") && !shown.contains("eu-west-3"),
        "{shown}"
    );
    assert_no_secret(&shown);
}

#[test]
fn the_files_can_be_named_by_variables() {
    let home = home_with_profiles();
    let elsewhere = tempfile::tempdir().unwrap();
    let credentials = elsewhere.path().join("creds");
    std::fs::write(
        &credentials,
        "[default]\naws_access_key_id = AKIDNAMED\naws_secret_access_key = default-secret-1\n",
    )
    .unwrap();
    let shown = configuration(
        home.path(),
        &[("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap())],
    );
    assert!(shown.contains("AKIDNAMED"), "{shown}");
    assert_no_secret(&shown);
}

#[test]
fn without_variables_or_files_there_are_no_credentials() {
    let empty = tempfile::tempdir().unwrap();
    let shown = configuration(empty.path(), &[]);
    assert!(shown.contains("credentials: None"), "{shown}");
    assert!(shown.contains("us-east-1"), "{shown}");
}
