#!/usr/bin/env python3
"""Adaptive P/D against every static split (docs/experiments.md, "Adaptive P/D"; docs/design.md §7.9).

For a cluster of N nodes, every static split P + D = N is simulated (`dualpath sim`), then the adaptive mode
(`--adaptive`) from a starting split. Two workloads:

  shift       agents that first explore (long appends: tool output, files read; short answers) and then edit
              (short appends, long generations): the prefill/decode mix turns over mid-run;
  stationary  the paper's 64k preset, whose mix does not change: adaptive must stay within 2% of the split
              it starts from;
  online      the 64k preset online, at a rate that rises and falls (--profile); judged by mean turn latency;
  online_shift  the shift agents online at that rate: while arrivals rise most agents explore, after they
              fall most edit;
  online_phases two populations online, in arrival order: the first half of the agents explore on every
              turn, the second half edit on every turn (a day's interactive sessions, then batch edits).

An editing turn generates --edit-gen tokens (600-1,600 by default; 2,000-4,000 for agents that write whole
files, where decode, not prefill, binds while they edit).

With --capacity RATES the online workloads are judged by capacity instead: `dualpath sim --aps-sweep RATES` at a
constant rate, the highest rate at which the split (and every lower rate) meets the SLO (peak 10-s mean TTFT
4 s, mean TPOT 50 ms).

  adaptive_pd.py [--nodes N] [--agents A] [--turns T] [--cluster FILE] [--gpus G] [--seed S] [--step K]
                 [--splits P,P,..] [--jobs J] [--workloads shift,stationary] [--capacity APS,APS,..]
                 [--edit-gen LO,HI] [--starts best|all] [--out FILE]
  adaptive_pd.py --workloads NAME --write-trace FILE [--agents A] [--turns T] [--seed S] [--edit-gen LO,HI]

Prints one table per workload (every static split, the best, adaptive from the best and from the paper's
1:2 split, or with --starts all from every split, with the role switches each made) and writes the result
JSON.
"""
import argparse
import concurrent.futures
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))


def int_pair(text):
    """LO,HI from the command line."""
    return tuple(int(x) for x in text.split(","))


def shift_trace(path, agents, turns, seed, edit_gen=(600, 1600)):
    """Explore, then edit: the first half of each agent's turns append 2-6K tokens and answer in 20-80; the
    second half append 100-400 and generate `edit_gen` tokens. The first turn is a 6-12K-token task."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for a in range(agents):
            rounds = [{"append": rng.randint(6000, 12000), "gen": rng.randint(20, 80)}]
            for t in range(1, turns):
                if t < turns // 2:
                    rounds.append({"append": rng.randint(2000, 6000), "gen": rng.randint(20, 80)})
                else:
                    rounds.append({"append": rng.randint(100, 400), "gen": rng.randint(*edit_gen)})
            f.write(json.dumps({"id": f"a{a}", "rounds": rounds}) + "\n")


def phases_trace(path, agents, turns, seed, edit_gen=(600, 1600), task=(6000, 12000), explore=((2000, 6000), (20, 80)),
                 edit_append=(100, 400)):
    """The first half of the agents explore on every turn (by default 2-6K appends, 20-80-token answers), the
    second half edit on every turn (100-400 appends, `edit_gen` generated); each starts with a `task` of 6-12K
    tokens answered like an exploring turn. adaptive_runtime_capacity.py passes the runtime's scaled sizes."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for a in range(agents):
            explorer = a < agents // 2
            rounds = [{"append": rng.randint(*task), "gen": rng.randint(*explore[1])}]
            for _ in range(1, turns):
                if explorer:
                    rounds.append({"append": rng.randint(*explore[0]), "gen": rng.randint(*explore[1])})
                else:
                    rounds.append({"append": rng.randint(*edit_append), "gen": rng.randint(*edit_gen)})
            f.write(json.dumps({"id": f"a{a}", "rounds": rounds}) + "\n")


