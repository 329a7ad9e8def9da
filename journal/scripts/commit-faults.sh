#!/usr/bin/env bash
# The fault-injection tests at full count (each fault ROUNDS times, default 100):
# a commit waiting for a synchronous standby that never answers, a connection
# cut at COMMIT, the server stopped mid-commit (PostgreSQL); a write lock held
# past the busy timeout and kill -9 mid-commit (SQLite). `cargo test` runs the
# same tests twice each. Prints one COMMIT_FAULT line per fault and the time.
#
# Usage: journal/scripts/commit-faults.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-100}"
bash journal/scripts/ensure-postgres.sh >/dev/null
cargo test -p reqwest-resilience-journal --all-features --test all --no-run
started=$(date +%s)
COMMIT_FAULT_ROUNDS="$rounds" cargo test -p reqwest-resilience-journal --all-features \
    --test all commit_faults -- --nocapture 2>&1 | tee /tmp/commit-faults.log |
    grep -E '^COMMIT_FAULT|^test |test result' || true
echo "elapsed: $(( $(date +%s) - started )) s for $rounds rounds of each fault"
grep -q 'test result: ok' /tmp/commit-faults.log
