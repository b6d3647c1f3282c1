#!/usr/bin/env python3
"""The policy arena (docs/experiments.md, "Policy arena"): seeded scenarios drawn from a wide space, every
policy simulated on each (`dualpath sim --compare`), and each policy's JCT against round robin's and the paper's
`dualpath`.

A scenario draws its cluster (1P1D to 8P16D, 1 to 8 engines per node, DS 27B or DS 660B on the paper's
hardware), its SNIC rate (0.05x to 4x the paper's: from storage-bound to compute-bound) and CNIC rate, its
workload (a trace preset 32k, 48k or 64k, contexts and appends scaled, a few to many agents, a bounded number
of turns) and its mode (offline, or online at a rate near the cluster's turn throughput). Simulated time is
deterministic: the same seed gives the same table.

  arena.py [--scenarios N] [--seed S[,S2,...]] [--policies a,b,...] [--out FILE] [--svg FILE] [--jobs J]
           [--short] [--only I,J,...] [--reseed K] [--relabel [K]]

Several seeds (--seed 1,2,3) draw N scenarios each and report over all of them and per seed: a change to a
policy that wins on one draw and loses on the next was tuned to the draw, not to a mechanism.

Writes the result JSON (per scenario: its draw and every policy's JCT; per policy: win rates, worst ratios,
geometric means) and prints the table and the worst scenarios with their seeds. --svg draws the distribution
of each policy's JCT ratio to round robin.

--reseed K runs every scenario on K traces: its own and K - 1 drawn with other trace seeds (same cluster, same
workload shape), and prints each policy's ratio to round robin on each, with the mean agent JCT's beside the
makespan's: whether a loss is the policy's on every trace, or one agent's chain finishing last on one.

--relabel K runs every scenario K more times on the same trace with its agents in other orders (its lines
shuffled, seeded): the same work, only the order in which the agents' turns reach the scheduler differs. Each
policy's figure on them against its own on the original is the noise floor of a scenario's figure: how often,
and by how much, a policy "loses" to itself when nothing but the order changed. With K >= 2 it also compares
the policies on each scenario by their median figure over its 1 + K orders.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
CLUSTERS = {"ds27b": os.path.join(HERE, "paper", "ds27b.toml"), "ds660b": os.path.join(HERE, "paper", "ds660b_2p4d.toml")}
PAPER_SNIC, PAPER_CNIC = 22.0, 50.0  # GB/s per node and per GPU, as in the paper's cluster files
TIE = 0.001  # ratios within 0.1% count as a tie (as fast)


def draw(index, seed, short=False):
    """Scenario `index` of arena `seed`: everything `dualpath sim` needs, from one seeded generator. `short`
    (the test's arena) draws the same space with at most 48 agents of at most 6 turns."""
    rng = random.Random(seed * 1_000_003 + index)
    p = rng.choice([1, 1, 2, 2, 3, 4, 6, 8])
    d = min(16, max(1, round(p * rng.choice([1, 1.5, 2, 2, 3]))))
    g = rng.choice([1, 2, 4, 8])
    engines = (p + d) * g
    scale = rng.choice([1, 2, 4, 8])
    s = {
        "arena": seed,
        "index": index,
        "seed": seed * 1_000_003 + index,
        "model": rng.choice(["ds27b", "ds660b"]),
        "prefill_nodes": p,
        "decode_nodes": d,
        "gpus_per_node": g,
        "snic_gb_per_s": round(PAPER_SNIC * math.exp(rng.uniform(math.log(0.05), math.log(4))), 3),
        "cnic_gb_per_s": round(PAPER_CNIC * rng.choice([0.25, 0.5, 1, 1, 2]), 3),
        "preset": rng.choice(["32k", "48k", "64k"]),
        "scale": scale,
        "agents": max(2, min(384, round(engines * math.exp(rng.uniform(math.log(0.5), math.log(8)))))),
        "max_turns": rng.choice([4, 8, 12, 20]),
        "mode": "online" if rng.random() < 0.3 else "offline",
    }
    if short:
        s["agents"], s["max_turns"] = min(s["agents"], 48), min(s["max_turns"], 6)
    # Online: agents arrive at a rate the cluster may or may not keep up with (from light to past saturation).
    s["aps"] = round(s["agents"] / rng.uniform(5, 60), 3)
    return s


def run_scenario(s, policies):
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.jsonl")
        subprocess.run([BIN, "trace", "gen", "--preset", s["preset"], "--agents", str(s["agents"]), "--scale",
                        str(s["scale"]), "--seed", str(s.get("trace_seed", s["seed"])), "-o", trace], check=True,
                       stdout=subprocess.DEVNULL)
        if s.get("relabel"):
            with open(trace) as f:
                agents = f.readlines()
            random.Random(s["seed"] + 104729 * (s["relabel"] - 1)).shuffle(agents)
            with open(trace, "w") as f:
                f.writelines(agents)
        report = os.path.join(tmp, "report.json")
        cmd = [BIN, "sim", "--cluster", CLUSTERS[s["model"]], "--prefill-nodes", str(s["prefill_nodes"]),
               "--decode-nodes", str(s["decode_nodes"]), "--gpus-per-node", str(s["gpus_per_node"]),
               "--snic-gbps", str(s["snic_gb_per_s"]), "--cnic-gbps", str(s["cnic_gb_per_s"]), "--trace", trace,
               "--max-turns", str(s["max_turns"]), "--seed", str(s["seed"]), "--mode", s["mode"],
               "--compare", ",".join(policies), "--quiet", "--report", report]
        if s["mode"] == "online":
            cmd += ["--aps", str(s["aps"])]
        done = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            return {**s, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
        runs = {r["policy"]: r for r in json.load(open(report))["runs"]}
    # Online, a run's JCT is set by the arrivals; the mean turn latency (TTFT through last token) is what a
    # policy changes. Offline, the makespan.
    metric = "jct_s" if s["mode"] == "offline" else "turn_mean_s"
    out = {**s, "metric": metric, "jct_s": {}, "value": {}, "failed_turns": {}, "agent_jct_mean_s": {}}
    for p in policies:
        r = runs[p]
        out["jct_s"][p] = r["jct_s"]
        out["agent_jct_mean_s"][p] = r["agent_jct_mean_s"]
        out["failed_turns"][p] = r["failed_turns"]
        out["value"][p] = r["jct_s"] if metric == "jct_s" else r["e2e_s"]["mean"]
    return out


def summarize(results, policies):
    ok = [r for r in results if "error" not in r]
    per = {}
    for p in policies:
        row = {}
        for ref in ("round_robin", "dualpath"):
            if ref not in policies or p == ref:
                continue
            ratios = [r["value"][p] / r["value"][ref] for r in ok]
            row[f"vs_{ref}"] = {
                "win_rate": sum(x <= 1 + TIE for x in ratios) / len(ratios),  # as fast or faster
                "strict_win_rate": sum(x < 1 - TIE for x in ratios) / len(ratios),
                "worst_ratio": max(ratios),
                "best_ratio": min(ratios),
                "geomean_ratio": math.exp(sum(math.log(x) for x in ratios) / len(ratios)),
                "worst": sorted(({"index": r["index"], "seed": r["seed"], "ratio": r["value"][p] / r["value"][ref]}
                                 for r in ok), key=lambda w: -w["ratio"])[:5],
            }
        per[p] = row
    return {"scenarios": len(results), "errors": len(results) - len(ok), "policies": per}


def table(summary):
    lines = ["| policy | vs | as fast or faster | faster | geomean ratio | worst ratio | worst scenario (seed) |",
             "|---|---|---|---|---|---|---|"]
    for p, row in summary["policies"].items():
        for ref, x in row.items():
            w = x["worst"][0]
            lines.append(f"| {p} | {ref[3:]} | {100 * x['win_rate']:.1f}% | {100 * x['strict_win_rate']:.1f}% | "
                         f"{x['geomean_ratio']:.3f} | {x['worst_ratio']:.3f} | {w['index']} ({w['seed']}) |")
    return "\n".join(lines)


def reseed_table(results, policies):
    """Per scenario drawn again with other traces (--reseed): each policy's ratio to round robin on every
    trace, the metric's and (offline) the mean agent JCT's. A makespan decided by one agent's chain swings
    from trace to trace while the mean stays on one side; a loss of the mechanism shows on every trace."""
    lines = ["| scenario (seed) | policy | metric ratio, per trace | mean agent JCT ratio, per trace |", "|---|---|---|---|"]
    groups = {}
    for r in results:
        if "error" not in r:
            groups.setdefault((r["arena"], r["index"], r["seed"]), []).append(r)
    for (_, index, seed), rs in sorted(groups.items()):
        rs.sort(key=lambda r: r["reseed"])
        for p in policies:
            if p == "round_robin":
                continue
            metric = " ".join(f"{r['value'][p] / r['value']['round_robin']:.3f}" for r in rs)
            mean = " ".join(f"{r['agent_jct_mean_s'][p] / r['agent_jct_mean_s']['round_robin']:.3f}" for r in rs)
            lines.append(f"| {index} ({seed}) | {p} | {metric} | {mean} |")
    return "\n".join(lines)


def relabel_rows(results, policies):
    """Each policy against itself on the same trace with its agents in other orders (--relabel), each against
    round robin on the reordered traces, and (with 3 orders or more) each against round robin by the scenario's
    median figure over its orders: the share within the tie, the share more than 2% slower, the worst ratio."""
    ok = [r for r in results if "error" not in r]

    def key(r):
        return r["arena"], r["index"], r.get("reseed", 0)

    orig = {key(r): r for r in ok if not r.get("relabel")}
    pairs = [(orig[key(r)], r) for r in ok if r.get("relabel") and key(r) in orig]
    rows = []

    def row(name, against, ratios):
        rows.append({"policy": name, "against": against, "win_rate": sum(x <= 1 + TIE for x in ratios) / len(ratios),
                     "over_2pct": sum(x > 1.02 for x in ratios) / len(ratios), "worst_ratio": max(ratios)})

    for p in policies:
        row(p, "itself, agents reordered", [b["value"][p] / a["value"][p] for a, b in pairs])
    for p in policies:
        if p != "round_robin":
            row(p, "round robin, agents reordered", [b["value"][p] / b["value"]["round_robin"] for _, b in pairs])
    orders = {}
    for r in ok:
        orders.setdefault(key(r), []).append(r)
    runs = min(len(v) for v in orders.values())
    if runs >= 3:
        def median(v, p):
            return statistics.median(r["value"][p] for r in v)

        # Against round robin, and against the paper's policy (the second bar) when it ran.
        for ref, label in (("round_robin", "round robin"), ("dualpath", "dualpath")):
            if ref not in policies:
                continue
            for p in policies:
                if p not in ("round_robin", ref):
                    row(p, f"{label}, median over {runs} orders",
                        [median(v, p) / median(v, ref) for v in orders.values()])
    return rows


def relabel_table(rows):
    lines = ["| policy | against | as fast or faster | more than 2% slower | worst ratio |", "|---|---|---|---|---|"]
    for x in rows:
        lines.append(f"| {x['policy']} | {x['against']} | {100 * x['win_rate']:.1f}% | {100 * x['over_2pct']:.1f}% | "
                     f"{x['worst_ratio']:.3f} |")
    return "\n".join(lines)


def svg(results, policies, path):
    """A histogram of each policy's ratio to round robin (log2 bins), one row of bars per policy."""
    ok = [r for r in results if "error" not in r]
    rows = [p for p in policies if p != "round_robin"]
    bins = [x / 20 for x in range(-20, 21)]  # log2 ratio from -1 (2x faster) to +1 (2x slower)
    w, h, left, top = 640, 120 * len(rows) + 40, 120, 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">']
    for i, p in enumerate(rows):
        counts = [0] * (len(bins) - 1)
        for r in ok:
            v = max(-1.0, min(0.9999, math.log2(r["value"][p] / r["value"]["round_robin"])))
            counts[min(len(counts) - 1, int((v + 1) * 20))] += 1
        y0, peak = top + 120 * i + 100, max(counts) or 1
        out.append(f'<text x="4" y="{y0 - 40}">{p}</text>')
        for k, c in enumerate(counts):
            bh = 90 * c / peak
            out.append(f'<rect x="{left + 12 * k}" y="{y0 - bh:.1f}" width="11" height="{bh:.1f}" '
                       f'fill="{"#3a7" if bins[k + 1] <= 0 else "#c44"}"/>')
        out.append(f'<line x1="{left + 240}" y1="{y0 - 95}" x2="{left + 240}" y2="{y0}" stroke="#000"/>')
    out.append(f'<text x="{left}" y="{h - 6}">0.5x</text><text x="{left + 228}" y="{h - 6}">1x (round robin)</text>'
               f'<text x="{left + 460}" y="{h - 6}">2x JCT</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=200)
    ap.add_argument("--seed", default="1", help="arena seed, or several comma-separated (N scenarios each)")
    ap.add_argument("--policies", default="round_robin,dualpath,basic")
    ap.add_argument("--out", default=os.path.join(HERE, "arena.result.json"))
    ap.add_argument("--svg", default="")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--short", action="store_true", help="at most 48 agents of at most 6 turns (the test's arena)")
    ap.add_argument("--only", default="", help="comma-separated scenario indices to run (of the --scenarios drawn)")
    ap.add_argument("--reseed", type=int, default=1,
                    help="run each scenario on this many traces (its own and others drawn from other seeds)")
    ap.add_argument("--relabel", type=int, nargs="?", const=1, default=0,
                    help="also run each scenario with its trace's agents in K other orders (the noise floor)")
    args = ap.parse_args()
    policies = args.policies.split(",")
    if "round_robin" not in policies:
        sys.exit("arena.py: --policies must include round_robin (every ratio is taken against it)")
    try:
        seeds = [int(x) for x in args.seed.split(",")]
    except ValueError:
        sys.exit(f"arena.py: --seed must be integers separated by commas, got '{args.seed}'")
    indices = [int(i) for i in args.only.split(",")] if args.only else range(args.scenarios)
    scenarios = [draw(i, seed, args.short) for seed in seeds for i in indices]
    if args.reseed > 1:
        scenarios = [{**s, "reseed": k, "trace_seed": s["seed"] + 7919 * k} for s in scenarios for k in range(args.reseed)]
    if args.relabel:
        scenarios += [{**s, "relabel": k} for k in range(1, args.relabel + 1) for s in scenarios]
    results = [None] * len(scenarios)
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(run_scenario, s, policies): n for n, s in enumerate(scenarios)}
        for n, f in enumerate(cf.as_completed(futures), 1):
            results[futures[f]] = f.result()
            print(f"arena: {n}/{len(scenarios)} scenarios", file=sys.stderr, flush=True)
    originals = [r for r in results if not r.get("relabel")]  # --relabel's extra orders are reported apart
    summary = summarize(originals, policies)
    relabel = relabel_rows(results, policies) if args.relabel else []
    per_seed = {}
    if len(seeds) > 1:
        per_seed = {str(seed): summarize([r for r in originals if r["arena"] == seed], policies) for seed in seeds}
    with open(args.out, "w") as f:
        json.dump({"seed": seeds[0] if len(seeds) == 1 else seeds, "short": args.short, "policies": policies,
                   "summary": summary, "per_seed": per_seed, "relabel": relabel, "scenarios": results}, f, indent=1)
        f.write("\n")
    if args.svg:
        svg(results, policies, args.svg)
    print(table(summary))
    if args.reseed > 1:
        print()
        print(reseed_table(originals, policies))
    if args.relabel:
        print()
        print(relabel_table(relabel))
    for seed, sub in per_seed.items():
        print(f"\nseed {seed}:")
        print(table(sub))
    for r in results:
        if "error" in r:
            print(f"scenario {r['index']} (seed {r['seed']}) failed: {r['error']}")
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
