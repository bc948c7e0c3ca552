//! A real PostgreSQL server for the tests: Debian's `postgresql` package (installed with
//! `apt-get` when it is missing and the tests run as root), a cluster made with `initdb` in a
//! temporary folder, run as a non-root user (`postgres` when the tests run as root) on a free
//! loopback port, with password authentication (and TLS, when started with it), and stopped
//! when the value is dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The superuser's password of the test cluster.
pub const PASSWORD: &str = "llm-tools-test-password";

/// The role that logs in with a client certificate on a server started with a client CA
/// ([`PostgresServer::start_with_tls`]); the test creates it.
pub const CERTIFICATE_USER: &str = "llm_tools_cert";

/// The TLS files of a test server (PEM text).
#[derive(Clone, Debug)]
pub struct ServerTls {
    /// The server's certificate (its chain, leaf first).
    pub certificate_pem: String,
    /// The server's private key.
    pub key_pem: String,
    /// The CA that signs client certificates, when [`CERTIFICATE_USER`] logs in with one.
    pub client_ca_pem: Option<String>,
}

/// A running test server.
#[derive(Debug)]
pub struct PostgresServer {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    run_as: Option<String>,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The `bin` folder of the newest PostgreSQL Debian's packages installed.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn install() -> Result<(), String> {
    if !is_root() {
        return Err("PostgreSQL is not installed, and installing it needs root (apt-get install postgresql)".into());
    }
    for args in [
        &["update", "-q"][..],
        &["install", "-y", "-q", "postgresql"][..],
    ] {
        let status = Command::new("apt-get")
            .args(args)
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

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

impl PostgresServer {
    /// Starts a server, installing PostgreSQL first when it is missing. `Err` says why none can
    /// run here.
    pub fn start() -> Result<Self, String> {
        let server = Self::init()?;
        server.start_again()?;
        Ok(server)
    }

    /// Starts a server with TLS on (`ssl = on` with the given certificate and key); with a
    /// client CA, the role [`CERTIFICATE_USER`] must log in over TLS with a certificate that
    /// CA signed, named by its common name (`hostssl … cert`). Every other role logs in with
    /// its password, over TLS or not.
    pub fn start_with_tls(tls: &ServerTls) -> Result<Self, String> {
        let server = Self::init()?;
        let dir = server.dir.path();
        let mut files = vec![
            ("server.crt", tls.certificate_pem.as_str()),
            ("server.key", tls.key_pem.as_str()),
        ];
        if let Some(ca) = &tls.client_ca_pem {
            files.push(("client-ca.crt", ca.as_str()));
        }
        for (name, text) in &files {
            let path = dir.join(name);
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| e.to_string())?;
            server.give_to_server(&path)?;
        }
        let mut conf = format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            dir.join("server.crt").display(),
            dir.join("server.key").display()
        );
        if tls.client_ca_pem.is_some() {
            conf.push_str(&format!(
                "ssl_ca_file = '{}'\n",
                dir.join("client-ca.crt").display()
            ));
            let hba_path = Path::new(&server.data()).join("pg_hba.conf");
            let hba = std::fs::read_to_string(&hba_path).map_err(|e| e.to_string())?;
            let hba = format!(
                "hostssl all {CERTIFICATE_USER} 127.0.0.1/32 cert\nhost all {CERTIFICATE_USER} 127.0.0.1/32 reject\n{hba}"
            );
            std::fs::write(&hba_path, hba).map_err(|e| e.to_string())?;
        }
        let conf_path = Path::new(&server.data()).join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path).map_err(|e| e.to_string())?;
        text.push_str(&conf);
        std::fs::write(&conf_path, text).map_err(|e| e.to_string())?;
        server.start_again()?;
        Ok(server)
    }

    fn give_to_server(&self, path: &Path) -> Result<(), String> {
        if let Some(user) = &self.run_as {
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(path)
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("chown to {user} failed"));
            }
        }
        Ok(())
    }

    /// A cluster made with `initdb`, not started.
    fn init() -> Result<Self, String> {
        let bin = match bin_dir() {
            Some(bin) => bin,
            None => {
                install()?;
                bin_dir().ok_or("the postgresql package installed no initdb")?
            }
        };
        let run_as = is_root().then(|| "postgres".to_owned());
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        std::fs::write(dir.path().join("password"), PASSWORD).map_err(|e| e.to_string())?;
        if let Some(user) = &run_as {
            let status = Command::new("chown")
                .args(["-R", &format!("{user}:"), &dir.path().display().to_string()])
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("chown to {user} failed"));
            }
        }
        let server = Self {
            port: free_port()?,
            dir,
            bin,
            run_as,
        };
        let data = server.data();
        let pwfile = server.dir.path().join("password");
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "llm_tools",
                "--pwfile",
                &pwfile.display().to_string(),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(program);
        let mut command = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&path);
                c
            }
            None => Command::new(&path),
        };
        let output = command
            .args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{program} could not run: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// Starts the server (again, after [`stop`](Self::stop)) on the same port and data.
    pub fn start_again(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-w",
                "-t",
                "60",
                "-o",
                &options,
                "start",
            ],
        )
    }

    /// Stops the server (fast shutdown: connections are closed).
    pub fn stop(&self) -> Result<(), String> {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"])
    }

    /// The connection string of the server's `postgres` database.
    pub fn url(&self) -> String {
        format!(
            "postgres://llm_tools:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// The port it listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The folder of its data and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A server for a test, or why there is none: on CI (`CI` set) a missing server fails the
/// test; elsewhere the test says it skipped the PostgreSQL suite and why.
pub fn server_or_skip(suite: &str) -> Option<PostgresServer> {
    or_skip(suite, PostgresServer::start())
}

/// [`server_or_skip`] for a server with TLS on ([`PostgresServer::start_with_tls`]).
pub fn tls_server_or_skip(suite: &str, tls: &ServerTls) -> Option<PostgresServer> {
    or_skip(suite, PostgresServer::start_with_tls(tls))
}

#[allow(clippy::panic)] // failing the test on CI is the point
fn or_skip(suite: &str, started: Result<PostgresServer, String>) -> Option<PostgresServer> {
    match started {
        Ok(server) => Some(server),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{suite}: no PostgreSQL server could start on CI: {why}")
        }
        Err(why) => {
            // Straight to the terminal, past the test harness's capture, so a passing run
            // still says what it skipped.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "skipped: {suite}: no PostgreSQL server could start here: {why}"
            );
            None
        }
    }
}
