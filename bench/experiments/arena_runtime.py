#!/usr/bin/env python3
"""The arena's verdict checked in the runtime (docs/experiments.md, "Policy arena", "In the runtime").

The arena (arena.py) judges policies in the simulator, at the paper's scale. Here the first N of its offline,
storage-bound scenarios small enough for this machine are scaled onto the runtime's cluster (scaled64k.toml:
a modeled DS 660B whose KV really moves through capped SNICs, libfabric and DRAM buffers) and every policy runs
on each, with `dualpath run` and with `dualpath sim` on the same cluster file and trace, so the two verdicts
can be compared.

A scenario keeps its shape (P prefill and D decode nodes, engines per node up to 2), its preset, its seed and
its SNIC rate relative to the paper's (scaled64k's 0.3 GB/s stands for a quarter of the paper's 22 GB/s, the
rate at which that cluster is storage-bound); its trace is its preset scaled down --scale times (default 64),
and agents and turns are capped (--agents 24, --turns 20) so that a run takes seconds. Chosen: offline
scenarios with at most --max-nodes nodes (4) and a SNIC at most half the paper's.

  arena_runtime.py [--count N] [--seed S] [--policies a,b,...] [--reps R] [--agents A] [--turns T]
                   [--max-nodes M] [--scale K] [--out FILE]

Each scenario runs R times in the runtime (default 3; the policies of one run side by side, `--compare`) and
is judged by the median of each policy's JCT. Prints a table and writes the result JSON.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

import arena
import scaled64k

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
BASE_SNIC, BASE_FACTOR = 0.3, 0.25  # scaled64k's SNIC (GB/s) and the fraction of the paper's SNIC it stands for


def chosen(count, seed, max_nodes):
    """The first `count` offline, storage-bound scenarios of arena `seed` with at most `max_nodes` nodes."""
    out = []
    for i in range(100_000):
        s = arena.draw(i, seed)
        factor = s["snic_gb_per_s"] / arena.PAPER_SNIC
        if s["mode"] == "offline" and s["prefill_nodes"] + s["decode_nodes"] <= max_nodes and factor <= 0.5:
            out.append({**s, "snic_factor": factor})
            if len(out) == count:
                return out
    return out


def cluster_file(tmp, s):
    return scaled64k.cluster_variant(
        tmp, "cluster", prefill_nodes=s["prefill_nodes"], decode_nodes=s["decode_nodes"],
        engines_per_node=min(2, s["gpus_per_node"]), snic_gb_per_s=round(BASE_SNIC * s["snic_factor"] / BASE_FACTOR, 4),
        dir=os.path.join(tmp, "store"))


def compare(tool, cluster, trace, turns, seed, policies, tmp):
    report = os.path.join(tmp, f"{tool}.json")
    cmd = [BIN, tool, "--cluster", cluster, "--trace", trace, "--max-turns", str(turns), "--seed", str(seed),
           "--compare", ",".join(policies), "--quiet", "--report", report]
    print("+ dualpath", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL)
    return {r["policy"]: r for r in json.load(open(report))["runs"]}


def scenario(args, s, policies):
    with tempfile.TemporaryDirectory() as tmp:
        agents, turns = min(args.agents, s["agents"]), min(args.turns, s["max_turns"])
        trace = os.path.join(tmp, "trace.jsonl")
        subprocess.run([BIN, "trace", "gen", "--preset", s["preset"], "--agents", str(agents), "--scale", str(args.scale),
                        "--seed", str(s["seed"]), "-o", trace], check=True, stdout=subprocess.DEVNULL)
        cluster = cluster_file(tmp, s)
        sim = compare("sim", cluster, trace, turns, s["seed"], policies, tmp)
        runs = [compare("run", cluster, trace, turns, s["seed"], policies, tmp) for _ in range(args.reps)]
    out = {"index": s["index"], "seed": s["seed"], "shape": f"{s['prefill_nodes']}P{s['decode_nodes']}D",
           "engines_per_node": min(2, s["gpus_per_node"]), "preset": s["preset"], "agents": agents, "turns": turns,
           "snic_factor": s["snic_factor"], "sim_jct_s": {p: sim[p]["jct_s"] for p in policies},
           "run_jct_s": {p: [r[p]["jct_s"] for r in runs] for p in policies},
           "failed_turns": sum(r[p]["failed_turns"] for r in runs for p in policies),
           "kv_verified_blocks": sum(r[p]["kv_verified_blocks"] for r in runs for p in policies),
           "kv_corrupt_blocks": sum(r[p]["kv_corrupt_blocks"] for r in runs for p in policies)}
    out["run_median_s"] = {p: statistics.median(v) for p, v in out["run_jct_s"].items()}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--policies", default="round_robin,dualpath,queue_aware")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--agents", type=int, default=24)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--max-nodes", type=int, default=4)
    ap.add_argument("--scale", type=int, default=64)
    ap.add_argument("--out", default=os.path.join(HERE, "arena_runtime.result.json"))
    args = ap.parse_args()
    policies = args.policies.split(",")
    results = [scenario(args, s, policies) for s in chosen(args.count, args.seed, args.max_nodes)]
    others = [p for p in policies if p != "round_robin"]
    head = "| scenario (seed) | shape | SNIC × paper | agents × turns | " + " | ".join(
        f"{p} run / sim JCT s" for p in policies) + " | " + " | ".join(f"{p} / rr: run, sim" for p in others) + " |"
    rows = [head, "|" + "---|" * (4 + len(policies) + len(others))]
    for r in results:
        rr_run, rr_sim = r["run_median_s"]["round_robin"], r["sim_jct_s"]["round_robin"]
        rows.append(f"| {r['index']} ({r['seed']}) | {r['shape']} × {r['engines_per_node']} | {r['snic_factor']:.3f} | "
                    f"{r['agents']} × {r['turns']} | " +
                    " | ".join(f"{r['run_median_s'][p]:.2f} / {r['sim_jct_s'][p]:.2f}" for p in policies) + " | " +
                    " | ".join(f"{r['run_median_s'][p] / rr_run:.3f}, {r['sim_jct_s'][p] / rr_sim:.3f}" for p in others)
                    + " |")
    summary = {}
    for p in others:
        run_ratio = [r["run_median_s"][p] / r["run_median_s"]["round_robin"] for r in results]
        sim_ratio = [r["sim_jct_s"][p] / r["sim_jct_s"]["round_robin"] for r in results]
        summary[p] = {"run_as_fast": sum(x <= 1 + arena.TIE for x in run_ratio),
                      "run_within_2pct": sum(x <= 1.02 for x in run_ratio),
                      "sim_as_fast": sum(x <= 1 + arena.TIE for x in sim_ratio),
                      "run_geomean": math.exp(sum(map(math.log, run_ratio)) / len(run_ratio)),
                      "sim_geomean": math.exp(sum(map(math.log, sim_ratio)) / len(sim_ratio)),
                      "run_worst": max(run_ratio)}
        rows.append(f"\n{p} against round robin over {len(results)} scenarios: run as fast or faster in "
                    f"{summary[p]['run_as_fast']}, within 2% in {summary[p]['run_within_2pct']} (worst "
                    f"{summary[p]['run_worst']:.3f}, geomean {summary[p]['run_geomean']:.3f}); sim as fast or "
                    f"faster in {summary[p]['sim_as_fast']} (geomean {summary[p]['sim_geomean']:.3f})")
    print("\n".join(rows))
    with open(args.out, "w") as f:
        json.dump({"seed": args.seed, "reps": args.reps, "policies": policies, "summary": summary,
                   "scenarios": results}, f, indent=1)


if __name__ == "__main__":
    main()
