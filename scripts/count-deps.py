#!/usr/bin/env python3
"""Counts the crates this crate's default features add to reqwest's own, and fails
when they grow.

The promise (README, "Weight"): a project that adds reqwest-resilience with its default
features compiles at most ALLOWED crates beyond what reqwest 0.13 with *its* default
features already brings, and no proc-macro crate beyond reqwest's (proc-macros and the
`syn` they need are what makes a build slow).

How: reqwest's own tree is read from a scratch project that depends on reqwest alone,
at the version in this workspace's Cargo.lock, with this lock file copied in (so both
trees resolve the same versions); this crate's from `cargo tree -p reqwest-resilience`
(its default features, normal edges, the host target). Crates are compared by name and
version: two versions of one crate are two crates to compile.

Usage: python3 scripts/count-deps.py   (prints the added crates; exit 1 when over)
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

# Today's count (the ceiling is 8): lower it when a crate goes, never raise
# it without a reason in the CHANGELOG.
ALLOWED = 7

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY = re.compile(r"^(\S+) v(\S+)(?: \(([^)]*)\))?")


def tree(args, cwd):
    """The set of (name, version) in `cargo tree`'s output, and the proc-macros."""
    command = ["cargo", "tree", "-e", "normal", "--prefix", "none"] + args
    result = None
    # Offline first (CI has every crate cached); online only when something is missing.
    for extra in (["--offline"], []):
        result = subprocess.run(command + extra, cwd=cwd, capture_output=True, text=True)
        if result.returncode == 0:
            break
    if result.returncode != 0:
        sys.exit(f"count-deps: {' '.join(command)} failed:\n{result.stderr}")
    crates, macros = set(), set()
    for line in result.stdout.splitlines():
        match = ENTRY.match(line.strip())
        if not match:
            continue
        crate = (match.group(1), match.group(2))
        crates.add(crate)
        if "proc-macro" in line:
            macros.add(crate)
    return crates, macros


def main():
    ours, our_macros = tree(["-p", "reqwest-resilience"], ROOT)
    reqwest_version = next(v for name, v in ours if name == "reqwest")
    with tempfile.TemporaryDirectory(prefix="count-deps-") as scratch:
        with open(os.path.join(scratch, "Cargo.toml"), "w") as manifest:
            manifest.write(
                '[package]\nname = "reqwest-only"\nversion = "0.0.0"\nedition = "2021"\n'
                f'[dependencies]\nreqwest = "={reqwest_version}"\n[workspace]\n'
            )
        os.mkdir(os.path.join(scratch, "src"))
        open(os.path.join(scratch, "src", "lib.rs"), "w").close()
        shutil.copy(os.path.join(ROOT, "Cargo.lock"), scratch)
        theirs, their_macros = tree([], scratch)
    theirs = {crate for crate in theirs if crate[0] != "reqwest-only"}
    added = sorted(crate for crate in ours - theirs if crate[0] != "reqwest-resilience")
    new_macros = sorted(our_macros - their_macros)

    print(f"reqwest {reqwest_version} with its default features: {len(theirs)} crates")
    print(f"reqwest-resilience's default features add {len(added)} (allowed: {ALLOWED}):")
    for name, version in added:
        print(f"  {name} {version}")
    failed = False
    if len(added) > ALLOWED:
        print(f"count-deps: {len(added)} crates added, more than {ALLOWED}", file=sys.stderr)
        failed = True
    if new_macros:
        listed = ", ".join(f"{name} {version}" for name, version in new_macros)
        print(f"count-deps: proc-macro crates beyond reqwest's: {listed}", file=sys.stderr)
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
