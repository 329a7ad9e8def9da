#!/usr/bin/env bash
# cargo-mutants, the version scripts/mutants.sh and .cargo/mutants.toml are written for:
# installed from crates.io with its own lockfile when missing or another version.
# Idempotent: does nothing when the right version is on PATH.
set -euo pipefail

version=27.1.0

if installed=$(cargo mutants --version 2>/dev/null) && [ "$installed" = "cargo-mutants $version" ]; then
  exit 0
fi
echo "ensure-mutants: installing cargo-mutants $version (was: ${installed:-none})"
nice -n 10 cargo install --locked "cargo-mutants@$version"
