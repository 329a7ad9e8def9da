#!/usr/bin/env python3
"""Checks each published crate's `rust-version` against what its dependencies need.

The decision (CHANGELOG, 0.2.0): a crate declares the minimum Rust version that its
*normal* dependencies in Cargo.lock declare — build dependencies included, since they
are compiled by the same toolchain; dev-dependencies excluded, since users never build
them. A declared version below that is a promise the lock file breaks; this script
fails on it and prints which dependency needs more.

Reads `cargo metadata --locked --all-features` (every optional dependency counts: a
user may turn any feature on), walks the resolve graph from each member that will be
published, and follows only edges whose dependency kinds include "normal" or "build".
No network: the registry's cached manifests are enough.

Usage: python3 scripts/check-msrv.py   (exit 1 on a mismatch)
"""

import json
import subprocess
import sys


def version_key(text):
    """'1.85' or '1.85.1' as a comparable tuple (missing parts are 0)."""
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    raw = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    metadata = json.loads(raw)
    packages = {package["id"]: package for package in metadata["packages"]}
    nodes = {node["id"]: node for node in metadata["resolve"]["nodes"]}
    members = metadata["workspace_members"]

    failed = False
    for member in members:
        package = packages[member]
        # `publish = false` (the benchmark) is an empty list in cargo metadata.
        if package.get("publish") == []:
            continue
        declared = package.get("rust_version")
        needed, needed_by = "0", None
        seen, stack = set(), [member]
        while stack:
            current = stack.pop()
            for dep in nodes[current]["deps"]:
                kinds = {kind["kind"] for kind in dep["dep_kinds"]}
                if not kinds & {None, "build"}:
                    continue  # dev-dependencies only
                if dep["pkg"] in seen:
                    continue
                seen.add(dep["pkg"])
                stack.append(dep["pkg"])
                wanted = packages[dep["pkg"]].get("rust_version")
                if wanted and version_key(wanted) > version_key(needed):
                    needed = wanted
                    needed_by = packages[dep["pkg"]]
        who = f"{needed_by['name']} {needed_by['version']}" if needed_by else "nothing"
        line = (
            f"{package['name']}: rust-version {declared}; normal dependencies "
            f"({len(seen)} packages) need {needed} ({who})"
        )
        if declared is None or version_key(declared) < version_key(needed):
            print(f"MSRV MISMATCH {line}")
            failed = True
        else:
            print(f"MSRV ok {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
