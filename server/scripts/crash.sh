#!/usr/bin/env bash
# The full form of the strong mode's crash tests: 100 SIGKILLs (CI runs 12) of the
# strong_payments server (SQLite) and of strong_payments_postgres (a throwaway
# cluster; binaries from journal/scripts/ensure-postgres.sh), at seeded random moments.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The tests kill these examples' servers; `--test all` alone does not build examples.
cargo build --quiet -p tower-idempotency --all-features --examples
TOWER_IDEMPOTENCY_KILLS="${KILLS:-100}" cargo test -p tower-idempotency --all-features \
  --test all sigkill -- --nocapture 2>&1 | grep -E 'kills:|test result'
