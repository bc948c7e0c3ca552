//! What both clients share: the runtime, the warm-up, the timed conversations, the checks of
//! their own work and the report.

use std::future::Future;
use std::process::ExitCode;
use std::time::Instant;

use crate::cli::ClientArgs;
use crate::measure::{self, Report};
use crate::scenario;
use crate::stats;

/// One way of holding the conversations of the scenario.
pub trait Client {
    /// `floor` or `llm-tools`.
    const NAME: &'static str;

    /// Runs one whole conversation (one user message, 10 tool rounds, the final answer) and
    /// returns the final answer's text.
    fn conversation(&mut self, stream: bool) -> impl Future<Output = Result<String, String>>;
}

/// Runs a client's program: reads the arguments, builds the client, runs the warm-up and the
/// timed conversations on a current-thread Tokio runtime, checks the work and prints the
/// [`Report`] as one JSON line. Anything wrong is printed on stderr with a failing exit code.
pub fn main<C: Client>(build: impl FnOnce(&ClientArgs) -> Result<C, String>) -> ExitCode {
    let result = ClientArgs::from_env().and_then(|args| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        runtime.block_on(async {
            let client = build(&args)?;
            drive(&args, client).await
        })
    });
    match result {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                #[allow(clippy::print_stdout)] // the report is the program's output
                {
                    println!("{line}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(C::NAME, &e.to_string()),
        },
        Err(e) => fail(C::NAME, &e),
    }
}

fn fail(name: &str, message: &str) -> ExitCode {
    eprintln!("e2e-{name}: FAILED: {message}");
    ExitCode::FAILURE
}

async fn drive<C: Client>(args: &ClientArgs, mut client: C) -> Result<Report, String> {
    let http = reqwest::Client::new();
    for _ in 0..args.warmup {
        check_answer(&client.conversation(args.stream).await?)?;
    }
    stats::reset(&http, &args.url).await?;
    let executions_before = scenario::executions();

    let ticks_start = measure::cpu_ticks();
    let switches_start = measure::context_switches();
    let cpu_start = measure::cpu_time();
    let wall_start = Instant::now();
    for _ in 0..args.conversations {
        check_answer(&client.conversation(args.stream).await?)?;
    }
    let wall = wall_start.elapsed();
    let cpu = measure::cpu_time().saturating_sub(cpu_start);
    let switches = measure::context_switches().saturating_sub(switches_start);
    let ticks = measure::cpu_ticks();

    let stats = stats::fetch(&http, &args.url).await?;
    let n = args.conversations;
    let executions = scenario::executions() - executions_before;
    let expect = |what: &str, got: u64, want: u64| {
        if got == want {
            Ok(())
        } else {
            Err(format!("{what}: {got}, expected {want}"))
        }
    };
    if let Some(error) = &stats.first_error {
        return Err(format!(
            "the mock rejected {} requests; the first: {error}",
            stats.invalid
        ));
    }
    expect(
        "tool executions",
        executions,
        n * scenario::EXECUTIONS_PER_CONVERSATION as u64,
    )?;
    expect(
        "requests",
        stats.requests,
        n * scenario::REQUESTS_PER_CONVERSATION as u64,
    )?;
    expect("final answers", stats.final_answers, n)?;
    expect(
        "streamed requests",
        stats.streamed,
        if args.stream { stats.requests } else { 0 },
    )?;
    expect(
        "fewest tools declared in a request",
        stats.tools_min,
        scenario::TOOLS as u64,
    )?;
    expect(
        "most tools declared in a request",
        stats.tools_max,
        scenario::TOOLS as u64,
    )?;
    Ok(Report {
        client: C::NAME.to_owned(),
        stream: args.stream,
        conversations: n,
        rounds: n * scenario::ROUNDS as u64,
        cpu_ns: u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX),
        user_ticks: ticks.0.saturating_sub(ticks_start.0),
        system_ticks: ticks.1.saturating_sub(ticks_start.1),
        context_switches: switches,
        wall_ns: u64::try_from(wall.as_nanos()).unwrap_or(u64::MAX),
        peak_rss_kib: measure::peak_rss_kib(),
        anonymous_rss_kib: measure::anonymous_rss_kib(),
        file_rss_kib: measure::file_rss_kib(),
        requests: stats.requests,
        request_bytes: stats.request_bytes,
    })
}

fn check_answer(answer: &str) -> Result<(), String> {
    if answer == scenario::FINAL_ANSWER {
        Ok(())
    } else {
        Err(format!(
            "the conversation ended with {answer:?}, not the final answer"
        ))
    }
}
