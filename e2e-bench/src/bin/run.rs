//! Runs the benchmark: starts `e2e-mock`, runs `e2e-floor` and `e2e-llm-tools` in turn several
//! times (non-streaming, then streaming), and prints a Markdown table of CPU and wall time per
//! round, peak RSS and request bytes per conversation: the median over the runs, the spread
//! (lowest to highest) and the ratio llm-tools / floor.
//!
//! ```sh
//! e2e-run [--runs 15] [--conversations 200] [--warmup 20] [--only plain|stream] [--pin CPU] [--instructions] [--caches] [--syscalls]
//! e2e-run --write-layout DIR
//! ```
//!
//! `--pin CPU` runs the mock and each client on that one CPU (`taskset -c CPU`). Unpinned, the
//! scheduler puts the client and the mock on the same core for some rounds and on two cores
//! for others, and a round whose wake-ups cross cores costs both clients about twice the CPU:
//! the figures move with where each run happened to land. Pinned, every round pays the same
//! (one core, the mock's work between each request and its answer), and runs agree within a
//! few per cent.
//!
//! Each client reports its CPU time (and the kernel's split of it into user and system time),
//! wall time, context switches and peak RSS. CPU time on a shared machine moves with the load;
//! `--instructions` adds what does not, counted by valgrind's callgrind per round (the
//! difference between a run of 60 conversations and one of 10, so start-up cancels out; user
//! space only, the kernel's share is the same for both clients: same system calls):
//! instructions, calls to the allocator, and the code a round runs through (64-byte lines and
//! 4 KiB pages of code executed at least once per round on average), which the instruction
//! cache and TLB have to hold. `--caches` adds what that code costs the processor's front end
//! where no hardware counter can be read (a virtual machine without a PMU, where `perf stat`
//! reports none): valgrind's cachegrind simulates a 32 KiB instruction cache, a 32 KiB data
//! cache and a branch predictor, and counts per round (60 conversations less 10) the
//! instruction cache misses, data cache misses and mispredicted branches (conditional and
//! indirect: calls through a `dyn` pointer, async state machines resuming at their state).
//! Each costs some 10 to 20 cycles on a real core, so these explain CPU time that instructions
//! do not. `--syscalls` adds the system calls each client makes per round,
//! counted by `strace -c -f` the same way (60 conversations less 10).
//!
//! `e2e-run --write-layout DIR` times nothing: it runs each client under callgrind (20
//! conversations of each mode) and writes `DIR/<client>.order`, the client's functions that
//! ran, the most instructions first, for the linker's `--symbol-ordering-file`
//! (`scripts/e2e-bench.sh --ordered` relinks both clients with theirs).
//!
//! The programs are looked for next to this one (`target/release/`).
#![allow(clippy::print_stdout)] // the table is the program's output

