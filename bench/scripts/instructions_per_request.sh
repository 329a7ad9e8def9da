#!/usr/bin/env bash
# Client-thread instructions per request for each peer named, from callgrind: a
# figure that other processes on a busy machine cannot move, to read beside P1's
# timed ratios (instructions are not time, but a difference in them is the work
# one row does and the other does not).
#
#     cargo build --release -p reqwest-resilience-bench --bin bench
#     bench/scripts/instructions_per_request.sh bare floor-partial floor resilience
#
# Each peer runs `bench --profile PEER N` twice (N = 1000 and 3000) under callgrind
# with one profile per thread; the client runtime is on the main thread (the first
# profile), the loopback server on its own. The difference between the two runs,
# divided by 2000, leaves out start-up, connection and warm-up costs.
set -euo pipefail

cd "$(dirname "$0")/../.."
bench=target/release/bench
[ -x "$bench" ] || { echo "build $bench first (see above)" >&2; exit 2; }
[ "$#" -gt 0 ] || { echo "usage: $0 PEER…  (names as in bench --profile)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

client_instructions() { # peer count
    timeout 900 valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$out/$1.$2" "$bench" --profile "$1" "$2" >/dev/null 2>&1
    awk '/^(summary|totals):/ { print $2; exit }' "$out/$1.$2-01"
}

printf '| peer | client instructions / request |\n|:---|---:|\n'
for peer in "$@"; do
    low=$(client_instructions "$peer" 1000)
    high=$(client_instructions "$peer" 3000)
    printf '| %s | %d |\n' "$peer" $(((high - low) / 2000))
done
