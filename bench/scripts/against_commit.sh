#!/usr/bin/env bash
# P1 and P2 side by side against an earlier commit: the crate at REV ("then") and the
# working tree ("now"), with bare reqwest and the floors, interleaved in one run.
# This is how to tell whether a change regressed the hot path: a threshold copied
# from an earlier full run carries that run's drift with it.
#
#     bench/scripts/against_commit.sh REV [ROUNDS]          # P1, the ratios
#     bench/scripts/against_commit.sh REV p2 [ROUNDS]       # P2
#     bench/scripts/against_commit.sh REV profile ROW COUNT # one row, for callgrind
#     bench/scripts/against_commit.sh REV instructions      # each row's instructions per request
#
# REV's crate is exported to target/against/REV and renamed `then`; the harness is
# bench/scripts/against_commit/main.rs. Needs REV's public API to have what the
# harness calls (RetryPolicy::builder, Backoff::full_jitter, from_builder): true
# from b1d9b10 on. Talks only to the bench's loopback server.
#
# `instructions` (needs valgrind) counts the client thread's instructions per
# request of every row under callgrind, as instructions_per_request.sh does for the
# bench: unlike the timed ratios, it does not move with machine load or with where
# the linker happened to place each row's code (a null test, a commit against
# itself, reads 0.99-1.00 in time for that reason alone).
set -euo pipefail

[ "$#" -ge 1 ] || {
    echo "usage: $0 REV [ROUNDS | p2 [ROUNDS] | profile ROW COUNT | instructions]" >&2
    exit 2
}
root=$(cd "$(dirname "$0")/../.." && pwd)
rev=$(git -C "$root" rev-parse --short "$1")
shift
work="$root/target/against/$rev"
mkdir -p "$work/then" "$work/harness/src"

if [ ! -f "$work/then/Cargo.toml" ]; then
    git -C "$root" archive "$rev" | tar -x -C "$work/then"
    # A dependency of its own name: rename the package, drop its workspace tables.
    awk '
        /^\[workspace(\]|\.)/ { skip = 1; next }
        /^\[/ { skip = 0 }
        !skip
    ' "$work/then/Cargo.toml" |
        sed '0,/^name = "reqwest-resilience"/s//name = "reqwest-resilience-then"/' \
            > "$work/then/Cargo.toml.new"
    mv "$work/then/Cargo.toml.new" "$work/then/Cargo.toml"
fi

cat > "$work/harness/Cargo.toml" <<TOML
[package]
name = "against-commit"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
bench = { package = "reqwest-resilience-bench", path = "$root/bench" }
then = { package = "reqwest-resilience-then", path = "$work/then" }
now = { package = "reqwest-resilience", path = "$root", features = ["metrics"] }
reqwest = { version = "0.13", default-features = false }
tokio = { version = "1", features = ["rt", "time"] }

[workspace]
TOML
cp "$root/bench/scripts/against_commit/main.rs" "$work/harness/src/main.rs"
cp "$root/Cargo.lock" "$work/harness/Cargo.lock"
cargo build --release --quiet --manifest-path "$work/harness/Cargo.toml" \
    --target-dir "$root/target/against/build"
harness="$root/target/against/build/release/against-commit"
[ "${1:-}" = instructions ] || exec "$harness" "$@"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
client_instructions() { # row count
    timeout 900 valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$out/run.$2" "$harness" profile "$1" "$2" >/dev/null 2>&1
    # The client runtime is on the main thread: the first profile.
    awk '/^(summary|totals):/ { print $2; exit }' "$out/run.$2-01"
}
printf '| row | client instructions / request |\n|:---|---:|\n'
for row in bare "partial floor" floor then now "now, hedged"; do
    # Two lengths, so that start-up, connection and warm-up cancel out.
    low=$(client_instructions "$row" 1000)
    high=$(client_instructions "$row" 3000)
    printf '| %s | %d |\n' "$row" $(((high - low) / 2000))
done
