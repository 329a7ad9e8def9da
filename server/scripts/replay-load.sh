#!/usr/bin/env bash
# The full form of the replay-load measurement: the SQLite strong mode, 630 intents,
# 8 % of effects holding the writer 1.5 s, 32 concurrent clients (CI runs 24 intents).
# Prints replay latency measured inside the server (p50/p99/max), the answers' counts
# and the fraction of intents resolved. DEV=1 measures the dev profile instead of
# release (no release build needed); the other knobs are in tests/all/replay_load.rs.
set -euo pipefail
cd "$(dirname "$0")/../.."
profile=(--release)
if [[ -n "${DEV:-}" ]]; then profile=(); fi
REPLAY_LOAD_INTENTS="${REPLAY_LOAD_INTENTS:-630}" cargo test -p tower-idempotency \
  "${profile[@]}" --all-features --test all replay_load -- --nocapture 2>&1 |
  grep -E -A3 '^replay load:|test result|panicked'