use std::collections::HashMap;
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
    caches: bool,
    syscalls: bool,
    /// The CPU the mock and the clients run on (`--pin`); `None`: wherever the scheduler puts
    /// them.
    pin: Option<u64>,
    /// Where `--write-layout` writes each client's function order (then nothing is timed).
    write_layout: Option<PathBuf>,
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
        caches: false,
        syscalls: false,
        pin: None,
        write_layout: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{arg}` needs a value"));
        match arg.as_str() {
            "--runs" => s.runs = number(&value()?)? as usize,
            "--conversations" => s.conversations = number(&value()?)?,
            "--warmup" => s.warmup = number(&value()?)?,
            "--instructions" => s.instructions = true,
            "--caches" => s.caches = true,
            "--syscalls" => s.syscalls = true,
            "--pin" => s.pin = Some(number(&value()?)?),
            "--write-layout" => s.write_layout = Some(PathBuf::from(value()?)),
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
    fn start(dir: &Path, pin: Option<u64>) -> Result<Self, String> {
        let mut child = program(dir, "e2e-mock", pin)
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

/// The command running the program `name` of `dir`, on the one CPU `pin` when given
/// (`taskset -c`, from util-linux).
fn program(dir: &Path, name: &str, pin: Option<u64>) -> Command {
    match pin {
        Some(cpu) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cpu.to_string()).arg(dir.join(name));
            command
        }
        None => Command::new(dir.join(name)),
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
    let mut command = program(dir, name, s.pin);
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
    let mock = Mock::start(&dir, s.pin)?;
    if let Some(out) = &s.write_layout {
        return write_layouts(&dir, &mock.url, out);
    }
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "{} runs × {} conversations (after {} warm-up) × {} rounds of 3 tool calls, 20 tools; {cores} cores; {}",
        s.runs,
        s.conversations,
        s.warmup,
        e2e_bench::scenario::ROUNDS,
        s.pin.map_or_else(
            || "not pinned".to_owned(),
            |cpu| format!("the mock and the clients pinned to CPU {cpu}")
        )
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
        let rows: [Row; 9] = [
            ("CPU / round", Report::cpu_us_per_round, "µs", 1),
            ("user CPU / round", Report::user_us_per_round, "µs", 1),
            ("system CPU / round", Report::system_us_per_round, "µs", 1),
            (
                "context switches / round",
                Report::switches_per_round,
                "",
                2,
            ),
            ("wall / round", Report::wall_us_per_round, "µs", 1),
            ("peak RSS", |r| r.peak_rss_kib as f64 / 1024.0, "MiB", 1),
            (
                "RSS at the end: anonymous (heap, stacks)",
                |r| r.anonymous_rss_kib as f64 / 1024.0,
                "MiB",
                2,
            ),
            (
                "RSS at the end: file-backed (code, data)",
                |r| r.file_rss_kib as f64 / 1024.0,
                "MiB",
                2,
            ),
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
        println!("| scenario | per round (callgrind) | floor | llm-tools | llm-tools / floor |");
        println!("|---|---|---:|---:|---:|");
        for &stream in &s.modes {
            let mode = if stream { "streaming" } else { "non-streaming" };
            let floor = profile_per_round(&dir, "e2e-floor", &mock.url, stream)?;
            let ours = profile_per_round(&dir, "e2e-llm-tools", &mock.url, stream)?;
            let rows = [
                (
                    "instructions (user space)",
                    floor.instructions / 1000.0,
                    ours.instructions / 1000.0,
                    " k",
                ),
                ("allocations", floor.allocations, ours.allocations, ""),
                (
                    "64-byte lines of code run",
                    floor.code_lines as f64,
                    ours.code_lines as f64,
                    "",
                ),
                (
                    "4 KiB pages of code run",
                    floor.code_pages as f64,
                    ours.code_pages as f64,
                    "",
                ),
            ];
            for (label, floor, ours, unit) in rows {
                print_count_row(mode, label, floor, ours, unit);
            }
        }
    }
    if s.caches {
        println!();
        println!(
            "| scenario | per round (cachegrind's simulation) | floor | llm-tools | llm-tools / floor |"
        );
        println!("|---|---|---:|---:|---:|");
        for &stream in &s.modes {
            let mode = if stream { "streaming" } else { "non-streaming" };
            let floor = simulated_per_round(&dir, "e2e-floor", &mock.url, stream)?;
            let ours = simulated_per_round(&dir, "e2e-llm-tools", &mock.url, stream)?;
            for (label, f, o) in [
                (
                    "instruction cache misses",
                    floor.instruction_misses,
                    ours.instruction_misses,
                ),
                ("data cache misses", floor.data_misses, ours.data_misses),
                (
                    "mispredicted conditional branches",
                    floor.conditional_mispredicts,
                    ours.conditional_mispredicts,
                ),
                (
                    "mispredicted indirect branches",
                    floor.indirect_mispredicts,
                    ours.indirect_mispredicts,
                ),
            ] {
                print_count_row(mode, label, f, o, "");
            }
        }
    }
    if s.syscalls {
        println!();
        println!(
            "| scenario | system calls / round (strace) | floor | llm-tools | llm-tools / floor |"
        );
        println!("|---|---|---:|---:|---:|");
        for &stream in &s.modes {
            let mode = if stream { "streaming" } else { "non-streaming" };
            let floor = syscalls_per_round(&dir, "e2e-floor", &mock.url, stream)?;
            let ours = syscalls_per_round(&dir, "e2e-llm-tools", &mock.url, stream)?;
            let mut names: Vec<String> = floor
                .keys()
                .chain(ours.keys())
                .filter(|n| n.as_str() != "total")
                .cloned()
                .collect();
            names.sort();
            names.dedup();
            // `total` last; calls rarer than one in 100 rounds left out.
            names.push("total".to_owned());
            for name in names {
                let (f, o) = (
                    floor.get(&name).copied().unwrap_or(0.0),
                    ours.get(&name).copied().unwrap_or(0.0),
                );
                if f.max(o) >= 0.01 {
                    println!("| {mode} | `{name}` | {f:.2} | {o:.2} | {:.2}× |", o / f);
                }
            }
        }
    }
    Ok(())
}

/// A row of counts per round: the floor's, llm-tools', and their ratio.
fn print_count_row(mode: &str, label: &str, floor: f64, ours: f64, unit: &str) {
    println!(
        "| {mode} | {label} | {floor:.0}{unit} | {ours:.0}{unit} | {:.2}× |",
        ours / floor
    );
}

/// One run of a client: `conversations` timed after 2 warm-up ones, streamed or not.
struct Run<'a> {
    dir: &'a Path,
    name: &'a str,
    url: &'a str,
    conversations: u64,
    stream: bool,
}

/// Runs `run`'s client under `tool` (valgrind, strace), with the arguments `tool_args` gives
/// for the file it writes its report to; that report's text (the file is removed).
fn run_under(
    tool: &str,
    tool_args: impl FnOnce(&Path) -> Vec<std::ffi::OsString>,
    run: Run<'_>,
) -> Result<String, String> {
    let Run {
        dir,
        name,
        url,
        conversations,
        stream,
    } = run;
    let out = std::env::temp_dir().join(format!(
        "e2e-{tool}-{}-{name}-{conversations}-{stream}.out",
        std::process::id()
    ));
    let mut command = Command::new(tool);
    command
        .args(tool_args(&out))
        .arg(dir.join(name))
        .args(["--url", url, "--warmup", "2", "--conversations"])
        .arg(conversations.to_string())
        .stdout(Stdio::null());
    if stream {
        command.arg("--stream");
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run {tool} (is it installed?): {e}"));
    let report = std::fs::read_to_string(&out);
    let _ = std::fs::remove_file(&out);
    let output = output?;
    if !output.status.success() {
        return Err(format!(
            "{name} under {tool} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    report.map_err(|e| format!("cannot read {tool}'s report {}: {e}", out.display()))
}

/// What callgrind counts of one client per round: the difference between a run of 60
/// conversations and one of 10 (after 2 warm-up ones), so start-up cancels out.
struct Profile {
    /// User-space instructions.
    instructions: f64,
    /// Calls to the C allocator (`malloc`, `calloc`, `realloc`, `posix_memalign`,
    /// `aligned_alloc`), which every Rust allocation of both clients goes through.
    allocations: f64,
    /// 64-byte lines of code executed at least once per round on average: the code a round
    /// runs through, which the instruction cache has to hold.
    code_lines: usize,
    /// 4 KiB pages holding those lines, which the instruction TLB has to map.
    code_pages: usize,
}

/// The counts of one callgrind run: total instructions, allocator calls, and how many times
/// each 64-byte line of code ran (the most any of its instructions ran).
struct Counts {
    instructions: f64,
    allocations: f64,
    lines: HashMap<u64, u64>,
}

fn profile_per_round(dir: &Path, name: &str, url: &str, stream: bool) -> Result<Profile, String> {
    let count = |conversations: u64| -> Result<Counts, String> {
        let report = run_under(
            "valgrind",
            |out| {
                vec![
                    "--tool=callgrind".into(),
                    "--dump-instr=yes".into(),
                    "--compress-strings=no".into(),
                    "--compress-pos=no".into(),
                    format!("--callgrind-out-file={}", out.display()).into(),
                ]
            },
            Run {
                dir,
                name,
                url,
                conversations,
                stream,
            },
        )?;
        read_callgrind(&report)
    };
    let (few, many) = (count(10)?, count(60)?);
    let rounds = 50 * e2e_bench::scenario::ROUNDS as u64;
    let hot: Vec<u64> = many
        .lines
        .iter()
        .filter(|&(line, &n)| n.saturating_sub(few.lines.get(line).copied().unwrap_or(0)) >= rounds)
        .map(|(&line, _)| line)
        .collect();
    let pages: std::collections::HashSet<u64> = hot.iter().map(|line| line >> 6).collect();
    Ok(Profile {
        instructions: (many.instructions - few.instructions) / rounds as f64,
        allocations: (many.allocations - few.allocations) / rounds as f64,
        code_lines: hot.len(),
        code_pages: pages.len(),
    })
}

/// What cachegrind's cache and branch simulation counts of one client per round (60
/// conversations less 10, as [`profile_per_round`]).
#[derive(Debug, PartialEq)]
struct Simulated {
    /// Misses of the first-level instruction cache (32 KiB, 8-way, 64-byte lines).
    instruction_misses: f64,
    /// Misses of the first-level data cache, reads and writes.
    data_misses: f64,
    conditional_mispredicts: f64,
    indirect_mispredicts: f64,
}

fn simulated_per_round(
    dir: &Path,
    name: &str,
    url: &str,
    stream: bool,
) -> Result<Simulated, String> {
    let count = |conversations: u64| -> Result<Simulated, String> {
        let report = run_under(
            "valgrind",
            |out| {
                vec![
                    "--tool=cachegrind".into(),
                    "--cache-sim=yes".into(),
                    "--branch-sim=yes".into(),
                    // The simulated caches, stated: cachegrind would otherwise take this
                    // machine's, and the figures would move between machines.
                    "--I1=32768,8,64".into(),
                    "--D1=32768,8,64".into(),
                    "--LL=8388608,16,64".into(),
                    format!("--cachegrind-out-file={}", out.display()).into(),
                ]
            },
            Run {
                dir,
                name,
                url,
                conversations,
                stream,
            },
        )?;
        read_cachegrind_summary(&report)
    };
    let (few, many) = (count(10)?, count(60)?);
    let rounds = (50 * e2e_bench::scenario::ROUNDS) as f64;
    let per_round = |get: fn(&Simulated) -> f64| (get(&many) - get(&few)) / rounds;
    Ok(Simulated {
        instruction_misses: per_round(|s| s.instruction_misses),
        data_misses: per_round(|s| s.data_misses),
        conditional_mispredicts: per_round(|s| s.conditional_mispredicts),
        indirect_mispredicts: per_round(|s| s.indirect_mispredicts),
    })
}

/// Reads the totals of a cachegrind output written with `--cache-sim=yes --branch-sim=yes`:
/// its `events:` line names the columns of its `summary:` line.
fn read_cachegrind_summary(text: &str) -> Result<Simulated, String> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .ok_or("cachegrind's output has no `events:` line")?
        .split_whitespace()
        .collect();
    let totals: Vec<f64> = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .ok_or("cachegrind's output has no `summary:` line")?
        .split_whitespace()
        .map(|n| {
            n.parse::<f64>()
                .map_err(|e| format!("cachegrind's summary: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let event = |name: &str| -> Result<f64, String> {
        events
            .iter()
            .position(|e| *e == name)
            .and_then(|at| totals.get(at).copied())
            .ok_or_else(|| format!("cachegrind's output has no `{name}` (run with --cache-sim=yes --branch-sim=yes)"))
    };
    Ok(Simulated {
        instruction_misses: event("I1mr")?,
        data_misses: event("D1mr")? + event("D1mw")?,
        conditional_mispredicts: event("Bcm")?,
        indirect_mispredicts: event("Bim")?,
    })
}

/// Reads a callgrind output written with `--dump-instr=yes --compress-strings=no
/// --compress-pos=no`: cost lines are `0xADDRESS LINE COST`, where the cost of one
/// instruction is the number of times it ran, and the line after a `calls=` line is the
/// inclusive cost of that call (skipped).
fn read_callgrind(text: &str) -> Result<Counts, String> {
    const ALLOCATORS: [&str; 5] = [
        "malloc",
        "calloc",
        "realloc",
        "posix_memalign",
        "aligned_alloc",
    ];
    let mut counts = Counts {
        instructions: f64::NAN,
        allocations: 0.0,
        lines: HashMap::new(),
    };
    let mut runs: HashMap<u64, u64> = HashMap::new();
    let mut callee_allocates = false;
    let mut after_call = false;
    for line in text.lines() {
        if let Some(total) = line.strip_prefix("summary:") {
            counts.instructions = total.trim().parse().unwrap_or(f64::NAN);
        } else if let Some(callee) = line.strip_prefix("cfn=") {
            callee_allocates = ALLOCATORS.contains(&callee.trim());
        } else if let Some(calls) = line.strip_prefix("calls=") {
            if callee_allocates {
                counts.allocations += calls
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<f64>().ok())
                    .unwrap_or(0.0);
            }
            after_call = true;
        } else if let Some(address) = line.strip_prefix("0x") {
            if std::mem::take(&mut after_call) {
                continue;
            }
            let mut fields = address.split_whitespace();
            let at = fields.next().and_then(|a| u64::from_str_radix(a, 16).ok());
            let cost = fields.nth(1).and_then(|c| c.parse::<u64>().ok());
            if let (Some(at), Some(cost)) = (at, cost) {
                *runs.entry(at).or_default() += cost;
            }
        }
    }
    if counts.instructions.is_nan() {
        return Err("callgrind's output has no `summary:` line".into());
    }
    for (at, ran) in runs {
        let line = counts.lines.entry(at >> 6).or_default();
        *line = (*line).max(ran);
    }
    Ok(counts)
}

