#!/usr/bin/env bash
# The full form of the fleet test: 4 servers (each its own PostgreSQL connection)
# sharing one database, 64 concurrent identical requests per key, 1,000 rounds
# (CI runs 10). Needs PostgreSQL binaries (journal/scripts/ensure-postgres.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
TOWER_IDEMPOTENCY_PG_ROUNDS="${ROUNDS:-1000}" cargo test -p tower-idempotency --release \
  --all-features --test all postgres_store -- --nocapture 2>&1 | grep -E '^postgres fleet:|test result'
