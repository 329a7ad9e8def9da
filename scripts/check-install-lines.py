#!/usr/bin/env python3
"""Runs every README's install lines that work before publishing, and checks that each
crate of this workspace a README tells you to `cargo add` has such a line beside it.

Until the crates are on crates.io, `cargo add reqwest-resilience` fails ("could not
find ... in registry"); every README therefore gives the path form too, for a checkout
of this repository: `cargo add <crate> --path path/to/reqwest-resilience/<member>`.
This script, per README, replaces `path/to/reqwest-resilience` with this checkout, runs
its path-form lines in a scratch project (offline, this workspace's Cargo.lock copied
in, so nothing is fetched), and has cargo resolve the result. The registry form is
checked for what can be checked before publishing: it names a member that is
published (not `publish = false`), which `cargo package` in CI verifies builds.

Usage: python3 scripts/check-install-lines.py   (exit 1 on a line that fails)
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READMES = ["README.md", "journal/README.md", "server/README.md", "storage/README.md"]
CHECKOUT = "path/to/reqwest-resilience"


def members():
    """Workspace package name -> publishable."""
    raw = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    return {p["name"]: p.get("publish") != [] for p in json.loads(raw)["packages"]}


def install_lines(readme):
    """The `cargo add` lines of a README's shell blocks, without their comments."""
    lines, in_shell = [], False
    for line in open(os.path.join(ROOT, readme), encoding="utf-8"):
        if line.startswith("```"):
            in_shell = line.strip() in ("```sh", "```bash", "```shell")
            continue
        command = line.split("#", 1)[0].strip()
        if in_shell and command.startswith("cargo add "):
            lines.append(command)
    return lines


def crates_of(command):
    """The crate names a `cargo add` line adds (its words before the first flag)."""
    names = []
    for word in shlex.split(command)[2:]:
        if word.startswith("-"):
            break
        names.append(word)
    return names


def run(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return result.returncode == 0, result.stderr.strip()


def main():
    workspace = members()
    failures = []
    for readme in READMES:
        lines = install_lines(readme)
        path_lines = [line for line in lines if " --path " in line]
        registry = {n for line in lines if " --path " not in line for n in crates_of(line)}
        with_path = {n for line in path_lines for n in crates_of(line)}
        for name in sorted(registry & workspace.keys()):
            if not workspace[name]:
                failures.append(f"{readme}: `cargo add {name}`, but {name} is not published")
            if name not in with_path:
                failures.append(f"{readme}: `cargo add {name}` has no `--path` form beside it")
        if not path_lines:
            continue
        with tempfile.TemporaryDirectory(prefix="install-lines-") as scratch:
            ok, err = run(["cargo", "init", "--lib", "--vcs", "none", "--name", "app"], scratch)
            if not ok:
                sys.exit(f"check-install-lines: cargo init failed: {err}")
            with open(os.path.join(scratch, "Cargo.toml"), "a") as manifest:
                manifest.write("\n[workspace]\n")  # not a member of an enclosing one
            shutil.copy(os.path.join(ROOT, "Cargo.lock"), scratch)
            for line in path_lines:
                command = shlex.split(line.replace(CHECKOUT, ROOT)) + ["--offline"]
                ok, err = run(command, scratch)
                print(f"{'ok  ' if ok else 'FAIL'} {readme}: {line}")
                if not ok:
                    failures.append(f"{readme}: `{line}` failed:\n{err}")
            ok, err = run(["cargo", "tree", "--offline", "--depth", "1"], scratch)
            if not ok:
                failures.append(f"{readme}: the added crates do not resolve:\n{err}")
    for failure in failures:
        print(f"check-install-lines: {failure}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
