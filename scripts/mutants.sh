#!/usr/bin/env bash
# Mutation testing of the protocol rule files (.cargo/mutants.toml) with cargo-mutants:
# one crate at a time, each mutant judged by that crate's own tests plus the models
# (the `reqwest-resilience-model` member's tests, the bounded model checks among them).
#
#   scripts/mutants.sh --crate server [--shard 1/4] [--file server/src/scope.rs]...
#                      [--re REGEX]... [--jobs 1]
#       Mutants of one crate (server, journal, client), optionally one shard of them,
#       only some of its rule files, or only the mutants whose names match (to run
#       survivors again after their kill-tests). The outcome lists are copied to
#       docs/mutants/results/<crate>/<label>/ (label: the files, or "all", the shard,
#       "re-<time>" for --re), with `when.txt`, and scripts/mutants-table.py summarises
#       every committed result in docs/mutants.md (a mutant's latest outcome counts).
#   scripts/mutants.sh --list [--crate server]
#       The mutants that would run (equivalent ones left out), without building anything.
#   scripts/mutants.sh --in-diff [BASE]
#       CI: the mutants on the lines changed since the merge base with main (or BASE) in
#       the rule files; exits at once when no rule file changed. Fails on a missed or
#       timed-out mutant.
#
# Environment: MUTANTS_TARGET_DIR (default target/mutants: build directories of their
# own, one per crate, so a run never waits for the checkout's cargo lock and stays warm
# between runs),
# MUTANTS_CARGO_JOBS (default 2), MUTANTS_TIMEOUT / MUTANTS_BUILD_TIMEOUT (seconds per
# mutant's tests / build). Everything runs under `nice -n 10`.
#
# Equivalent mutants are listed in docs/mutants-equivalent.txt, each with its reason;
# each line becomes an exact --exclude-re (file, line, column, mutation).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() {
  sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

crate=""
shard=""
jobs=1
mode=run
base=""
files=()
res=()
while [ $# -gt 0 ]; do
  case "$1" in
    --crate) crate=${2:?--crate needs server, journal or client}; shift 2 ;;
    --shard) shard=${2:?--shard needs k/n}; shift 2 ;;
    --file) files+=("${2:?--file needs a path}"); shift 2 ;;
    --re) res+=("${2:?--re needs a regex}"); shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --list) mode=list; shift ;;
    --in-diff)
      mode=in-diff
      shift
      if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then base=$1; shift; fi
      ;;
    -h | --help) usage ;;
    *) echo "mutants.sh: unknown argument $1" >&2; usage ;;
  esac
done

