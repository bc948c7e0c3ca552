#!/usr/bin/env bash
# Packages the four published crates as `cargo publish` would and builds each from its packaged
# sources, every feature on, against the others' packages (cargo packages workspace members
# together and resolves them from a local registry, so the macro crate, core, the providers and
# MCP are verified as they will be published, before any is on crates.io). Also checks that each
# package carries the licence texts and its changelog.
# Usage: scripts/check-package.sh [cargo package options, e.g. --allow-dirty]
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(llm-tools-macros llm-tools-core llm-tools-providers llm-tools-mcp)

missing=0
for crate in "${crates[@]}"; do
    files=$(cargo package --quiet --locked --list -p "$crate" "$@")
    for required in LICENSE-MIT LICENSE-APACHE CHANGELOG.md; do
        if ! grep -qx "$required" <<<"$files"; then
            echo "error: the package of $crate lacks $required" >&2
            missing=1
        fi
    done
done
[ "$missing" -eq 0 ] || exit 1

# Cargo unpacks each package of its local registry under $CARGO_HOME/registry/src/<id>/, the id
# taken from the registry's path, and reuses a directory it unpacked before: a second run from the
# same checkout path would build the sources packaged by the first. Those directories go first
# (only ours; crates.io's are never touched).
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
for crate in "${crates[@]}"; do
    for unpacked in "$cargo_home"/registry/src/*/"$crate"-[0-9]* "$cargo_home"/registry/cache/*/"$crate"-[0-9]*.crate; do
        case "$unpacked" in
        */index.crates.io-*) ;;
        *) if [ -e "$unpacked" ]; then rm -rf "$unpacked"; fi ;;
        esac
    done
done

packages=()
for crate in "${crates[@]}"; do packages+=(-p "$crate"); done
# `--all-features`: a provider's module compiles only with its feature, so a file left out of
# the package would go unnoticed with the defaults (the providers crate has none).
cargo package --locked --all-features "${packages[@]}" "$@"