/// Writes `out/<client>.order` for both clients (see the module docs).
fn write_layouts(dir: &Path, url: &str, out: &Path) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for name in ["e2e-floor", "e2e-llm-tools"] {
        let mut cost: HashMap<String, u64> = HashMap::new();
        for stream in [false, true] {
            let text = run_under(
                "valgrind",
                |out| {
                    vec![
                        "--tool=callgrind".into(),
                        "--demangle=no".into(),
                        "--compress-strings=no".into(),
                        format!("--callgrind-out-file={}", out.display()).into(),
                    ]
                },
                Run {
                    dir,
                    name,
                    url,
                    conversations: 20,
                    stream,
                },
            )?;
            for (function, ran) in self_costs(&text, name) {
                *cost.entry(function).or_default() += ran;
            }
        }
        let mut order: Vec<(String, u64)> = cost.into_iter().collect();
        order.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let path = out.join(format!("{name}.order"));
        let text: String = order.iter().map(|(f, _)| format!("{f}\n")).collect();
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("{}: {} functions", path.display(), order.len());
    }
    Ok(())
}

/// The instructions each function of the program `binary` ran itself (its callees' left
/// out), by symbol, from a callgrind output written with `--demangle=no --compress-strings=no`
/// (cost lines `LINE COST`; the line after a `calls=` line is the inclusive cost of that call,
/// skipped). Callgrind's `'N` suffix of a recursion level is dropped.
fn self_costs(text: &str, binary: &str) -> HashMap<String, u64> {
    let mut costs: HashMap<String, u64> = HashMap::new();
    let mut in_binary = false;
    let mut function = String::new();
    let mut after_call = false;
    for line in text.lines() {
        if let Some(object) = line.strip_prefix("ob=") {
            in_binary = Path::new(object.trim()).file_name() == Some(binary.as_ref());
        } else if let Some(name) = line.strip_prefix("fn=") {
            function = name
                .trim()
                .split('\'')
                .next()
                .unwrap_or_default()
                .to_owned();
        } else if line.starts_with("calls=") {
            after_call = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '*')) {
            if std::mem::take(&mut after_call) || !in_binary || function.is_empty() {
                continue;
            }
            let ran = line
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(0);
            *costs.entry(function.clone()).or_default() += ran;
        }
    }
    costs
}

