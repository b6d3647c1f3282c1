#!/usr/bin/env python3
"""Table 3 and online capacity: 2P4D with 2K agents vs 48P96D with 48K agents offline; online 2P4D at
0.4 APS vs 44P88D at 8.8 APS; the online capacity of DS 660B (2P4D) and DS 27B (1P1D) under the SLO."""
from common import runs, sim, write

out = {}
small = runs(sim("--preset", "64k", "--agents", 2048, "--policy", "dualpath"))["dualpath"]
big = runs(sim("--preset", "64k", "--agents", 49152, "--prefill-nodes", 48, "--decode-nodes", 96,
               "--policy", "dualpath"))["dualpath"]
out["offline"] = {"2P4D_2048_jct_s": small["jct_s"], "48P96D_49152_jct_s": big["jct_s"],
                  "ratio": big["jct_s"] / small["jct_s"], "paper": {"2P4D": 3167, "48P96D": 3201}}
on_small = runs(sim("--preset", "64k", "--agents", 400, "--mode", "online", "--aps", 0.4, "--policy", "dualpath"))["dualpath"]
on_big = runs(sim("--preset", "64k", "--agents", 8800, "--mode", "online", "--aps", 8.8, "--prefill-nodes", 44,
                  "--decode-nodes", 88, "--policy", "dualpath"))["dualpath"]
out["online"] = {"2P4D_0.4aps_ttft_mean_s": on_small["ttft_s"]["mean"], "44P88D_8.8aps_ttft_mean_s": on_big["ttft_s"]["mean"],
                 "paper": {"2P4D": 1.739, "44P88D": 1.847}}
cap = {}
for model, cluster, agents, rates, extra in (
        ("ds660b", "ds660b_2p4d.toml", 400, "0.1,0.2,0.3,0.4,0.45,0.5,0.6,0.7,0.8", []),
        ("ds27b", "ds27b.toml", 400, "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,1.0,1.2", [])):
    rep = sim("--preset", "64k", "--agents", agents, "--aps-sweep", rates, "--compare", "basic,dualpath", *extra,
              cluster=cluster)
    cap[model] = {p: rep["policies"][p]["capacity_aps"] for p in ("basic", "dualpath")}
out["capacity_aps"] = cap
out["capacity_paper"] = {"ds660b": {"basic": 0.2, "dualpath": 0.45}, "ds27b": {"basic": 0.3, "dualpath": 0.5}}
o = out["offline"]
table = (f"| | ours | paper |\n|---|---|---|\n"
         f"| offline JCT 2P4D, 2,048 agents (s) | {o['2P4D_2048_jct_s']:,.0f} | 3,167 |\n"
         f"| offline JCT 48P96D, 49,152 agents (s) | {o['48P96D_49152_jct_s']:,.0f} | 3,201 |\n"
         f"| ratio | {o['ratio']:.3f} | {3201 / 3167:.3f} |\n"
         f"| online TTFT 2P4D at 0.4 APS (s, mean) | {out['online']['2P4D_0.4aps_ttft_mean_s']:.3f} | 1.739 |\n"
         f"| online TTFT 44P88D at 8.8 APS (s, mean) | {out['online']['44P88D_8.8aps_ttft_mean_s']:.3f} | 1.847 |\n"
         + "".join(f"| capacity {m} basic → dualpath (APS) | {c['basic']} → {c['dualpath']} | "
                   f"{out['capacity_paper'][m]['basic']} → {out['capacity_paper'][m]['dualpath']} |\n" for m, c in cap.items()))
write("table3_scale", out, table)
