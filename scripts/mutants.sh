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
#   scripts/mutants.sh --crate client --lib-first [--shard 1/4] [--file ...] [--re ...]
#       The same mutants, screened first by the crate's unit tests alone (`cargo test
#       -p <crate> --lib`: one test binary to build per mutant, not every test target,
#       example and the models). A mutant they catch is caught by the full command too,
#       which runs those same tests among the rest, so it is recorded as caught. Each
#       mutant the screen misses (or times out on) is run again by its exact name with
#       the full command, and only that second verdict is recorded; unviable ones are
#       recorded as unviable. `how.txt` in the results says which pass judged which.
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
# mutant's tests / build), MUTANTS_SCREEN_TIMEOUT (seconds per mutant's unit tests in
# --lib-first's screen, default 120). Everything runs under `nice -n 10`.
#
# Equivalent mutants are listed in docs/mutants-equivalent.txt, each with its reason;
# each line becomes an exact --exclude-re (file, line, column, mutation).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() {
  sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

crate=""
shard=""
jobs=1
mode=run
lib_first=""
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
    --lib-first) lib_first=1; shift ;;
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

# The same mutants judged by the crate's unit tests only: `--lib` goes to the build
# (`cargo test --no-run`) as well as to the test run, so each mutant builds the one
# test binary of the library, not every test target, example and the models.
screen() {
  local crate=$1
  shift
  local package
  package=$(package_of "$crate")
  CARGO_TARGET_DIR="$targets/$crate" nice -n 10 cargo mutants --package "$package" \
    --test-package "$package" --cargo-arg=--lib \
    --jobs "$jobs" --baseline skip \
    --timeout "${MUTANTS_SCREEN_TIMEOUT:-120}" --build-timeout "${MUTANTS_BUILD_TIMEOUT:-1200}" \
    "${exclude_args[@]}" "$@"
}

# The files of the listed mutants (stdin) whose names match one of the regexes given.
MATCHED_FILES='import re, sys
names = [re.compile(r) for r in sys.argv[1:]]
print("\n".join(sorted({line.split(":")[0] for line in sys.stdin
                         if any(n.search(line.rstrip("\n")) for n in names)})))'

# `--exclude` for every rule file of a crate but the given ones. A run narrowed by name
# (`--re`) still runs the struct-field deletions of every rule file (cargo-mutants 27.1
# never matches their names); excluding the other files' paths leaves them out.
other_files_excluded() {
  local crate=$1
  shift
  local f keep
  while IFS= read -r f; do
    [ "$(crate_of_path "$f")" = "$crate" ] || continue
    for keep in "$@"; do [ "$f" = "$keep" ] && continue 2; done
    printf '%s\n' --exclude "$f"
  done < <(rule_files)
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
    results="docs/mutants/results/$crate/$label"
    mkdir -p "$results"
    status=0
    if [ -z "$lib_first" ]; then
      mutants "$crate" --output "$out" "${args[@]}" || status=$?
      for outcome in caught missed timeout unviable; do
        sort "$out/mutants.out/$outcome.txt" >"$results/$outcome.txt" 2>/dev/null || : >"$results/$outcome.txt"
      done
    else
      if [ ${#files[@]} -gt 0 ]; then
        mapfile -t narrow < <(other_files_excluded "$crate" "${files[@]}")
        args+=("${narrow[@]}")
      elif [ ${#res[@]} -gt 0 ]; then
        # The files of the mutants the names really match.
        mapfile -t matched < <(mutants "$crate" --list "${args[@]}" |
          python3 -c "$MATCHED_FILES" "${res[@]}")
        mapfile -t narrow < <(other_files_excluded "$crate" "${matched[@]}")
        args+=("${narrow[@]}")
      fi
      screen "$crate" --output "$out/screen" "${args[@]}" || status=$?
      # 2: missed mutants, 3: timeouts; anything else but 0 is a failed run.
      case "$status" in 0 | 2 | 3) status=0 ;; *) echo "mutants: the screen failed (cargo-mutants exit $status)" >&2; exit "$status" ;; esac
      screened="$out/screen/mutants.out"
      sort -u "$screened/missed.txt" "$screened/timeout.txt" 2>/dev/null >"$out/again.txt" || :
      for outcome in caught missed timeout unviable; do : >"$results/$outcome.txt"; done
      sort "$screened/caught.txt" >"$results/caught.txt" 2>/dev/null || :
      sort "$screened/unviable.txt" >"$results/unviable.txt" 2>/dev/null || :
      if [ -s "$out/again.txt" ]; then
        again=()
        while IFS= read -r name; do again+=(--re "^$(escape "$name")\$"); done <"$out/again.txt"
        mapfile -t again_files < <(sed 's/:.*//' "$out/again.txt" | sort -u)
        mapfile -t narrow < <(other_files_excluded "$crate" "${again_files[@]}")
        mutants "$crate" --output "$out/full" "${again[@]}" "${narrow[@]}" || status=$?
        for outcome in caught missed timeout unviable; do
          if [ -f "$out/full/mutants.out/$outcome.txt" ]; then
            sort -u "$results/$outcome.txt" "$out/full/mutants.out/$outcome.txt" -o "$results/$outcome.txt"
          fi
        done
      fi
      {
        echo "lib-first: every mutant screened by \`cargo test -p $(package_of "$crate") --lib --all-features\`;"
        echo "caught there: $(wc -l <"$screened/caught.txt" 2>/dev/null || echo 0), unviable: $(wc -l <"$screened/unviable.txt" 2>/dev/null || echo 0)."
        echo "Judged again by the full command (the crate's tests and the models), whose verdict is recorded:"
        if [ -s "$out/again.txt" ]; then cat "$out/again.txt"; else echo "(none)"; fi
      } >"$results/how.txt"
    fi
    echo "$started" >"$results/when.txt"
    echo "mutants: results in $results (cargo-mutants exit $status)"
    python3 scripts/mutants-table.py
    exit "$status"
    ;;
esac
