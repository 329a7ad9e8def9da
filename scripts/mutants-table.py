#!/usr/bin/env python3
"""Summarises the committed cargo-mutants results in docs/mutants.md.

Lists the mutants of the tree as it is now (`cargo mutants --list`) and reads every run under docs/mutants/results/<crate>/<label>/ (the outcome lists
scripts/mutants.sh copies there, and `when.txt`, the run's UTC start) and the
equivalent mutants of docs/mutants-equivalent.txt. A mutant run more than once (a
survivor run again after its kill-test) counts with its latest outcome. Rewrites the
end of docs/mutants.md from its `<!-- results -->` marker: one row per rule file of
.cargo/mutants.toml (files not run yet say so), then one `MUTANTS` line per crate,
the document's last lines.
"""

import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "mutants" / "results"
EQUIVALENT = ROOT / "docs" / "mutants-equivalent.txt"
REPORT = ROOT / "docs" / "mutants.md"
OUTCOMES = ("caught", "missed", "timeout", "unviable")
CRATES = {"server": "tower-idempotency", "journal": "reqwest-resilience-journal",
          "client": "reqwest-resilience"}
NAME = re.compile(r"^(?P<file>[^:]+):\d+:\d+: ")


def crate_of(path):
    if path.startswith("server/"):
        return "server"
    if path.startswith("journal/"):
        return "journal"
    return "client"


def latest_outcomes():
    """Each mutant's outcome in the latest run that tried it."""
    runs = []
    for when in RESULTS.glob("*/*/when.txt"):
        runs.append((when.read_text().strip(), when.parent))
    outcome = {}
    for _, run in sorted(runs):
        for kind in OUTCOMES:
            listing = run / f"{kind}.txt"
            if listing.exists():
                for line in listing.read_text().splitlines():
                    if line.strip():
                        outcome[line.strip()] = kind
    return outcome


def current_mutants():
    """The mutants of the tree as it is now (a result from before a line moved or
    changed no longer counts: its mutant is new and waits for a run)."""
    listing = subprocess.run(["cargo", "mutants", "--list", "--workspace"], cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout
    return {line.strip() for line in listing.splitlines() if NAME.match(line.strip())}


def equivalents():
    names = []
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            names.append(line.partition(" # ")[0].strip())
    return names


def main():
    with open(ROOT / ".cargo" / "mutants.toml", "rb") as f:
        files = tomllib.load(f)["examine_globs"]
    current = current_mutants()
    outcome = latest_outcomes()
    equivalent = set(equivalents()) & current
    counts = {path: dict.fromkeys(OUTCOMES + ("equivalent", "not run"), 0) for path in files}
    for name in current:
        match = NAME.match(name)
        if not match or match["file"] not in counts:
            continue
        kind = "equivalent" if name in equivalent else outcome.get(name, "not run")
        counts[match["file"]][kind] += 1

    rows = ["| file | caught | missed | timeout | unviable | equivalent | not run | score |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    totals = {crate: dict.fromkeys(("viable", "caught", "missed", "equivalent"), 0)
              for crate in CRATES}
    not_run = []
    for path in files:
        c = counts[path]
        tried = c["caught"] + c["missed"] + c["timeout"] + c["unviable"]
        if tried == 0:
            not_run.append(path)
            continue
        judged = c["caught"] + c["missed"] + c["timeout"]
        score = f"{100 * c['caught'] / judged:.1f} %" if judged else "–"
        rows.append(f"| `{path}` | {c['caught']} | {c['missed']} | {c['timeout']} | "
                    f"{c['unviable']} | {c['equivalent']} | {c['not run']} | {score} |")
        t = totals[crate_of(path)]
        t["viable"] += judged + c["equivalent"]
        t["caught"] += c["caught"]
        t["missed"] += c["missed"] + c["timeout"]
        t["equivalent"] += c["equivalent"]

    lines = ["<!-- results -->", "",
             "Each mutant of the tree as it is now, with its latest outcome (score: caught",
             "of caught, missed and timed out):", "", *rows, ""]
    if not_run:
        lines += ["Not run yet: " + ", ".join(f"`{p}`" for p in not_run) + ".", ""]
    lines += ["Per crate, over the mutants run so far, not the whole set (the table's \"not run\"",
              "and the files not run yet are the rest; viable = caught + missed + timeouts +",
              "equivalent; a timeout counts as missed here):", ""]
    for crate, package in CRATES.items():
        t = totals[crate]
        lines.append(f"MUTANTS crate={package} viable={t['viable']} caught={t['caught']} "
                     f"missed={t['missed']} equivalent={t['equivalent']}")

    text = REPORT.read_text(encoding="utf-8")
    start = text.find("<!-- results -->")
    if start < 0:
        sys.exit("docs/mutants.md: no <!-- results --> marker")
    text = text[:start] + "\n".join(lines) + "\n"
    REPORT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
