#!/usr/bin/env bash
# cargo-deny over the whole dependency tree (deny.toml): licences, bans (duplicate versions as
# warnings), sources (crates.io only), then RustSec's security advisories. Installs cargo-deny
# from crates.io when it is missing.
#
# The advisories need RustSec's database, cloned from GitHub. When that fetch fails (GitHub
# unreachable), the advisories are skipped with a warning rather than failing the run for a
# reason that is not the tree's; when the database is there, an advisory fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deny --version >/dev/null 2>&1; then
    # 0.20's configuration format; patch releases keep up with the advisory database's format.
    cargo install --locked cargo-deny --version '^0.20'
fi

cargo deny --locked check --hide-inclusion-graph bans licenses sources

if cargo deny fetch db; then
    # The database just fetched; `--offline` so a second fetch cannot fail the run.
    cargo deny --locked --offline check --hide-inclusion-graph advisories
else
    echo "warning: the RustSec advisory database could not be fetched; advisories NOT checked" >&2
fi
