#!/usr/bin/env bash
# The end-to-end benchmark: CPU (user and system) and wall time per tool round, context switches,
# peak RSS and request bytes per conversation of llm-tools against a hand-written reqwest + serde_json client (the floor),
# both talking to a mock Chat Completions server on 127.0.0.1 (see e2e-bench/).
#
#   scripts/e2e-bench.sh [--ordered] [--runs 15] [--conversations 200] [--warmup 20] [--only plain|stream] [--pin CPU] [--instructions] [--caches] [--syscalls]
#
# Builds the programs in release mode, then runs both clients in turn (non-streaming, then
# streaming) and prints a Markdown table: median (lowest–highest) and llm-tools / floor.
# --instructions adds what valgrind's callgrind counts per round, which the machine's load does
# not move: instructions, allocations, and the lines and pages of code a round runs through.
# --caches adds the instruction and data cache misses and mispredicted branches per round, from
# valgrind's cachegrind simulation (where no hardware counter can be read, as in a VM).
# --syscalls adds the system calls per round, counted by strace. --pin CPU runs the mock and
# the clients on that one CPU: the figures then agree within a few per cent from run to run
# (unpinned, each run pays for wake-ups across cores as often as the scheduler happens to).
#
# --ordered measures both clients with their code laid out by use instead of by crate: each is
# run under callgrind, and relinked with its functions in the order of the instructions they
# ran (the linker's --symbol-ordering-file; rust-lld, Rust's default linker on x86_64 Linux,
# and gold read it), so the code a round runs sits together. It needs valgrind. The next run
# without it builds (links) the clients as usual again.
set -euo pipefail
cd "$(dirname "$0")/.."

ordered=false
args=()
for arg in "$@"; do
    if [[ "$arg" == "--ordered" ]]; then ordered=true; else args+=("$arg"); fi
done

cargo build --release --quiet -p e2e-bench --bins
target_dir="${CARGO_TARGET_DIR:-target}"
if $ordered; then
    layout="$target_dir/e2e-layout"
    "$target_dir/release/e2e-run" --write-layout "$layout"
    for bin in e2e-floor e2e-llm-tools; do
        cargo rustc --release --quiet -p e2e-bench --bin "$bin" -- \
            -C "link-arg=-Wl,--symbol-ordering-file=$(realpath "$layout/$bin.order")" \
            -C link-arg=-Wl,--no-warn-symbol-ordering
    done
    echo "code laid out by use (--ordered): $layout/*.order"
fi
echo "$(nproc) cores; load average (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$target_dir/release/e2e-run" "${args[@]}"