# The crate each rule file belongs to, and the package cargo knows it by.
package_of() {
  case "$1" in
    server) echo tower-idempotency ;;
    journal) echo reqwest-resilience-journal ;;
    client) echo reqwest-resilience ;;
    *) echo "mutants.sh: unknown crate '$1' (server, journal or client)" >&2; exit 2 ;;
  esac
}
crate_of_path() {
  case "$1" in
    server/*) echo server ;;
    journal/*) echo journal ;;
    src/*) echo client ;;
    *) echo "" ;;
  esac
}

# The rule files, as .cargo/mutants.toml lists them.
rule_files() {
  python3 - "$root/.cargo/mutants.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["examine_globs"]))
EOF
}

# A string as a regex that matches exactly it.
escape() {
  python3 -c "$ESCAPE" "$1"
}
ESCAPE='import sys
special = set("\\.+*?()|[]{}^$#&-~")
print("".join("\\" + c if c in special else c for c in sys.argv[1]))'

# docs/mutants-equivalent.txt: "<mutant name as --list prints it> # <reason>" per line.
# Each name becomes an anchored regex with every metacharacter escaped.
exclude_args=()
while IFS= read -r regex; do
  exclude_args+=(--exclude-re "$regex")
done < <(python3 - "$root/docs/mutants-equivalent.txt" <<'EOF'
import sys
special = set("\\.+*?()|[]{}^$#&-~")
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    name, sep, reason = line.partition(" # ")
    if not sep or not reason.strip():
        sys.exit(f"docs/mutants-equivalent.txt: no ' # <reason>' on: {line}")
    print("^" + "".join("\\" + c if c in special else c for c in name.strip()) + "$")
EOF
)

export CARGO_PROFILE_DEV_DEBUG=line-tables-only
targets=${MUTANTS_TARGET_DIR:-$root/target/mutants}
export CARGO_BUILD_JOBS=${MUTANTS_CARGO_JOBS:-2}

# One crate's mutants (the files given, or all its rule files), tested by its own
# tests and the models.
mutants() {
  local crate=$1
  shift
  local package
  package=$(package_of "$crate")
  # One build directory per crate: each crate's feature set builds the dependencies
  # its own way, and two crates' runs can go side by side without a shared lock.
  CARGO_TARGET_DIR="$targets/$crate" nice -n 10 cargo mutants --package "$package" \
    --test-package "$package" --test-package reqwest-resilience-model \
    --jobs "$jobs" --baseline skip \
    --timeout "${MUTANTS_TIMEOUT:-600}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-1200}" \
    "${exclude_args[@]}" "$@"
}

case "$mode" in
  list)
    bash scripts/ensure-mutants.sh
    for c in ${crate:-server journal client}; do
      args=()
      for f in "${files[@]}"; do args+=(--re "^$(escape "$f"):"); done
      mutants "$c" --list "${args[@]}"
    done
    ;;

  in-diff)
    if [ -z "$base" ]; then
      base=$(git merge-base HEAD origin/main 2>/dev/null || git merge-base HEAD main)
    fi
    mapfile -t rules < <(rule_files)
    diff_file=$(mktemp)
    trap 'rm -f "$diff_file"' EXIT
    git diff "$base" -- "${rules[@]}" >"$diff_file"
    if [ ! -s "$diff_file" ]; then
      echo "mutants: no rule file changed since $(git rev-parse --short "$base"); nothing to mutate"
      exit 0
    fi
    bash scripts/ensure-mutants.sh
    status=0
    for c in $(git diff --name-only "$base" -- "${rules[@]}" | while read -r p; do crate_of_path "$p"; done | sort -u); do
      echo "-- mutants of the changed lines in the $c crate"
      # cargo-mutants creates its output directory, not the parents of it.
      mkdir -p "$targets/out"
      mutants "$c" --in-diff "$diff_file" --output "$targets/out/in-diff-$c" || status=$?
    done
    exit "$status"
    ;;

  run)
    [ -n "$crate" ] || { echo "mutants.sh: --crate server|journal|client (or --list, --in-diff)" >&2; exit 2; }
    bash scripts/ensure-mutants.sh
    args=()
    label=all
    if [ ${#files[@]} -gt 0 ]; then
      label=$(printf '%s\n' "${files[@]}" | sed 's#.*/##; s#\.rs$##' | paste -sd+ -)
      # (`--file` would add to the config's examine_globs; a name regex narrows them.)
      for f in "${files[@]}"; do args+=(--re "^$(escape "$f"):"); done
    fi
    if [ ${#res[@]} -gt 0 ]; then
      for r in "${res[@]}"; do args+=(--re "$r"); done
      label="re-$(date -u +%Y%m%dT%H%M%S)"
    fi
    if [ -n "$shard" ]; then
      args+=(--shard "$shard")
      label="$label-shard-${shard/\//-of-}"
    fi
    out="$targets/out/$crate-$label"
    mkdir -p "$out"
    started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    status=0
    mutants "$crate" --output "$out" "${args[@]}" || status=$?
    results="docs/mutants/results/$crate/$label"
    mkdir -p "$results"
    for outcome in caught missed timeout unviable; do
      sort "$out/mutants.out/$outcome.txt" >"$results/$outcome.txt" 2>/dev/null || : >"$results/$outcome.txt"
    done
    echo "$started" >"$results/when.txt"
    echo "mutants: results in $results (cargo-mutants exit $status)"
    python3 scripts/mutants-table.py
    exit "$status"
    ;;
esac
