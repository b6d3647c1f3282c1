#!/usr/bin/env python3
"""Experiments on the scaled 64K workload (docs/design.md §11, §12; issue 12 item 10).

Every experiment generates its trace at run time (`dualpath trace gen --preset 64k --scale K` into a temporary
directory), runs the cluster of scaled64k.toml (or a variant of it) with `dualpath run` (real KV through capped
SNICs; wall time is real) or, with --sim, `dualpath sim` on the same cluster file, writes
scaled64k_<experiment>.result.json next to this script (numbers only) and prints a markdown table.

  scaled64k.py ablation      basic -> layerwise -> dualpath_nosched -> dualpath on 1P2D (Fig 12 right)
  scaled64k.py pd_sweep      basic and dualpath on 1P1D, 1P2D, 2P1D, 2P2D (Fig 8)
  scaled64k.py snic_balance  dualpath, round_robin, dualpath_nosched on 2P4D, two engines per node (Fig 13)
  scaled64k.py scaling       dualpath_vs_basic at append / generation x0.5, x1, x2 (Fig 9)
  scaled64k.py online        capacity under the SLO, basic vs dualpath (Fig 10)

Options: --sim (simulate instead of running), --out FILE (result JSON), and the experiment's own (see --help).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
CLUSTER = os.path.join(HERE, "scaled64k.toml")
ABLATION = ["basic", "layerwise", "dualpath_nosched", "dualpath"]
# The P/D sweep, the scaling sweeps and the online runs want reads alone to bound basic: SNICs at 0.15 GB/s
# (the ablation's 0.3 GB/s in scaled64k.toml lets HBM, not reads, separate basic from layerwise).
READ_BOUND_SNIC = 0.15


def trace(tmp, agents, scale, append_scale=1.0, gen_scale=1.0, seed=1):
    path = os.path.join(tmp, f"t_{agents}_{scale}_{append_scale}_{gen_scale}.jsonl")
    if not os.path.exists(path):
        subprocess.run([BIN, "trace", "gen", "--preset", "64k", "--agents", str(agents), "--scale", str(scale),
                        "--append-scale", str(append_scale), "--gen-scale", str(gen_scale), "--seed", str(seed),
                        "-o", path], check=True, stdout=subprocess.DEVNULL)
    return path


def cluster_variant(tmp, name, **over):
    """scaled64k.toml with some [cluster] / [hardware] keys replaced (the runtime has no --prefill-nodes)."""
    lines = []
    for line in open(CLUSTER):
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {json.dumps(over.pop(key))}\n" if key in over else line)
    if over:
        raise SystemExit(f"keys not in {CLUSTER}: {sorted(over)}")
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def dualpath(mode, cluster, tr, policies, *extra):
    """Runs `dualpath run|sim` and returns {policy: run report}, plus the report's top level."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [BIN, mode, "--cluster", cluster, "--trace", tr, "--compare", ",".join(policies), "--quiet",
               "--report", report, *map(str, extra)]
        print("+ dualpath", " ".join(cmd[2:]), file=sys.stderr, flush=True)
        env = dict(os.environ)
        subprocess.run(cmd, check=True, cwd=tmp, env=env)
        with open(report) as f:
            rep = json.load(f)
    return {r["policy"]: r for r in rep["runs"]}, rep


def summary(r):
    """The numbers of one run kept in a result file (no per-turn or per-window data)."""
    snic = r.get("snic_bytes", [])
    sot = r.get("snic_over_time", {})
    return {
        "jct_s": r["jct_s"], "turns": r["turns"], "failed_turns": r["failed_turns"],
        "ttft_p50_s": r["ttft_s"]["p50"], "ttft_p99_s": r["ttft_s"]["p99"], "tpot_p50_s": r["tpot_s"]["p50"],
        "kv_read_mean_s": r["ttft_breakdown_s"]["kv_read"]["mean"],
        "queue_mean_s": r["ttft_breakdown_s"]["queue"]["mean"],
        "snic_mb": [round(b / 1e6, 1) for b in snic],
        "snic_max_over_avg": r.get("snic_max_over_avg", 0.0),
        "snic_1s_max_over_avg_mean": sot.get("rate_max_over_avg_mean", 0.0),
        "paths": r["path_requests"], "hit_blocks": r["hit_blocks"],
        "kv_verified_blocks": r["kv_verified_blocks"], "kv_corrupt_blocks": r["kv_corrupt_blocks"],
        "mismatched_turns": r["mismatched_turns"],
    }


