#!/usr/bin/env bash
# Online capacity (DESIGN §11, §12): the storage-bound cluster of run.sh serving agents that arrive as a
# Poisson process. Every policy runs at every rate of the sweep; a policy's capacity is the highest rate
# whose mean TTFT stays within 4 s and mean TPOT within 50 ms (the paper's SLO). The 40 trajectories are
# replayed twice (80 agents) so that a rate above capacity builds a visible queue. About 13 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
trace="$(mktemp --suffix=.jsonl)"
trap 'rm -f "$trace"' EXIT
cat "$here/storage_bound.jsonl" "$here/storage_bound.jsonl" >"$trace"
"$bin" run --cluster "$here/storage_bound.toml" --trace "$trace" --compare basic,dualpath \
  --aps-sweep "${APS:-0.8,1.2,1.6,2.0,2.4,2.8}" --report "${1:-online_capacity.result.json}"
