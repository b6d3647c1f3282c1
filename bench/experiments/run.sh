#!/usr/bin/env bash
# The storage-bound experiment: modeled DS 27B on a 1P2D cluster whose storage NICs are capped, so one
# SNIC cannot feed the prefill engine and three nearly can. Compares every data path; about 2 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
"$bin" run --cluster "$here/storage_bound.toml" --trace "$here/storage_bound.jsonl" \
  --compare basic,layerwise,dualpath,oracle --report "${1:-storage_bound.result.json}"