def write(name, args, result, table):
    out = args.out or os.path.join(HERE, f"scaled64k_{name}.result.json")
    result = {"experiment": name, "tool": "sim" if args.sim else "run", **result}
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(table)


def mode(args):
    return "sim" if args.sim else "run"


def workload(args):
    return {"preset": "64k", "agents": args.agents, "scale": args.scale, "max_turns": args.max_turns}


def ablation(args, tmp):
    tr = trace(tmp, args.agents, args.scale)
    cluster = CLUSTER if args.de_fetch == "auto" else cluster_variant(tmp, "ablation", de_fetch=args.de_fetch)
    extra = ["--max-turns", args.max_turns] + (["--processes"] if args.processes else [])
    runs, _ = dualpath(mode(args), cluster, tr, ABLATION, *extra)
    rows = {p: summary(runs[p]) for p in ABLATION}
    j = [rows[p]["jct_s"] for p in ABLATION]
    res = {"workload": workload(args), "cluster": f"scaled64k.toml (1P2D), de_fetch = {args.de_fetch}",
           "processes": args.processes, "runs": rows,
           "strictly_decreasing": all(a > b for a, b in zip(j, j[1:])),
           "dualpath_vs_basic": j[0] / j[3], "layerwise_vs_basic": j[0] / j[1],
           "dualpath_nosched_vs_layerwise": j[1] / j[2], "dualpath_vs_dualpath_nosched": j[2] / j[3]}
    t = ["| step | JCT s | TTFT p50 / p99 s | queue mean s | SNIC MB per node | SNIC max/avg | paths PE/DE |",
         "|---|---|---|---|---|---|---|"]
    for p in ABLATION:
        x = rows[p]
        t.append(f"| {p} | {x['jct_s']:.2f} | {x['ttft_p50_s']:.3f} / {x['ttft_p99_s']:.3f} | "
                 f"{x['queue_mean_s']:.3f} | {' / '.join(f'{m:.0f}' for m in x['snic_mb'])} | "
                 f"{x['snic_max_over_avg']:.2f} | {x['paths']['pe']}/{x['paths']['de']} |")
    t.append(f"\nstrictly decreasing: {res['strictly_decreasing']}; dualpath_vs_basic = {res['dualpath_vs_basic']:.2f}; "
             f"steps {res['layerwise_vs_basic']:.2f}x, {res['dualpath_nosched_vs_layerwise']:.2f}x, "
             f"{res['dualpath_vs_dualpath_nosched']:.2f}x")
    write("ablation", args, res, "\n".join(t))


def pd_sweep(args, tmp):
    tr = trace(tmp, args.agents, args.scale)
    layouts = [(1, 1), (1, 2), (2, 1), (2, 2)]
    rows = {}
    for p, d in layouts:
        c = cluster_variant(tmp, f"{p}p{d}d", prefill_nodes=p, decode_nodes=d, hbm_gb=args.hbm_gb, prefill_hbm_gb=args.hbm_gb,
                            snic_gb_per_s=READ_BOUND_SNIC)
        runs, _ = dualpath(mode(args), c, tr, ["basic", "dualpath"], "--max-turns", args.max_turns)
        rows[f"{p}P{d}D"] = {k: summary(v) for k, v in runs.items()}
    J = lambda lay, pol: rows[lay][pol]["jct_s"]
    pairs = [("basic 1P1D", J("1P1D", "basic"), "basic 1P2D", J("1P2D", "basic"), 1),
             ("dualpath 1P1D", J("1P1D", "dualpath"), "basic 2P1D", J("2P1D", "basic"), 2),
             ("dualpath 2P1D", J("2P1D", "dualpath"), "dualpath 1P2D", J("1P2D", "dualpath"), 3)]
    eq = [{"a": a, "b": b, "snics_read": n, "jct_a_s": ja, "jct_b_s": jb, "ratio": ja / jb,
           "within_10pct": abs(ja / jb - 1) <= 0.10} for a, ja, b, jb, n in pairs]
    res = {"workload": workload(args), "cluster": f"scaled64k.toml, hbm_gb = {args.hbm_gb}", "layouts": rows,
           "dualpath_vs_basic": {k: v["basic"]["jct_s"] / v["dualpath"]["jct_s"] for k, v in rows.items()},
           "equal_snic_pairs": eq}
    t = ["| layout | basic JCT s | dualpath JCT s | dualpath_vs_basic | SNICs basic / dualpath read through |",
         "|---|---|---|---|---|"]
    for (p, d) in layouts:
        k = f"{p}P{d}D"
        t.append(f"| {k} | {J(k, 'basic'):.2f} | {J(k, 'dualpath'):.2f} | {res['dualpath_vs_basic'][k]:.2f} | {p} / {p + d} |")
    t += ["", "| equal SNIC count | JCT s | JCT s | ratio | within 10% |", "|---|---|---|---|---|"]
    for e in eq:
        t.append(f"| {e['a']} vs {e['b']} ({e['snics_read']} SNICs) | {e['jct_a_s']:.2f} | {e['jct_b_s']:.2f} | "
                 f"{e['ratio']:.3f} | {'yes' if e['within_10pct'] else 'no'} |")
    write("pd_sweep", args, res, "\n".join(t))


