#!/usr/bin/env bash
# Only one crate may link `sqlite3`. An application that uses sqlx's SQLite driver
# beside this journal (bundled rusqlite) must resolve both to one libsqlite3-sys:
# this resolves such an application's lockfile and fails if cargo cannot.
set -euo pipefail
journal="$(cd "$(dirname "$0")/.." && pwd)"
app="$(mktemp -d)"
trap 'rm -rf "$app"' EXIT
mkdir -p "$app/src"
echo 'fn main() {}' >"$app/src/main.rs"
cat >"$app/Cargo.toml" <<TOML
[package]
name = "sqlx-sqlite-beside-the-journal"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
reqwest-resilience-journal = { path = "$journal", features = ["sqlite", "postgres", "sqlx"] }
sqlx = { version = "0.8", default-features = false, features = ["sqlite", "postgres", "runtime-tokio"] }

[workspace]
TOML
cargo generate-lockfile --quiet --manifest-path "$app/Cargo.toml"
links=$(grep -A1 '^name = "libsqlite3-sys"' "$app/Cargo.lock" | grep -c '^version' || true)
rusqlite=$(grep -A1 '^name = "rusqlite"' "$app/Cargo.lock" | sed -n 's/^version = "\(.*\)"/\1/p')
sys=$(grep -A1 '^name = "libsqlite3-sys"' "$app/Cargo.lock" | sed -n 's/^version = "\(.*\)"/\1/p')
if [ "$links" != 1 ]; then
  echo "sqlx's SQLite and the journal's rusqlite do not share one libsqlite3-sys" >&2
  exit 1
fi
echo "sqlx (SQLite) and the journal resolve together: rusqlite $rusqlite, libsqlite3-sys $sys"
