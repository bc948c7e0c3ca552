//! Runs the benchmark: starts `e2e-mock`, runs `e2e-floor` and `e2e-llm-tools` in turn several
//! times (non-streaming, then streaming), and prints a Markdown table of CPU and wall time per
//! round, peak RSS and request bytes per conversation: the median over the runs, the spread
//! (lowest to highest) and the ratio llm-tools / floor.
//!
//! ```sh
//! e2e-run [--runs 15] [--conversations 200] [--warmup 20] [--only plain|stream] [--instructions]
//! ```
//!
//! CPU time on a shared machine moves with the load; `--instructions` adds what does not: the
//! instructions each client executes per round, counted by valgrind's callgrind (the difference
//! between a run of 60 conversations and one of 10, so start-up cancels out; user space only,
//! the kernel's share is the same for both clients: same system calls).
//!
//! The programs are looked for next to this one (`target/release/`).
#![allow(clippy::print_stdout)] // the table is the program's output

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};

use e2e_bench::measure::Report;

struct Settings {
    runs: usize,
    conversations: u64,
    warmup: u64,
    modes: Vec<bool>,
    instructions: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e-run: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn settings() -> Result<Settings, String> {
    let mut s = Settings {
        runs: 15,
        conversations: 200,
        warmup: 20,
        modes: vec![false, true],
        instructions: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{arg}` needs a value"));
        match arg.as_str() {
            "--runs" => s.runs = number(&value()?)? as usize,
            "--conversations" => s.conversations = number(&value()?)?,
            "--warmup" => s.warmup = number(&value()?)?,
            "--instructions" => s.instructions = true,
            "--only" => {
                s.modes = match value()?.as_str() {
                    "plain" => vec![false],
                    "stream" => vec![true],
                    other => return Err(format!("`--only` takes plain or stream, not `{other}`")),
                }
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if s.runs == 0 || s.conversations == 0 {
        return Err("`--runs` and `--conversations` must be at least 1".into());
    }
    Ok(s)
}

fn number(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a whole number"))
}

/// The mock server, stopped when dropped.
struct Mock {
    child: Child,
    url: String,
}

impl Mock {
    fn start(dir: &Path) -> Result<Self, String> {
        let mut child = Command::new(dir.join("e2e-mock"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start e2e-mock from {}: {e}", dir.display()))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out)
                .read_line(&mut line)
                .map_err(|e| format!("cannot read the mock's address: {e}"))?;
        }
        let url = line.trim().to_owned();
        if !url.starts_with("http://") {
            let _ = child.kill();
            return Err(format!("the mock did not print its address (got {url:?})"));
        }
        Ok(Self { child, url })
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn run_client(
    dir: &Path,
    name: &str,
    url: &str,
    s: &Settings,
    stream: bool,
) -> Result<Report, String> {
    let mut command = Command::new(dir.join(name));
    command
        .arg("--url")
        .arg(url)
        .arg("--conversations")
        .arg(s.conversations.to_string())
        .arg("--warmup")
        .arg(s.warmup.to_string());
    if stream {
        command.arg("--stream");
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{name} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("{name} printed no report ({e}): {stdout}"))
}

fn run() -> Result<(), String> {
    let s = settings()?;
    let dir: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or("cannot find the directory of e2e-run")?;
    let mock = Mock::start(&dir)?;
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "{} runs × {} conversations (after {} warm-up) × {} rounds of 3 tool calls, 20 tools; {cores} cores",
        s.runs,
        s.conversations,
        s.warmup,
        e2e_bench::scenario::ROUNDS
    );
    let mut tables = Vec::new();
    for &stream in &s.modes {
        let mode = if stream { "streaming" } else { "non-streaming" };
        let load_before = load();
        let mut floor = Vec::new();
        let mut ours = Vec::new();
        for run in 0..s.runs {
            // Alternate who goes first, so a change of load hits both alike.
            let order: [(&str, bool); 2] = if run % 2 == 0 {
                [("e2e-floor", true), ("e2e-llm-tools", false)]
            } else {
                [("e2e-llm-tools", false), ("e2e-floor", true)]
            };
            for (name, is_floor) in order {
                let report = run_client(&dir, name, &mock.url, &s, stream)?;
                println!(
                    "  {mode} run {}: {:<9} cpu {:>7.1} µs/round  wall {:>7.1} µs/round  rss {:>6} KiB  {:>8.0} B/conversation",
                    run + 1,
                    report.client,
                    report.cpu_us_per_round(),
                    report.wall_us_per_round(),
                    report.peak_rss_kib,
                    report.bytes_per_conversation()
                );
                if is_floor {
                    floor.push(report);
                } else {
                    ours.push(report);
                }
            }
        }
        tables.push((mode, load_before, load(), floor, ours));
    }
    println!();
    println!("| scenario | measure | floor | llm-tools | llm-tools / floor | paired |");
    println!("|---|---|---:|---:|---:|---:|");
    for (mode, before, after, floor, ours) in &tables {
        let rows: [Row; 4] = [
            ("CPU / round", Report::cpu_us_per_round, "µs", 1),
            ("wall / round", Report::wall_us_per_round, "µs", 1),
            ("peak RSS", |r| r.peak_rss_kib as f64 / 1024.0, "MiB", 1),
            (
                "request bytes / conversation",
                Report::bytes_per_conversation,
                "B",
                0,
            ),
        ];
        for (label, get, unit, digits) in rows {
            let f = Summary::of(floor, get);
            let o = Summary::of(ours, get);
            // Each llm-tools run over the floor run next to it: the two share the load of
            // the moment, so this moves less than the ratio of the medians.
            let paired: Vec<f64> = ours
                .iter()
                .zip(floor.iter())
                .map(|(o, f)| get(o) / get(f))
                .collect();
            println!(
                "| {mode} | {label} | {} | {} | {:.2}× | {:.2}× |",
                f.show(unit, digits),
                o.show(unit, digits),
                o.median / f.median,
                median(paired)
            );
        }
        println!(
            "| {mode} | load average (1, 5, 15 min) | before: {before} | after: {after} | | |"
        );
    }
    println!();
    println!(
        "median (lowest–highest) of {} runs each; paired: the median of each llm-tools run over the floor run next to it",
        s.runs
    );
    if s.instructions {
        println!();
        println!(
            "| scenario | instructions / round (callgrind) | floor | llm-tools | llm-tools / floor |"
        );
        println!("|---|---|---:|---:|---:|");
        for &stream in &s.modes {
            let mode = if stream { "streaming" } else { "non-streaming" };
            let floor = instructions_per_round(&dir, "e2e-floor", &mock.url, stream)?;
            let ours = instructions_per_round(&dir, "e2e-llm-tools", &mock.url, stream)?;
            println!(
                "| {mode} | user space | {:.0} k | {:.0} k | {:.2}× |",
                floor / 1000.0,
                ours / 1000.0,
                ours / floor
            );
        }
    }
    Ok(())
}

/// User-space instructions per round of one client, from two callgrind runs (10 and 60
/// conversations after 2 warm-up ones): the difference is the work of 50 conversations.
fn instructions_per_round(dir: &Path, name: &str, url: &str, stream: bool) -> Result<f64, String> {
    let count = |conversations: u64| -> Result<f64, String> {
        let mut command = Command::new("valgrind");
        command
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(dir.join(name))
            .args(["--url", url, "--warmup", "2", "--conversations"])
            .arg(conversations.to_string());
        if stream {
            command.arg("--stream");
        }
        let output = command
            .output()
            .map_err(|e| format!("cannot run valgrind (is it installed?): {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!("{name} under callgrind failed:\n{stderr}"));
        }
        stderr
            .lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|n| n.trim().replace(',', "").parse::<f64>().ok())
            .ok_or_else(|| format!("callgrind printed no instruction count:\n{stderr}"))
    };
    let (few, many) = (count(10)?, count(60)?);
    Ok((many - few) / (50.0 * e2e_bench::scenario::ROUNDS as f64))
}

/// A line of the table: label, the measure, its unit, decimals shown.
type Row = (&'static str, fn(&Report) -> f64, &'static str, usize);

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

struct Summary {
    median: f64,
    low: f64,
    high: f64,
}

impl Summary {
    fn of(reports: &[Report], get: fn(&Report) -> f64) -> Self {
        let mut values: Vec<f64> = reports.iter().map(get).collect();
        values.sort_by(f64::total_cmp);
        Self {
            median: median(values.clone()),
            low: values.first().copied().unwrap_or(f64::NAN),
            high: values.last().copied().unwrap_or(f64::NAN),
        }
    }

    fn show(&self, unit: &str, digits: usize) -> String {
        if (self.high - self.low).abs() < f64::EPSILON {
            format!("{:.digits$} {unit}", self.median)
        } else {
            format!(
                "{:.digits$} {unit} ({:.digits$}–{:.digits$})",
                self.median, self.low, self.high
            )
        }
    }
}
