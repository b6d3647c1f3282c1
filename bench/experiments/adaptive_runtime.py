#!/usr/bin/env python3
"""Adaptive P/D in the runtime (docs/experiments.md, "Adaptive P/D in the runtime"; docs/design.md §7.9).

`dualpath run` on a scaled cluster of N nodes (scaled64k.toml: a modeled DS 660B whose KV really moves through
capped SNICs, libfabric and DRAM buffers), every static split P + D = N, then `[planner] adaptive = true` from
each static split. Every turn is verified against a full recompute. Two workloads:

  shift       agents that explore (long appends, short answers), then edit (short appends, long answers):
              the prefill/decode mix turns over mid-run;
  stationary  the same agents exploring throughout: adaptive should stay near the split it starts from.

  adaptive_runtime.py [--nodes N] [--agents A] [--turns T] [--seed S] [--workloads shift,stationary]
                      [--window S] [--out FILE]

Prints a table per workload (JCT, TTFT and TPOT means, the role switches each adaptive run made and when) and
writes the result JSON.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
CLUSTER = os.path.join(HERE, "scaled64k.toml")


def trace(path, agents, turns, seed, shift):
    """A task of 400-800 tokens, then exploring turns (200-500 appended, 4-10 generated); with `shift` the
    second half edits (10-30 appended, 60-150 generated)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for a in range(agents):
            rounds = [{"append": rng.randint(400, 800), "gen": rng.randint(4, 10)}]
            for t in range(1, turns):
                if shift and t >= turns // 2:
                    rounds.append({"append": rng.randint(10, 30), "gen": rng.randint(60, 150)})
                else:
                    rounds.append({"append": rng.randint(200, 500), "gen": rng.randint(4, 10)})
            f.write(json.dumps({"id": f"a{a}", "rounds": rounds}) + "\n")


def cluster(tmp, p, d, adaptive, window):
    """scaled64k.toml with P prefill and D decode nodes, and the planner on or off."""
    lines = []
    for line in open(CLUSTER):
        key = line.split("=")[0].strip()
        if key == "prefill_nodes":
            line = f"prefill_nodes = {p}\n"
        elif key == "decode_nodes":
            line = f"decode_nodes = {d}\n"
        elif key == "dir":
            line = f'dir = "{os.path.join(tmp, "store")}"\n'
        lines.append(line)
    # The planner's clock scaled to runs of tens of seconds: 1-s windows, two in a row, 5 s between moves.
    lines.append(f"\n[planner]\nadaptive = {'true' if adaptive else 'false'}\nwindow_s = {window}\nsustain = 2\n"
                 "cooldown_s = 5\n")
    path = os.path.join(tmp, f"c{p}p{d}d{'a' if adaptive else ''}.toml")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def run(args, tr, p, d, adaptive):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        cmd = [BIN, "run", "--cluster", cluster(tmp, p, d, adaptive, args.window), "--trace", tr, "--policy",
               "dualpath", "--seed", str(args.seed), "--quiet", "--report", report]
        print("+ dualpath", " ".join(cmd[1:]), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, cwd=tmp)
        r = json.load(open(report))["runs"][0]
    return {"p": p, "d": d, "adaptive": adaptive, "jct_s": r["jct_s"], "turns": r["turns"],
            "failed_turns": r["failed_turns"], "verified_turns": r["verified_turns"],
            "mismatched_turns": r["mismatched_turns"], "ttft_mean_s": r["ttft_s"]["mean"],
            "tpot_mean_s": r["tpot_s"]["mean"], "role_switches": r.get("role_switches", []),
            "final_prefill_nodes": r.get("final_prefill_nodes", p)}


def workload(args, name, shift):
    n = args.nodes
    with tempfile.TemporaryDirectory() as tmp:
        tr = os.path.join(tmp, "trace.jsonl")
        trace(tr, args.agents, args.turns, args.seed, shift)
        statics = [run(args, tr, p, n - p, False) for p in range(1, n)]
        adaptive = [run(args, tr, p, n - p, True) for p in range(1, n)]
    best = min(statics, key=lambda r: r["jct_s"])
    rows = [f"### {name} ({n} nodes, {args.agents} agents of {args.turns} turns)", "",
            "| split | JCT (s) | TTFT mean (s) | TPOT mean (ms) | vs best static | verified | role switches |",
            "|---|---|---|---|---|---|---|"]
    for r in statics + adaptive:
        moves = ", ".join(f"node {m['node']} to {m['to']} at {m['decided_s']:.1f} s (serving {m['done_s']:.1f} s)"
                          for m in r["role_switches"]) or "—"
        label = f"{r['p']}P{r['d']}D" + (" adaptive" if r["adaptive"] else "")
        rows.append(f"| {label} | {r['jct_s']:.2f} | {r['ttft_mean_s']:.3f} | {1e3 * r['tpot_mean_s']:.1f} | "
                    f"{r['jct_s'] / best['jct_s']:.3f} | {r['verified_turns'] - r['mismatched_turns']}/"
                    f"{r['verified_turns']} | {moves} |")
    return {"name": name, "statics": statics, "adaptive": adaptive, "best_static": f"{best['p']}P{best['d']}D"}, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--workloads", default="shift,stationary")
    ap.add_argument("--out", default=os.path.join(HERE, "adaptive_runtime.result.json"))
    args = ap.parse_args()
    results, lines = [], []
    for name in args.workloads.split(","):
        res, rows = workload(args, name, shift=name == "shift")
        results.append(res)
        lines += rows + [""]
    with open(args.out, "w") as f:
        json.dump({"nodes": args.nodes, "agents": args.agents, "turns": args.turns, "seed": args.seed,
                   "window_s": args.window, "workloads": results}, f, indent=1)
        f.write("\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
