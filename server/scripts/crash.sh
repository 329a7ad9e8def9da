#!/usr/bin/env bash
# The full form of the strong mode's crash test: 100 SIGKILLs of the strong_payments
# server at seeded random moments (CI runs 12). Prints the test's summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The test kills this example's server; `--test all` alone does not build examples.
cargo build --quiet -p tower-idempotency --features sqlite --example strong_payments
TOWER_IDEMPOTENCY_KILLS="${KILLS:-100}" cargo test -p tower-idempotency --features sqlite \
  --test all crash -- --nocapture 2>&1 | grep -E '^kills:|test result'
