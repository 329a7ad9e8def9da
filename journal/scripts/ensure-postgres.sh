#!/usr/bin/env bash
# Makes sure the PostgreSQL server binaries (initdb, pg_ctl, postgres) exist, so the
# journal's tests can start their own throwaway cluster on 127.0.0.1.
# Installs Debian's `postgresql` package only when the binaries are missing.
# Does not start a server: the tests do that (and stop it) themselves.
set -euo pipefail

have_binaries() {
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if have_binaries; then
    echo "ensure-postgres: PostgreSQL binaries found"
    exit 0
fi
if [ -n "${DATABASE_URL:-}" ]; then
    echo "ensure-postgres: DATABASE_URL is set; the tests use it"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure-postgres: no PostgreSQL binaries and no apt-get; install PostgreSQL or set DATABASE_URL" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "ensure-postgres: installing Debian's postgresql package"
export DEBIAN_FRONTEND=noninteractive
timeout 600 $SUDO apt-get update -qq
timeout 900 $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
# Debian's package starts a cluster of its own on 5432; the tests do not need it.
if command -v pg_ctlcluster >/dev/null 2>&1; then
    for conf in /etc/postgresql/*/main; do
        [ -d "$conf" ] || continue
        version=$(basename "$(dirname "$conf")")
        $SUDO pg_ctlcluster "$version" main stop >/dev/null 2>&1 || true
    done
fi
have_binaries || { echo "ensure-postgres: install finished but initdb is still missing" >&2; exit 1; }
echo "ensure-postgres: PostgreSQL installed"
