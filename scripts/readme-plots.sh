#!/usr/bin/env bash
# Regenerates the README's pictures (docs/img/): the storage-bound experiment run for real
# (bench/experiments/run.sh, about 2 minutes) and its online sweep result, drawn by `dualpath plot`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${DUALPATH_BIN:-$root/build/apps/dualpath}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
DUALPATH_BIN="$bin" "$root/bench/experiments/run.sh" "$tmp/storage_bound.json" > /dev/null
mkdir -p "$root/docs/img"
"$bin" plot "$tmp/storage_bound.json" -o "$root/docs/img/storage_bound"
"$bin" plot "$root/bench/experiments/online_capacity.result.json" -o "$root/docs/img/online_capacity"
"$bin" plot "$root/bench/experiments/sim_validation.result.json" -o "$root/docs/img/sim_validation"
