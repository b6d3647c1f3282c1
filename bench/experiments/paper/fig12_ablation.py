#!/usr/bin/env python3
"""Fig 12 (right): the ablation Basic -> +layer-wise -> +dual path -> +scheduling, DS 660B 64K 2P4D."""
from common import runs, sim, write

STEPS = ["basic", "layerwise", "dualpath_nosched", "dualpath"]
PAPER = {2048: [10100, 8750, 6500, 5450]}
rows, lines = [], []
for agents in (1024, 2048):
    r = runs(sim("--preset", "64k", "--agents", agents, "--compare", ",".join(STEPS)))
    jct = [r[p]["jct_s"] for p in STEPS]
    rows.append({"agents": agents, "jct_s": dict(zip(STEPS, jct)), "paper_s": PAPER.get(agents)})
    ours = " → ".join(f"{x:,.0f}" for x in jct)
    paper = " → ".join(f"{x:,}" for x in PAPER[agents]) if agents in PAPER else "–"
    gain = jct[0] / jct[-1]
    pgain = PAPER[agents][0] / PAPER[agents][-1] if agents in PAPER else None
    lines.append(f"| {agents} | {ours} | {gain:.2f} | {paper} | {pgain:.2f} |" if pgain else f"| {agents} | {ours} | {gain:.2f} | – | – |")
table = ("| agents | basic → +layer-wise → +dual path → +scheduling (s) | total gain | paper (s) | paper gain |\n"
         "|---|---|---|---|---|\n" + "\n".join(lines))
write("fig12_ablation", {"rows": rows}, table)