def snic_balance(args, tmp):
    tr = trace(tmp, args.agents, args.scale)
    c = cluster_variant(tmp, "2p4d", prefill_nodes=2, decode_nodes=4, engines_per_node=2, hbm_gb=args.hbm_gb, prefill_hbm_gb=args.hbm_gb,
                        snic_gb_per_s=args.snic_gbps)
    pols = ["dualpath", "round_robin", "dualpath_nosched"]
    runs, _ = dualpath(mode(args), c, tr, pols, "--max-turns", args.max_turns)
    rows = {p: summary(runs[p]) for p in pols}
    d, rr = rows["dualpath"], rows["round_robin"]
    res = {"workload": workload(args), "cluster": f"scaled64k.toml as 2P4D, 2 engines per node, hbm_gb = {args.hbm_gb}, "
           f"snic_gb_per_s = {args.snic_gbps}",
           "runs": rows,
           "dualpath_not_slower_than_round_robin": d["jct_s"] <= rr["jct_s"],
           "dualpath_snic_max_over_avg_le_1_2": d["snic_max_over_avg"] <= 1.2,
           "dualpath_snic_below_round_robin": d["snic_max_over_avg"] < rr["snic_max_over_avg"],
           "every_decode_node_reads": all(m > 0 for m in d["snic_mb"][2:])}
    t = ["| policy | JCT s | SNIC MB per node (P P D D D D) | SNIC max/avg whole run | per-1 s mean | paths PE/DE |",
         "|---|---|---|---|---|---|"]
    for p in pols:
        x = rows[p]
        t.append(f"| {p} | {x['jct_s']:.2f} | {' / '.join(f'{m:.0f}' for m in x['snic_mb'])} | "
                 f"{x['snic_max_over_avg']:.3f} | {x['snic_1s_max_over_avg_mean']:.3f} | "
                 f"{x['paths']['pe']}/{x['paths']['de']} |")
    write("snic_balance", args, res, "\n".join(t))


def scaling(args, tmp):
    pts = []
    for kind, factors in (("append", (0.5, 0.75, 1.0, 2.0)), ("gen", (0.5, 1.0, 2.0))):
        for f in factors:
            tr = trace(tmp, args.agents, args.scale, f if kind == "append" else 1.0, f if kind == "gen" else 1.0)
            c = cluster_variant(tmp, "scaling", hbm_gb=args.hbm_gb, prefill_hbm_gb=args.hbm_gb, snic_gb_per_s=READ_BOUND_SNIC)
            runs, _ = dualpath(mode(args), c, tr, ["basic", "dualpath"], "--max-turns", args.max_turns)
            b, d = summary(runs["basic"]), summary(runs["dualpath"])
            pts.append({"sweep": kind, "factor": f, "basic_jct_s": b["jct_s"], "dualpath_jct_s": d["jct_s"],
                        "dualpath_vs_basic": b["jct_s"] / d["jct_s"],
                        "failed_turns": b["failed_turns"] + d["failed_turns"]})
    res = {"workload": workload(args), "cluster": f"scaled64k.toml (1P2D), hbm_gb = {args.hbm_gb}", "points": pts}
    t = ["| sweep | factor | basic JCT s | dualpath JCT s | dualpath_vs_basic |", "|---|---|---|---|---|"]
    for p in pts:
        t.append(f"| {p['sweep']} | x{p['factor']:g} | {p['basic_jct_s']:.2f} | {p['dualpath_jct_s']:.2f} | "
                 f"{p['dualpath_vs_basic']:.2f} |")
    write("scaling", args, res, "\n".join(t))


