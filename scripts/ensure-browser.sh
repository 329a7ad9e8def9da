#!/usr/bin/env bash
# What the browser and node tests (scripts/wasm-tests.sh) need, each installed only
# when missing: the wasm32-unknown-unknown target; Debian's Chromium and its
# ChromeDriver; wasm-bindgen-cli at exactly the version of wasm-bindgen in Cargo.lock
# (its test runner must match the library the tests link). Node.js is the machine's.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed | grep -qx wasm32-unknown-unknown ||
  rustup target add wasm32-unknown-unknown

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  echo "installing Debian's chromium and chromium-driver"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi

version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
[ -n "$version" ] || { echo "no wasm-bindgen in Cargo.lock" >&2; exit 1; }
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $version" ]; then
  echo "installing wasm-bindgen-cli $version (once per machine: it compiles for minutes)"
  # Without the default `rustls-tls` feature: the runner only talks to ChromeDriver
  # and its own server, on 127.0.0.1. A quicker release build: the runner's own speed
  # does not matter here, its compile time does.
  install=(cargo install wasm-bindgen-cli --version "=$version" --no-default-features)
  export CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
  # Its own lockfile first; a registry that lacks one of the versions it pins (seen:
  # webpki-roots) gets the newest compatible ones instead. wasm-bindgen's own crates
  # are pinned exactly by the CLI's manifest either way.
  "${install[@]}" --locked || {
    echo "cargo install --locked failed; installing with the newest compatible dependencies"
    "${install[@]}"
  }
fi
command -v node >/dev/null || { echo "node is needed for the node tests" >&2; exit 1; }
