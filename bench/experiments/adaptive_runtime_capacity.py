#!/usr/bin/env python3
"""Online capacity of adaptive P/D in the runtime (docs/experiments.md, "Adaptive P/D in the runtime").

The scaled cluster of adaptive_runtime.py (scaled64k.toml, N nodes, the planner on a 1-s window) serves agents
arriving at a constant rate. Two populations in arrival order, as adaptive_pd.py's online_phases at the paper's
scale: the first half of the agents explore on every turn (100-160 appended, 2-4 generated), the second half
edit on every turn (5-20 appended, --edit-gen generated), each after a 100-200-token task. For every
configuration (`1P2D` static, `2P1D+` adaptive from 2P1D, ...), `dualpath run --aps-sweep` runs the rates in
order until one breaks the SLO, and its capacity is the highest rate at which it and every lower rate met it.
`dualpath sim` gives the same configuration's capacity beside it. Every turn's KV is verified as in any run.

  adaptive_runtime_capacity.py [--nodes N] [--agents A] [--turns T] [--seed S] [--edit-gen LO,HI]
                               [--configs 1P2D,2P1D,1P2D+,2P1D+] [--rates APS,...] [--slo-ttft S]
                               [--hbm-gb G] [--processes] [--out FILE]

The SLO's TTFT bound defaults to 1 s (peak 10-s mean): a pass of the scaled cluster takes about 0.1 s, where
the paper's takes seconds and its 4 s bound applies. Prints one table and writes the result JSON.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import adaptive_pd
import adaptive_runtime

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = adaptive_runtime.BIN


def phases_trace(path, agents, turns, seed, edit_gen):
    """adaptive_pd.py's online_phases at the scaled cluster's sizes (adaptive_runtime.py's exploring turns)."""
    adaptive_pd.phases_trace(path, agents, turns, seed, edit_gen, task=(100, 200), explore=((100, 160), (2, 4)),
                             edit_append=(5, 20))


def sweep(args, trace, label, runtime):
    """Capacity and per-rate points of configuration `label` (e.g. 2P1D+), from `dualpath run` or `sim`."""
    p, d = int(label.split("P")[0]), int(label.split("P")[1].split("D")[0])
    adaptive = label.endswith("+")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        cmd = [BIN, "run" if runtime else "sim", "--cluster",
               adaptive_runtime.cluster(tmp, p, d, adaptive, 1.0, args.hbm_gb), "--trace", trace, "--policy",
               "dualpath", "--seed", str(args.seed), "--mode", "online", "--aps-sweep", args.rates, "--slo-ttft",
               str(args.slo_ttft), "--quiet", "--report", report]
        if runtime and args.processes:
            cmd.append("--processes")
        if runtime:
            print("+ dualpath", " ".join(cmd[1:]), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL)
        pol = json.load(open(report))["policies"]["dualpath"]
    points = []
    for x in pol["points"]:
        r = x["run"]
        points.append({"aps": x["aps"], "meets_slo": x["meets_slo"], "ttft_peak_10s_s": r["ttft_peak_10s_mean_s"],
                       "tpot_mean_s": r["tpot_s"]["mean"], "jct_s": r["jct_s"], "turns": r["turns"],
                       "failed_turns": r["failed_turns"], "kv_verified_blocks": r.get("kv_verified_blocks", 0),
                       "kv_corrupt_blocks": r.get("kv_corrupt_blocks", 0),
                       "role_switches": r.get("role_switches", r.get("sim", {}).get("role_switches", []))})
    return {"config": label, "capacity_aps": pol["capacity_aps"], "points": points}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--agents", type=int, default=120)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--edit-gen", type=adaptive_pd.int_pair, default=(60, 120))
    ap.add_argument("--configs", default="1P2D,2P1D+")
    ap.add_argument("--rates", default="1,1.25,1.5,2,2.5,3")
    ap.add_argument("--slo-ttft", type=float, default=1.0)
    ap.add_argument("--hbm-gb", type=float, default=0.6)
    ap.add_argument("--processes", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "adaptive_runtime_capacity.result.json"))
    args = ap.parse_args()
    rows = ["| configuration | runtime capacity (agents/s) | simulator capacity | runtime points: rate (peak TTFT s, "
            "TPOT ms) | KV blocks verified (corrupt) | role switches at capacity (runtime) |",
            "|---|---|---|---|---|---|"]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        phases_trace(trace, args.agents, args.turns, args.seed, args.edit_gen)
        for label in args.configs.split(","):
            rt, sm = sweep(args, trace, label, True), sweep(args, trace, label, False)
            results.append({"config": label, "runtime": rt, "sim": sm})
            pts = ", ".join(f"{x['aps']:g} ({x['ttft_peak_10s_s']:.2f}, {1e3 * x['tpot_mean_s']:.0f})"
                            + ("" if x["meets_slo"] else " ✗") for x in rt["points"])
            at = [x for x in rt["points"] if x["meets_slo"] and x["aps"] <= rt["capacity_aps"]]
            moves = "; ".join(f"node {m['node']} to {m['to']} at {m['decided_s']:.1f} s" for m in at[-1]["role_switches"]) \
                if at else ""
            verified = sum(x["kv_verified_blocks"] for x in rt["points"])
            corrupt = sum(x["kv_corrupt_blocks"] for x in rt["points"])
            rows.append(f"| {label} | {rt['capacity_aps']:g} | {sm['capacity_aps']:g} | {pts} | {verified} ({corrupt}) | "
                        f"{moves or '-'} |")
            print(rows[-1], flush=True)
    with open(args.out, "w") as f:
        json.dump({"nodes": args.nodes, "agents": args.agents, "turns": args.turns, "seed": args.seed,
                   "edit_gen": list(args.edit_gen), "rates": args.rates, "slo_ttft_s": args.slo_ttft,
                   "hbm_gb": args.hbm_gb, "processes": args.processes, "configs": results}, f, indent=1)
        f.write("\n")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
