#!/usr/bin/env bash
# The full form of the interop matrix: the client, the layer and the journal on
# their defaults × three servers × four situations, RUNS runs per cell (CI runs
# 3), once per seed, each seed printing its table of cells × (runs, effects,
# doubles, lost, unknowns, avoidable unknowns, worst time).
# RUNS=n, SEEDS="40 41 ..." and SERVERS=memory,sqlite,postgres change the run.
set -uo pipefail
cd "$(dirname "$0")/../.."
failed=0
for seed in ${SEEDS:-40 41 42}; do
  INTEROP_MATRIX_RUNS="${RUNS:-10}" INTEROP_MATRIX_SEED="$seed" \
    INTEROP_MATRIX_SERVERS="${SERVERS:-memory,sqlite,postgres}" \
    cargo test -p reqwest-resilience-interop --test matrix matrix_every_cell -- --nocapture 2>&1 |
    sed -n '/^matrix (seed/,/^$/p;/test result/p;/panicked/p' || failed=1
done
exit $failed