def run_sim(args, trace, p, d, adaptive, policy, extra):
    """One `dualpath sim` of the split with `extra` options; its report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        cmd = [BIN, "sim", "--trace", trace, "--prefill-nodes", str(p), "--decode-nodes", str(d), "--policy", policy,
               "--seed", str(args.seed), "--quiet", "--report", report] + extra
        if args.cluster:
            cmd += ["--cluster", args.cluster]
        if args.gpus:
            cmd += ["--gpus-per-node", str(args.gpus)]
        if adaptive:
            cmd.append("--adaptive")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(report))


def sim(args, trace, p, d, adaptive, policy, online=""):
    if online and args.capacity:
        row = capacity_row(run_sim(args, trace, p, d, adaptive, policy,
                                   ["--mode", "online", "--aps-sweep", args.capacity]), p, d, adaptive, policy)
        # A sweep's runs carry no role switches: the adaptive run at its capacity again, for its moves.
        if adaptive and row["capacity_aps"] > 0:
            again = run_sim(args, trace, p, d, adaptive, policy, ["--mode", "online", "--aps", str(row["capacity_aps"])])
            row["role_switches"] = again["runs"][0]["sim"].get("role_switches", [])
        return row
    extra = ["--mode", "online", "--aps-profile", online] if online else []
    rep = run_sim(args, trace, p, d, adaptive, policy, extra)
    run = rep["runs"][0]
    # Offline a split is judged by its JCT; online, where the arrivals set the JCT, by its mean turn latency.
    value = run["e2e_s"]["mean"] if online else run["jct_s"]
    return {"p": p, "d": d, "adaptive": adaptive, "value": value, "jct_s": run["jct_s"],
            "turn_mean_s": run["e2e_s"]["mean"], "ttft_mean_s": run["ttft_s"]["mean"],
            "tpot_mean_s": run["tpot_s"]["mean"], "failed_turns": run["failed_turns"],
            "role_switches": run["sim"].get("role_switches", []),
            "final_prefill_nodes": run["sim"].get("final_prefill_nodes", p)}


def capacity_row(rep, p, d, adaptive, policy):
    """A sweep's capacity (agents/s) and its run at that rate. The value is its inverse, seconds per agent,
    so that lower is better as for the JCT."""
    pol = rep["policies"][policy]
    cap = pol["capacity_aps"]
    at = next((x["run"] for x in pol["points"] if abs(x["aps"] - cap) < 1e-9), pol["points"][0]["run"])
    return {"p": p, "d": d, "adaptive": adaptive, "capacity_aps": cap, "value": 1 / cap if cap > 0 else float("inf"),
            "jct_s": at["jct_s"], "turn_mean_s": at["e2e_s"]["mean"], "ttft_mean_s": at["ttft_s"]["mean"],
            "tpot_mean_s": at["tpot_s"]["mean"], "failed_turns": at["failed_turns"],
            "role_switches": [],
            "points": [{"aps": x["aps"], "meets_slo": x["meets_slo"]} for x in pol["points"]]}


def workload(args, name, trace, online=""):
    n = args.nodes
    splits = [int(p) for p in args.splits.split(",")] if args.splits else list(range(1, n, args.step))
    if any(p < 1 or p >= n for p in splits):
        sys.exit(f"adaptive_pd.py: --splits must lie in 1..{n - 1}")
    # Simulations are independent and single-threaded: up to --jobs run at once (large clusters).
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        statics = list(pool.map(lambda p: sim(args, trace, p, n - p, False, args.policy, online), splits))
        best = min(statics, key=lambda r: r["value"])
        paper_p = max(1, round(n / 3))
        starts = splits if args.starts == "all" else sorted({best["p"], paper_p})
        adaptive = list(pool.map(lambda p: sim(args, trace, p, n - p, True, args.policy, online), starts))
    capacity = bool(online and args.capacity)
    if capacity:
        rows = [f"### {name} ({n} nodes, capacity over {args.capacity} agents/s)", "",
                "| split | capacity (agents/s) | vs best static | turn mean at capacity (s) | role switches at capacity |",
                "|---|---|---|---|---|"]
        for r in statics + adaptive:
            label = f"{r['p']}P{r['d']}D" + (" adaptive" if r["adaptive"] else "") + (" (best static)" if r is best else "")
            moves = "; ".join(f"node {m['node']} to {m['to']} at {m['decided_s']:.0f} s" for m in r["role_switches"])
            rows.append(f"| {label} | {r['capacity_aps']:g} | {r['capacity_aps'] / best['capacity_aps']:.3f} | "
                        f"{r['turn_mean_s']:.2f} | {moves or '-'} |")
        print("\n".join(rows) + "\n", flush=True)
        return {"metric": "capacity_aps", "static": statics, "adaptive": adaptive,
                "best_static": {"p": best["p"], "capacity_aps": best["capacity_aps"]},
                "adaptive_from_best_over_best": next(r for r in adaptive if r["p"] == best["p"])["capacity_aps"] /
                best["capacity_aps"],
                "adaptive_best_over_best": max(r["capacity_aps"] for r in adaptive) / best["capacity_aps"]}
    rows = [f"### {name} ({n} nodes{', online ' + online if online else ''})", "",
            "| split | JCT (s) | turn mean (s) | TTFT mean (s) | TPOT mean (ms) | vs best static | role switches |",
            "|---|---|---|---|---|---|---|"]
    for r in statics + adaptive:
        label = f"{r['p']}P{r['d']}D" + (" adaptive" if r["adaptive"] else "") + (" (best static)" if r is best else "")
        moves = "; ".join(f"node {m['node']} to {m['to']} at {m['decided_s']:.0f} s (serving {m['done_s']:.0f} s)"
                          for m in r["role_switches"])
        rows.append(f"| {label} | {r['jct_s']:.1f} | {r['turn_mean_s']:.2f} | {r['ttft_mean_s']:.2f} | "
                    f"{1e3 * r['tpot_mean_s']:.1f} | {r['value'] / best['value']:.3f} | {moves or '-'} |")
    print("\n".join(rows) + "\n", flush=True)
    return {"metric": "turn_mean_s" if online else "jct_s", "static": statics, "adaptive": adaptive,
            "best_static": {"p": best["p"], "value": best["value"]},
            "adaptive_from_best_over_best": next(r for r in adaptive if r["p"] == best["p"])["value"] / best["value"],
            "adaptive_best_over_best": min(r["value"] for r in adaptive) / best["value"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=6)
    ap.add_argument("--agents", type=int, default=512)
    ap.add_argument("--turns", type=int, default=16)
    ap.add_argument("--cluster", default="", help="cluster file (default: the paper's DS 660B cluster)")
    ap.add_argument("--gpus", type=int, default=0, help="override gpus_per_node")
    ap.add_argument("--policy", default="dualpath")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step", type=int, default=1, help="static splits P = 1, 1 + step, ... (large clusters)")
    ap.add_argument("--splits", default="", help="static splits as prefill node counts, e.g. 48,72,96 (else --step)")
    ap.add_argument("--jobs", type=int, default=1, help="simulations run at once")
    ap.add_argument("--workloads", default="shift,stationary")
    ap.add_argument("--profile", default="0:0.15,900:0.6,1800:0.15",
                    help="the online workload's arrival rates (dualpath --aps-profile): a load that rises and falls")
    ap.add_argument("--capacity", default="", help="online workloads: capacity over these constant rates "
                    "(dualpath sim --aps-sweep) instead of the latency under --profile")
    ap.add_argument("--edit-gen", type=int_pair, default=(600, 1600), help="tokens an editing turn generates: LO,HI")
    ap.add_argument("--starts", choices=("best", "all"), default="best",
                    help="adaptive runs from the best static split and the paper's 1:2 (best), or from every split")
    ap.add_argument("--out", default=os.path.join(HERE, "adaptive_pd.result.json"))
    ap.add_argument("--write-trace", default="", help="write the first workload's trace here and stop (for sim, plan)")
    args = ap.parse_args()
    out = {"nodes": args.nodes, "agents": args.agents, "turns": args.turns, "cluster": args.cluster or "paper",
           "policy": args.policy, "profile": args.profile, "capacity_rates": args.capacity,
           "edit_gen": list(args.edit_gen), "seed": args.seed, "starts": args.starts, "workloads": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workloads.split(","):
            trace = args.write_trace or os.path.join(tmp, name + ".jsonl")
            if name in ("shift", "online_shift"):
                shift_trace(trace, args.agents, args.turns, args.seed, args.edit_gen)
            elif name == "online_phases":
                phases_trace(trace, args.agents, args.turns, args.seed, args.edit_gen)
            elif name in ("stationary", "online"):
                subprocess.run([BIN, "trace", "gen", "--preset", "64k", "--agents", str(args.agents), "--seed",
                                str(args.seed), "-o", trace], check=True, stdout=subprocess.DEVNULL)
            else:
                sys.exit(f"adaptive_pd.py: unknown workload '{name}' "
                         "(shift, stationary, online, online_shift, online_phases)")
            if args.write_trace:
                return
            out["workloads"][name] = workload(args, name, trace, args.profile if name.startswith("online") else "")
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
