#!/usr/bin/env bash
# Online capacity (docs/design.md §11, §12): the storage-bound cluster of run.sh serving agents that arrive as a
# Poisson process. Each policy runs at rising rates until one fails the paper's SLO (TTFT within 4 s,
# here the peak mean over 10 s windows; mean TPOT within 50 ms); its capacity is the highest rate that
# met it. The 40 trajectories are replayed four times (160 agents): the arrival window must outlast an
# agent's eight turns, or a closed population throttles itself and hides the queue. About 14 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
trace="$(mktemp --suffix=.jsonl)"
trap 'rm -f "$trace"' EXIT
for _ in 1 2 3 4; do cat "$here/storage_bound.jsonl"; done >"$trace"
"$bin" run --cluster "$here/storage_bound.toml" --trace "$trace" --compare "${POLICIES:-basic,dualpath}" \
  --aps-sweep "${APS:-1.2,1.6,2.0,2.4,2.8,3.2,4.0,4.8}" --report "${1:-online_capacity.result.json}"
