#!/usr/bin/env bash
# The simulator against the runtime on the storage-bound experiment (docs/design.md §17): the same cluster
# file and trace run for real (`dualpath run`, modeled DS 27B, real KV through capped SNICs and libfabric)
# and simulated (`dualpath sim`, write-back through the SNIC as the runtime's pacer does). Prints the table
# and writes sim_validation.result.json (or $1). About 2 minutes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"  # the run below starts elsewhere
out="${1:-sim_validation.result.json}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
policies=basic,layerwise,dualpath_nosched,dualpath,oracle
# In the temporary directory: the cluster file's block store (a relative `dualpath-data/...`, about 3 GB after
# the five policies) is made there and goes with it, not left where the script was started.
(cd "$tmp" && "$bin" run --cluster "$here/storage_bound.toml" --trace "$here/storage_bound.jsonl" \
  --compare "$policies" --quiet --report "$tmp/run.json")
"$bin" sim --cluster "$here/storage_bound.toml" --trace "$here/storage_bound.jsonl" --compare "$policies" \
  --quiet --report "$tmp/sim.json"
python3 - "$tmp/run.json" "$tmp/sim.json" "$out" <<'PY'
import json, sys
run = {r["policy"]: r for r in json.load(open(sys.argv[1]))["runs"]}
sim = {r["policy"]: r for r in json.load(open(sys.argv[2]))["runs"]}
rows = []
for p, r in run.items():
    s = sim[p]
    de = lambda x: x["path_requests"]["de"]
    rows.append({"policy": p, "jct_run_s": r["jct_s"], "jct_sim_s": s["jct_s"],
                 "jct_error": s["jct_s"] / r["jct_s"] - 1,
                 "ttft_p50_run_s": r["ttft_s"]["p50"], "ttft_p50_sim_s": s["ttft_s"]["p50"],
                 "ttft_p50_error": s["ttft_s"]["p50"] / r["ttft_s"]["p50"] - 1,
                 "de_turns_run": de(r), "de_turns_sim": de(s), "turns": r["turns"],
                 "jct_over_bound_run": r.get("jct_over_bound")})
json.dump({"rows": rows}, open(sys.argv[3], "w"), indent=2)
print("| policy | JCT run / sim (s) | JCT error | TTFT p50 run / sim (s) | TTFT p50 error | DE-path turns run / sim |")
print("|---|---|---|---|---|---|")
for x in rows:
    print(f"| {x['policy']} | {x['jct_run_s']:.2f} / {x['jct_sim_s']:.2f} | {100*x['jct_error']:+.1f}% | "
          f"{x['ttft_p50_run_s']:.3f} / {x['ttft_p50_sim_s']:.3f} | {100*x['ttft_p50_error']:+.1f}% | "
          f"{x['de_turns_run']} / {x['de_turns_sim']} of {x['turns']} |")
PY