/// System calls per round of one client by name (and their `total`), from two runs under
/// `strace -c -f` (10 and 60 conversations after 2 warm-up ones): the difference is the work
/// of 50 conversations.
fn syscalls_per_round(
    dir: &Path,
    name: &str,
    url: &str,
    stream: bool,
) -> Result<std::collections::BTreeMap<String, f64>, String> {
    let count = |conversations: u64| -> Result<HashMap<String, u64>, String> {
        let report = run_under(
            "strace",
            |out| vec!["-c".into(), "-f".into(), "-o".into(), out.into()],
            Run {
                dir,
                name,
                url,
                conversations,
                stream,
            },
        )?;
        Ok(read_strace_summary(&report))
    };
    let (few, many) = (count(10)?, count(60)?);
    let rounds = (50 * e2e_bench::scenario::ROUNDS) as f64;
    Ok(many
        .into_iter()
        .map(|(call, n)| {
            let before = few.get(&call).copied().unwrap_or(0);
            (call, n.saturating_sub(before) as f64 / rounds)
        })
        .collect())
}

/// Calls by system call name in a `strace -c` summary (`% time, seconds, usecs/call, calls,
/// [errors,] syscall`), with its `total` line.
fn read_strace_summary(text: &str) -> HashMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let calls = fields.get(3)?.parse().ok()?;
            Some(((*fields.last()?).to_owned(), calls))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_costs_are_each_function_s_own_instructions_in_the_program() {
        let text = "\
version: 1
positions: line
events: Ir
summary: 1000

ob=/target/release/e2e-llm-tools
fl=src/main.rs
fn=_ZN4main17h0123456789abcdefE
1 3
+1 2
cob=/lib/libc.so.6
cfn=malloc
calls=4 0
* 400
fn=_ZN5inner17h0123456789abcdefE'2
-1 5
fn=_ZN5inner17h0123456789abcdefE
2 1
ob=/lib/libc.so.6
fn=malloc
3 70
";
        let costs = self_costs(text, "e2e-llm-tools");
        // A call's inclusive cost is not the caller's own; recursion levels add up under one
        // name; another object's functions are left out.
        assert_eq!(costs.get("_ZN4main17h0123456789abcdefE"), Some(&5));
        assert_eq!(costs.get("_ZN5inner17h0123456789abcdefE"), Some(&6));
        assert_eq!(costs.len(), 2);
        assert!(self_costs(text, "e2e-floor").is_empty());
    }

    #[test]
    fn callgrind_output_gives_instructions_allocator_calls_and_lines_of_code() {
        let text = "\
version: 1
positions: instr line
events: Ir
summary: 1000

ob=/bin/client
fl=src/main.rs
fn=main
0x1000 1 3
0x1004 1 2
0x1040 2 7
cob=/lib/libc.so.6
cfn=malloc
calls=4 0x9000 0
0x1008 1 400
cfn=memcpy
calls=2 0x9100 0
0x100c 1 50
fn=other
0x1004 3 1
cfn=realloc
calls=1 0x9200 0
0x1048 3 90
";
        let counts = read_callgrind(text).unwrap();
        assert_eq!(counts.instructions, 1000.0);
        // malloc and realloc, not memcpy.
        assert_eq!(counts.allocations, 5.0);
        // A line ran as often as its most run instruction (0x1004: 2 + 1 times); the
        // inclusive costs after `calls=` lines are not code run at those addresses.
        assert_eq!(counts.lines.get(&(0x1000 >> 6)), Some(&3));
        assert_eq!(counts.lines.get(&(0x1040 >> 6)), Some(&7));
        assert_eq!(counts.lines.len(), 2);
    }

    #[test]
    fn a_strace_summary_gives_the_calls_by_name_with_or_without_errors() {
        let text = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 32.73    0.012183          17       677           read
  0.14    0.000051          25         2         2 connect
------ ----------- ----------- --------- --------- ------------------
100.00    0.037222          17       679         2 total
";
        let calls = read_strace_summary(text);
        assert_eq!(calls.get("read"), Some(&677));
        assert_eq!(calls.get("connect"), Some(&2));
        assert_eq!(calls.get("total"), Some(&679));
        assert_eq!(calls.len(), 3);
    }

    #[test]
    fn a_cachegrind_summary_gives_misses_and_mispredicts_by_the_events_it_names() {
        let text = "\
desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: client --url http://127.0.0.1:1
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
fl=src/main.rs
fn=main
1 10 1 1 4 1 0 2 1 0 3 1 1 1
summary: 1000 70 3 400 20 2 200 15 1 150 30 12 9
";
        assert_eq!(
            read_cachegrind_summary(text).unwrap(),
            Simulated {
                instruction_misses: 70.0,
                data_misses: 35.0,
                conditional_mispredicts: 30.0,
                indirect_mispredicts: 9.0,
            }
        );
    }

    #[test]
    fn a_cachegrind_output_without_the_simulations_is_refused() {
        let text = "events: Ir\nsummary: 1000\n";
        let error = read_cachegrind_summary(text).unwrap_err();
        assert!(error.contains("I1mr"), "{error}");
    }

    #[test]
    fn callgrind_output_without_a_summary_is_refused() {
        assert!(read_callgrind("events: Ir\n0x1000 1 3\n").is_err());
    }
}
