#!/usr/bin/env bash
# The full form of the interop crash test: 100 SIGKILLs (CI runs 10) of the
# strong_payments server while reqwest-resilience sends durable intents to it
# through the fault proxy, then the resume and the check of the server's rows.
# KILLS=n and SEEDS="30 31 ..." change the run; each seed is one run.
set -uo pipefail
cd "$(dirname "$0")/../.."
failed=0
for seed in ${SEEDS:-30}; do
  INTEROP_CRASH_KILLS="${KILLS:-100}" INTEROP_CRASH_SEED="$seed" \
    cargo test -p reqwest-resilience-interop --test crash sigkills -- --nocapture 2>&1 |
    grep -E '^(crash run|intents|not succeeded|resume|proxy|payment rows)|test result|panicked|seed [0-9]+:' || failed=1
done
exit $failed
