#!/usr/bin/env bash
# Checks that the published crates build with every one of their features alone, with none and
# with all: a feature that needs another one it does not turn on, or code behind the wrong `cfg`,
# fails here rather than for the user who turns on one provider. The features are read from
# each crate's `[features]` table, so a new one is checked without editing this script.
# Warnings count as failures (a `cfg` mistake often shows as unused code first).
# Usage: scripts/check-features.sh [crate…]   (default: every crate with features)
set -euo pipefail
cd "$(dirname "$0")/.."

# The features a crate's Cargo.toml declares, one a line: the keys of its `[features]` table but
# `default` and the internal ones named `_…` (turned on by other features, never alone by users;
# they are built through those features).
features_of() {
    awk '
        /^\[/ { in_features = ($0 == "[features]"); next }
        in_features && /^[A-Za-z0-9-][A-Za-z0-9_-]*[[:space:]]*=/ {
            name = $0; sub(/[[:space:]]*=.*/, "", name)
            if (name != "default") print name
        }
    ' "$1/Cargo.toml"
}

crates=("$@")
if [ ${#crates[@]} -eq 0 ]; then
    crates=(llm-tools-core llm-tools-providers llm-tools-mcp)
fi

failed=()
check() {
    local crate=$1; shift
    echo "cargo check -p $crate $*" >&2
    local log
    log=$(mktemp)
    # A failed build does not stop the script (an `if` condition): every combination runs, and the
    # failures are listed at the end.
    if ! cargo check --quiet -p "$crate" "$@" 2>&1 | tee "$log" >&2; then
        failed+=("-p $crate $* (build error)")
    elif grep -qE '^(warning|error)' "$log"; then
        failed+=("-p $crate $* (warnings)")
    fi
    rm -f "$log"
}

for crate in "${crates[@]}"; do
    mapfile -t features < <(features_of "$crate")
    check "$crate" --no-default-features
    for feature in "${features[@]}"; do
        check "$crate" --no-default-features --features "$feature"
    done
    if [ ${#features[@]} -gt 1 ]; then
        check "$crate" --all-features
    fi
done

if [ ${#failed[@]} -ne 0 ]; then
    echo "feature combinations that do not build cleanly:" >&2
    printf '  cargo check %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "every feature combination builds" >&2
