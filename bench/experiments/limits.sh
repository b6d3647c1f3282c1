#!/usr/bin/env bash
# Every layer against the limit of the machine it runs on, in one run (docs/experiments.md, "Limits"):
#   compute    cpu prefill GFLOP/s / OpenBLAS sgemm on the model's shapes; cpu decode bytes/s / memory bandwidth
#   transport  shm Layer Block writes / memcpy; tcp the same
#   storage    block store reads / fio reading the same block files at the same depth; the same through the SNIC gate
#   schedule   µs per policy decision at 1,152 engines; the scheduler actor's assignments per second
#   runtime    `dualpath run` JCT / `dualpath sim` JCT on the storage-bound experiment, every policy, and
#              dualpath's run JCT over its lower bound (the report's jct_over_bound)
# Each benchmark takes the median of REPEATS rounds (default 3); its ratios are taken per round, so both
# sides of a ratio see the same load. Prints a Markdown table and writes limits.result.json (or $1).
# DUALPATH_BIN picks the binary (to compare builds); SKIP_RUNTIME=1 leaves out the 2-minute runtime part.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
out="${1:-limits.result.json}"
repeats="${REPEATS:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step() { echo "limits: $*" >&2; }
step "compute"
"$bin" bench compute --repeats "$repeats" --json >"$tmp/compute.json"
# One request alone (an agent served by itself, a server's common case): the weights' share of the bytes is larger.
"$bin" bench compute --decode-batch 1 --repeats "$repeats" --json >"$tmp/compute_one.json"
step "transport (shm, tcp)"
"$bin" bench transport --provider shm --repeats "$repeats" --json >"$tmp/shm.json"
# Blocks cycling through 1 GiB copy from DRAM, as a node's buffers of gigabytes do; 64 MiB stays in a large
# last-level cache, where the kernel's single copy (CMA) is slower than memcpy itself (docs/experiments.md).
if "$bin" bench transport --help | grep -q -- --span-bytes; then
  "$bin" bench transport --provider shm --span-bytes 1073741824 --repeats "$repeats" --json >"$tmp/shm_dram.json"
fi
# The scaled experiments' Layer Blocks (16 tokens x 656 B of DeepSeek V3.2's MLA cache): a write of each is a
# system call on shm, and four gathered into one write (a pass's fetch of a layer) a call for four.
if "$bin" bench transport --help | grep -q -- --gather; then
  for g in 1 4; do
    "$bin" bench transport --provider shm --block-bytes 10496 --span-bytes 8396800 --total-bytes 268697600 \
      --gather "$g" --repeats "$repeats" --json >"$tmp/shm_small_$g.json"
  done
fi
"$bin" bench transport --provider tcp --repeats "$repeats" --json >"$tmp/tcp.json"
step "storage"
mkdir -p "$tmp/store"
# The virtual disk's speed moves by up to 1.7x from one pass to the next, so the storage ratios take three
# times the passes, each of 1 GiB (docs/experiments.md, `bench storage`).
"$bin" bench storage --dir "$tmp/store" --blocks 1024 --repeats "$((repeats * 3))" --json >"$tmp/storage.json"
step "schedule (policy, actor)"
"$bin" bench schedule --repeats "$repeats" --json >"$tmp/policy.json"
if "$bin" bench schedule --help | grep -q -- --actor; then
  "$bin" bench schedule --actor --repeats "$repeats" --json >"$tmp/actor.json"
fi
if [[ "${SKIP_RUNTIME:-0}" != 1 ]]; then
  step "runtime against the simulator (about 2 minutes)"
  DUALPATH_BIN="$bin" "$here/sim_validation.sh" "$tmp/sim.json" >/dev/null
fi

python3 - "$tmp" "$out" <<'PY'
import json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
def load(name):
    p = os.path.join(tmp, name)
    return json.load(open(p)) if os.path.exists(p) else {}
c, shm, tcp, st = load("compute.json"), load("shm.json"), load("tcp.json"), load("storage.json")
c1 = load("compute_one.json")
shm_dram = load("shm_dram.json")
pol, act, sim = load("policy.json"), load("actor.json"), load("sim.json")
rows = []
def row(layer, what, value, limit, ratio, goal, higher_is_better=True):
    met = None if ratio is None or goal is None else (ratio >= goal if higher_is_better else ratio <= goal)
    rows.append({"layer": layer, "what": what, "value": value, "limit": limit, "ratio": ratio, "goal": goal,
                 "goal_is": "at least" if higher_is_better else "at most", "met": met})
# Older builds named the prefill ratio differently and had no memory roof.
prefill_ratio = c.get("prefill_vs_sgemm", c.get("gflop_ratio_vs_sgemm"))
row("compute", "cpu prefill GFLOP/s vs sgemm (small, 4096+512)", c.get("gflop_per_s"), c.get("sgemm_gflop_per_s"),
    prefill_ratio, 0.8)
row("compute", "cpu decode GB/s vs memory read bandwidth (batch 8)",
    c["decode_bytes"] / c["decode_step_s"] / 1e9 if c.get("decode_bytes") else None, c.get("memory_gb_per_s"),
    c.get("decode_vs_bandwidth"), 0.8)
