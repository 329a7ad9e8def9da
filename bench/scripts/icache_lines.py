#!/usr/bin/env python3
"""Instruction-cache footprint per request, from a callgrind profile.

For each function whose name matches PATTERN, counts the distinct 64-byte lines of
machine code that run on (nearly) every request, and the instructions that run there.
A request through a layer costs roughly one instruction-cache miss per such line when
the whole working set is larger than the L1 instruction cache (as bare reqwest's
already is), so this is the figure to shrink, more than the instruction count.

    CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
        cargo build --release -p reqwest-resilience-bench --bin bench
    valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=/tmp/cg.out \
        target/release/bench --profile resilience 3000
    python3 bench/scripts/icache_lines.py /tmp/cg.out 3000 'reqwest_resilience::'

REQUESTS is the count given to --profile: an instruction counts as "per request" when
it ran at least 0.9 x REQUESTS times.
"""

import collections
import re
import sys

POSITION = re.compile(r"^(0x[0-9a-f]+|\+\d+|-\d+|\*)\s+\S+\s+(\d+)")
FUNCTION = re.compile(r"^fn=\((\d+)\)(?: (.*))?$")
CALLEE = re.compile(r"^cfn=\((\d+)\)(?: (.*))?$")


def executed_addresses(path):
    """{function: {address: self cost}} from a callgrind file with instr positions."""
    names, current, last, in_call = {}, None, 0, False
    costs = collections.defaultdict(dict)
    with open(path, errors="replace") as profile:
        for line in profile:
            if match := FUNCTION.match(line):
                number, name = match.groups()
                if name:
                    names[number] = name
                current = names.get(number)
                continue
            if match := CALLEE.match(line):
                number, name = match.groups()
                if name:
                    names[number] = name
                continue
            if line.startswith("calls="):
                in_call = True  # the next position line is the call's inclusive cost
                continue
            if match := POSITION.match(line):
                position, cost = match.groups()
                if position.startswith("0x"):
                    last = int(position, 16)
                elif position != "*":
                    last += int(position)
                if in_call:
                    in_call = False
                elif current:
                    addresses = costs[current]
                    addresses[last] = addresses.get(last, 0) + int(cost)
    return costs


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, requests, pattern = sys.argv[1], float(sys.argv[2]), re.compile(sys.argv[3])
    rows = []
    for function, addresses in executed_addresses(path).items():
        if not pattern.search(function):
            continue
        hot = [address for address, cost in addresses.items() if cost >= 0.9 * requests]
        lines = {address // 64 for address in hot}
        if lines:
            rows.append((len(lines), len(hot), function))
    rows.sort(reverse=True)
    for lines, instructions, function in rows:
        print(f"{lines:4d} lines {instructions:5d} instructions  {function[:110]}")
    print(f"{sum(row[0] for row in rows)} lines in all")


if __name__ == "__main__":
    main()
