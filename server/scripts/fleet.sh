#!/usr/bin/env bash
# The full form of the fleet tests, 64 concurrent identical requests per key, 1,000
# rounds (CI runs 10): 4 layer servers in one process (each its own PostgreSQL
# connection), and 4 strong-mode server processes (strong_payments_postgres), each
# fleet sharing one database. Needs PostgreSQL binaries (journal/scripts/ensure-postgres.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --quiet --release -p tower-idempotency --all-features --examples
TOWER_IDEMPOTENCY_PG_ROUNDS="${ROUNDS:-1000}" cargo test -p tower-idempotency --release \
  --all-features --test all -- --nocapture postgres_store four_server_processes 2>&1 |
  grep -E '^postgres (fleet|processes):|test result'