# The same step against its roofline (builds that report it): each part bound by its bytes over the bandwidth or
# its FLOPs over sgemm, whichever is longer; at batch 8 the bf16 linear layers are bound by arithmetic on AVX2.
if c.get("decode_vs_roof"):
    row("compute", "  the same step vs its roofline (bytes or FLOPs, each part)", None, None, c["decode_vs_roof"], None)
# Where decode's time goes (builds whose bench reports the parts): each part's bytes over its seconds, against
# the same probe's median; no goal of their own.
if c.get("decode_attention_s") and c.get("decode_linear_s") and c.get("decode_kv_bytes") and c.get("memory_gb_per_s"):
    kv_gbs = c["decode_kv_bytes"] / c["decode_attention_s"] / 1e9
    w_gbs = (c["decode_bytes"] - c["decode_kv_bytes"]) / c["decode_linear_s"] / 1e9
    row("compute", "  its attention: KV GB/s vs the same bandwidth", kv_gbs, c["memory_gb_per_s"],
        kv_gbs / c["memory_gb_per_s"], None)
    row("compute", "  its linear layers: weights GB/s vs the same bandwidth", w_gbs, c["memory_gb_per_s"],
        w_gbs / c["memory_gb_per_s"], None)
if c1.get("decode_bytes"):
    row("compute", "cpu decode GB/s vs memory read bandwidth (batch 1)", c1["decode_bytes"] / c1["decode_step_s"] / 1e9,
        c1.get("memory_gb_per_s"), c1.get("decode_vs_bandwidth"), None)
row("transport", "shm Layer Block writes GB/s vs memcpy (64 MiB span: in cache)", shm.get("gb_per_s"),
    shm.get("memcpy_gb_per_s"), shm.get("ratio_to_memcpy"), 0.9)
if shm_dram:
    row("transport", "shm Layer Block writes GB/s vs memcpy (1 GiB span: DRAM)", shm_dram.get("gb_per_s"),
        shm_dram.get("memcpy_gb_per_s"), shm_dram.get("ratio_to_memcpy"), 0.9)
for g in (1, 4):
    small = load(f"shm_small_{g}.json")
    if small:
        what = "one a write" if g == 1 else f"{g} gathered a write"
        row("transport", f"shm 10.5-KB Layer Blocks ({what}) GB/s vs memcpy", small.get("gb_per_s"),
            small.get("memcpy_gb_per_s"), small.get("ratio_to_memcpy"), 0.9)
row("transport", "tcp Layer Block writes GB/s vs memcpy", tcp.get("gb_per_s"), tcp.get("memcpy_gb_per_s"),
    tcp.get("ratio_to_memcpy"), None)
row("storage", "block store reads GB/s vs fio", st.get("read_gb_per_s"), st.get("fio_read_gb_per_s"),
    st.get("read_vs_fio"), 0.95)
row("storage", "the same through the SNIC gate, checksums checked", st.get("gate_read_gb_per_s"),
    st.get("fio_read_gb_per_s"), st.get("gate_vs_fio"), 0.95)
row("schedule", "policy µs per decision (1,152 engines)", pol.get("us_per_request"), 5.0,
    pol.get("us_per_request", 0) / 5.0 if pol else None, 1.0, higher_is_better=False)
if act:
    row("schedule", "scheduler actor assignments/s (1,152 engines)", act["assignments_per_s"], 100000,
        act["assignments_per_s"] / 100000, 1.0)
for r in sim.get("rows", []):
    row("runtime", f"run JCT vs sim JCT, storage-bound, {r['policy']}", r["jct_run_s"], r["jct_sim_s"],
        r["jct_run_s"] / r["jct_sim_s"], 1.10, higher_is_better=False)
    if r["policy"] == "dualpath" and r.get("jct_over_bound_run"):
        row("runtime", "dualpath run JCT vs its lower bound, storage-bound", r["jct_run_s"],
            r["jct_run_s"] / r["jct_over_bound_run"], r["jct_over_bound_run"], 1.05, higher_is_better=False)
json.dump({"repeats": int(os.environ.get("REPEATS", "3")), "rows": rows, "raw": {
    "compute": c, "compute_one": c1, "shm": shm, "shm_dram": shm_dram, "tcp": tcp, "storage": st, "policy": pol,
    "actor": act, "sim": sim}},
    open(out, "w"), indent=2)
fmt = lambda x: "—" if x is None else (f"{x:.3g}" if isinstance(x, float) else str(x))
print("| layer | measure | value | limit | ratio | goal | met |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    goal = "—" if r["goal"] is None else ("≥ " if r["goal_is"] == "at least" else "≤ ") + f"{r['goal']:g}"
    met = "—" if r["met"] is None else ("yes" if r["met"] else "no")
    print(f"| {r['layer']} | {r['what']} | {fmt(r['value'])} | {fmt(r['limit'])} | {fmt(r['ratio'])} | {goal} | {met} |")
PY
