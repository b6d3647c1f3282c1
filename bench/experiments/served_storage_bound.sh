#!/usr/bin/env bash
# The storage-bound experiment over HTTP (docs/experiments.md, "The storage-bound experiment, served"): for each
# policy a `dualpath serve` of storage_bound.toml, loaded by `dualpath bench serve` with the experiment's agents
# as HTTP clients (each a conversation of streamed completions).
#   served_storage_bound.sh offline [OUT]   the 40 agents of run.sh at once (about 2 minutes): table, report
#                                           (serve_storage_bound.result.json; `dualpath plot` draws it)
#   served_storage_bound.sh capacity [OUT]  online_capacity.sh's sweep (160 agents, Poisson arrivals, the same
#                                           rates and SLO; about 15 minutes): capacities and their ratio
#                                           (serve_capacity.result.json)
# In a sweep each rate's prompts come from a seed of their own, so the store the server keeps across the sweep
# holds none of the blocks of the rates before it (`run` starts every rate on a cold store of its own).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
mode="${1:-offline}"
case "$mode" in
  offline) out="${2:-serve_storage_bound.result.json}" ;;
  capacity) out="${2:-serve_capacity.result.json}" ;;
  *) echo "usage: $0 offline|capacity [OUT]" >&2; exit 2 ;;
esac
port="${PORT:-8124}"
policies="${POLICIES:-basic,dualpath}"
tmp="$(mktemp -d)"
source "$here/serve_lib.sh"
trap 'serve_cleanup; rm -rf "$tmp"' EXIT
if [[ "$mode" == capacity ]]; then
  for _ in 1 2 3 4; do cat "$here/storage_bound.jsonl"; done >"$tmp/trace.jsonl"
  load=(--trace "$tmp/trace.jsonl" --aps-sweep "${APS:-1.2,1.6,2.0,2.4,2.8,3.2,4.0,4.8}")
else
  load=(--trace "$here/storage_bound.jsonl")
fi

for policy in ${policies//,/ }; do
  # As many serving clients as `run` has agents in flight: none is turned away (429) where `run` queues it.
  start_serve "$tmp/$policy" --cluster "$here/storage_bound.toml" --policy "$policy" --clients "${CLIENTS:-160}"
  "$bin" bench serve --url "127.0.0.1:$port" --label "$policy" "${load[@]}" --report "$tmp/$policy.json"
  stop_serve
done

# One report of every policy's run (or sweep), as `run --compare` writes it.
python3 - "$tmp" "$policies" "$out" "$mode" <<'PY'
import json, sys
tmp, policies, out, mode = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
parts = [json.load(open(f"{tmp}/{p}.json")) for p in policies]
if mode == "offline":
    merged = {"runs": [r for part in parts for r in part["runs"]]}
    jct = {r["policy"]: r["jct_s"] for r in merged["runs"]}
    if len(policies) == 2:
        merged["speedup"] = {f"{policies[1]}_vs_{policies[0]}": jct[policies[0]] / jct[policies[1]]}
else:
    merged = {"slo": parts[0]["slo"], "policies": {p: part["policies"][p] for p, part in zip(policies, parts)}}
    caps = {p: merged["policies"][p]["capacity_aps"] for p in policies}
    if len(policies) == 2 and caps[policies[0]] > 0:
        merged["capacity_ratio"] = {f"{policies[1]}_vs_{policies[0]}": caps[policies[1]] / caps[policies[0]]}
merged["client"] = "bench serve"
json.dump(merged, open(out, "w"), indent=2)
for k, v in {**merged.get("speedup", {}), **merged.get("capacity_ratio", {})}.items():
    print(f"{'capacity ' if mode == 'capacity' else ''}{k} = {v:.2f}")
PY