def online(args, tmp):
    tr = trace(tmp, args.agents, args.scale)
    with tempfile.TemporaryDirectory() as t2:
        report = os.path.join(t2, "report.json")
        cmd = [BIN, mode(args), "--cluster", cluster_variant(tmp, "online", hbm_gb=args.hbm_gb, prefill_hbm_gb=args.hbm_gb, snic_gb_per_s=READ_BOUND_SNIC), "--trace", tr, "--compare", "basic,dualpath", "--quiet",
               "--max-turns", str(args.max_turns), "--mode", "online", "--aps-sweep", args.aps, "--report", report]
        print("+ dualpath", " ".join(cmd[2:]), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, cwd=t2)
        rep = json.load(open(report))
    rows, cap = [], {}
    for pol, v in rep["policies"].items():
        cap[pol] = v["capacity_aps"]
        for pt in v["points"]:
            r = pt["run"]
            rows.append({"policy": pol, "aps": pt["aps"], "meets_slo": pt["meets_slo"],
                         "ttft_peak_10s_mean_s": r["ttft_peak_10s_mean_s"], "ttft_mean_s": r["ttft_s"]["mean"],
                         "ttft_p99_s": r["ttft_s"]["p99"], "tpot_mean_s": r["tpot_s"]["mean"], "jct_s": r["jct_s"],
                         "turns": r["turns"], "failed_turns": r["failed_turns"]})
    res = {"workload": workload(args), "cluster": f"scaled64k.toml (1P2D), hbm_gb = {args.hbm_gb}", "slo": rep["slo"], "capacity_aps": cap,
           "capacity_ratio": rep.get("capacity_ratio", {}), "points": rows}
    t = ["| policy | APS | TTFT peak 10 s | TTFT mean | TTFT p99 | TPOT mean ms | JCT s | SLO |",
         "|---|---|---|---|---|---|---|---|"]
    for x in rows:
        t.append(f"| {x['policy']} | {x['aps']:g} | {x['ttft_peak_10s_mean_s']:.2f} | {x['ttft_mean_s']:.2f} | "
                 f"{x['ttft_p99_s']:.2f} | {1000 * x['tpot_mean_s']:.1f} | {x['jct_s']:.1f} | "
                 f"{'yes' if x['meets_slo'] else 'no'} |")
    t.append("\n" + ", ".join(f"capacity {k} = {v:g} APS" for k, v in cap.items()) +
             "".join(f", {k} = {v:.2f}" for k, v in res["capacity_ratio"].items()))
    write("online", args, res, "\n".join(t))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("experiment", choices=["ablation", "pd_sweep", "snic_balance", "scaling", "online"])
    ap.add_argument("--sim", action="store_true", help="dualpath sim instead of dualpath run")
    ap.add_argument("--agents", type=int, default=32)
    ap.add_argument("--scale", type=float, default=256)
    ap.add_argument("--max-turns", type=int, default=60)
    ap.add_argument("--hbm-gb", type=float, default=0.08, help="pd_sweep, snic_balance, scaling, online: HBM for KV per GPU")
    ap.add_argument("--snic-gbps", type=float, default=0.3, help="snic_balance: SNIC read rate per node")
    ap.add_argument("--aps", default="0.5,1,1.5,2,3,4", help="online: arrival rates")
    ap.add_argument("--processes", action="store_true", help="ablation: one process per node (dualpath run only)")
    ap.add_argument("--de-fetch", choices=["auto", "push", "pull"], default="auto",
                    help="ablation: hardware.de_fetch, how DE-path hit KV reaches the PE (docs/design.md §4)")
    ap.add_argument("--out", help="result JSON (default scaled64k_<experiment>.result.json here)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        globals()[args.experiment](args, tmp)


if __name__ == "__main__":
    main()
