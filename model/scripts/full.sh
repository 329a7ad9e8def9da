#!/usr/bin/env bash
# The models' full form: every model at its largest exhaustive size, plus a simulation
# where the target size does not fit (each MODEL line says exhaustive=true|false).
# Built with --release; takes about 20 minutes and under 2 GB on 2 cores. CI runs the
# bounded form (`check-models --bounded`, inside a minute).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo run --quiet --release -p reqwest-resilience-model --bin check-models -- --full
