#!/usr/bin/env bash
# Online capacity (DESIGN §11, §12): the storage-bound cluster of run.sh serving agents that arrive as a
# Poisson process. Each policy runs at rising rates until one fails the paper's SLO (TTFT within 4 s,
# here the peak mean over 10 s windows; mean TPOT within 50 ms); its capacity is the highest rate that
# met it. The 40 trajectories are replayed twice (80 agents) so that a rate above capacity builds a
# visible queue. About 12 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
trace="$(mktemp --suffix=.jsonl)"
trap 'rm -f "$trace"' EXIT
cat "$here/storage_bound.jsonl" "$here/storage_bound.jsonl" >"$trace"
"$bin" run --cluster "$here/storage_bound.toml" --trace "$trace" --compare basic,dualpath \
  --aps-sweep "${APS:-0.8,1.2,1.6,2.0,2.4,2.8,3.2,3.6}" --report "${1:-online_capacity.result.json}"
