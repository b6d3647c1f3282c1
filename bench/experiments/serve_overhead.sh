#!/usr/bin/env bash
# What the HTTP front end costs (docs/guide/serve.md, "Load"): the same workload on the same cluster, once through
# `dualpath run` (in-process agent clients) and once through `dualpath serve` driven by `dualpath bench serve`
# (each agent a conversation of streamed text completions over loopback). The embedded default cluster and its
# demo workload, policies basic and dualpath, REPS times each (default 3), alternating; a fresh store every time.
# Prints the medians and writes serve_overhead.result.json (or $1). About 1 minute per repetition.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
out="${1:-serve_overhead.result.json}"
reps="${REPS:-3}"
port="${PORT:-8123}"
tmp="$(mktemp -d)"
source "$here/serve_lib.sh"
trap 'serve_cleanup; rm -rf "$tmp"' EXIT

for i in $(seq 1 "$reps"); do
  for policy in basic dualpath; do
    (cd "$tmp" && rm -rf dualpath-data &&
      "$bin" run --policy "$policy" --verify-every 0 --quiet --report "$tmp/run-$policy-$i.json")
    # The server's own report (what it saw of each request) splits the client's TTFT: cluster or front end.
    start_serve "$tmp/srv" --policy "$policy" --report "$tmp/srv-$policy-$i.json"
    "$bin" bench serve --url "127.0.0.1:$port" --label "$policy" --quiet --report "$tmp/bench-$policy-$i.json"
    stop_serve
  done
done

python3 - "$tmp" "$reps" "$out" <<'PY'
import json, statistics, sys
tmp, reps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = []
for policy in ("basic", "dualpath"):
    run = [json.load(open(f"{tmp}/run-{policy}-{i}.json"))["runs"][0] for i in range(1, reps + 1)]
    http = [json.load(open(f"{tmp}/bench-{policy}-{i}.json"))["runs"][0] for i in range(1, reps + 1)]
    srv = [json.load(open(f"{tmp}/srv-{policy}-{i}.json"))["runs"][0] for i in range(1, reps + 1)]
    med = lambda rs, f: statistics.median(f(r) for r in rs)
    jct = lambda r: r["jct_s"]
    ttft = lambda r: r["ttft_s"]["p50"]
    rows.append({"policy": policy, "turns": run[0]["turns"],
                 "jct_run_s": med(run, jct), "jct_http_s": med(http, jct),
                 "ttft_p50_run_s": med(run, ttft), "ttft_p50_http_s": med(http, ttft),
                 "ttft_p50_server_s": med(srv, ttft),
                 "jct_runs_s": [jct(r) for r in run], "jct_http_runs_s": [jct(r) for r in http],
                 "http_failed_turns": sum(r["failed_turns"] for r in http)})
json.dump({"reps": reps, "rows": rows}, open(out, "w"), indent=2)
print("| policy | turns | JCT run / HTTP (s, median) | JCT HTTP / run | TTFT p50 run / server / HTTP (ms) | difference (ms) |")
print("|---|---|---|---|---|---|")
for x in rows:
    print(f"| {x['policy']} | {x['turns']} | {x['jct_run_s']:.2f} / {x['jct_http_s']:.2f} | "
          f"{x['jct_http_s'] / x['jct_run_s']:.3f} | {1e3 * x['ttft_p50_run_s']:.1f} / {1e3 * x['ttft_p50_server_s']:.1f} / "
          f"{1e3 * x['ttft_p50_http_s']:.1f} | "
          f"{1e3 * (x['ttft_p50_http_s'] - x['ttft_p50_run_s']):+.1f} |")
PY
