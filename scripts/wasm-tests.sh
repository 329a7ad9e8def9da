#!/usr/bin/env bash
# The crate on wasm32-unknown-unknown: builds it with the README's command, then runs
# wasm/'s tests against interop's browser_server (tower-idempotency with CORS, on
# 127.0.0.1): tests/http.rs and tests/time.rs in node, then those and the payment
# page's tests/page.rs in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
timed_part() { local label=$1 start=$SECONDS; shift; "$@"; echo "($label: $((SECONDS - start)) s)"; }
timed_part "tools (installed when missing)" bash scripts/ensure-browser.sh

# The wasm-only code with warnings denied, on its own target only (so the native
# build below still reuses what the test step built). No clippy on this target: it
# would check every dependency a second time, minutes on CI's two cores.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-D warnings"
# The README's wasm32 build command, run as written there, so the two cannot differ.
build=$(grep -m1 -E '^(RUSTFLAGS=[^ ]+ )?cargo build --target wasm32-unknown-unknown' README.md)
[ -n "$build" ] || { echo "README.md has no wasm32 build command" >&2; exit 1; }
echo "+ $build"
timed_part "wasm32 build" bash -c "$build"

# With the workspace's features, as the test step of .ci/run built it: reused there.
timed_part "browser_server" cargo build --quiet --workspace --all-features --bin browser_server
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
log=$(mktemp)
"$target_dir/debug/browser_server" 127.0.0.1:0 >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  grep -q '^listening on ' "$log" && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
address=$(sed -n 's/^listening on //p' "$log")
[ -n "$address" ] || { echo "browser_server did not start" >&2; cat "$log" >&2; exit 1; }
echo "browser_server at $address"

# Compiled into the tests (option_env!), and the runner for the wasm32 target.
export REQWEST_RESILIENCE_TEST_SERVER=$address
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
echo "-- node"
timed_part "node tests" cargo test --target wasm32-unknown-unknown -p reqwest-resilience-wasm \
  --test http --test time
echo "-- headless Chromium (wasm/webdriver.json has its flags)"
timed_part "Chromium tests" env WASM_BINDGEN_USE_BROWSER=1 cargo test \
  --target wasm32-unknown-unknown -p reqwest-resilience-wasm --test http --test time --test page
