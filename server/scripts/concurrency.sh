#!/usr/bin/env bash
# The full form of the concurrency test: 64 concurrent identical requests per key,
# 1,000 rounds (CI runs 10), one server process with the in-memory store.
set -euo pipefail
cd "$(dirname "$0")/../.."
TOWER_IDEMPOTENCY_ROUNDS="${ROUNDS:-1000}" cargo test -p tower-idempotency --release \
  --test all concurrency -- --nocapture 2>&1 | grep -E '^rounds:|test result'
