#!/usr/bin/env bash
# The full form of the interop outbox test: 10,000 business transactions (a
# fifth rolled back), each enqueueing its payment intent, while relays of a
# fleet are SIGKILLed 50 times (CI runs 300 and 3); then the drain and the check
# of the server's payments and of every send it received. On PostgreSQL, then
# on SQLite. TRANSACTIONS=n KILLS=n SEEDS="31 32 ..." BACKENDS="postgres sqlite"
# change the run; each backend and seed is one run.
# Needs PostgreSQL's server binaries (journal/scripts/ensure-postgres.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
failed=0
for backend in ${BACKENDS:-postgres sqlite}; do
  for seed in ${SEEDS:-31}; do
    INTEROP_OUTBOX_TRANSACTIONS="${TRANSACTIONS:-10000}" INTEROP_OUTBOX_KILLS="${KILLS:-50}" \
      INTEROP_OUTBOX_SEED="$seed" \
      cargo test -p reqwest-resilience-interop --test outbox "on_${backend}_" -- --nocapture 2>&1 |
      grep -E '^(outbox run|times|server|journal|from enqueue|proxy|lost effects)|test result|panicked|seed [0-9]+:' ||
      failed=1
  done
done
exit $failed
