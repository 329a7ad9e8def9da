#!/usr/bin/env bash
# System packages the build needs beyond the Rust toolchain. `--all-features` compiles
# the `native-tls` backend, which links OpenSSL: its headers and pkg-config must exist.
# Idempotent: installs only what is missing, and only where apt-get is available.
set -euo pipefail

missing=()
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: please install: ${missing[*]} (OpenSSL headers and pkg-config)" >&2
  exit 1
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "ensure-deps: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
