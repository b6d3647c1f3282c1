#!/usr/bin/env python3
"""Fig 7: DS 660B, 64K trace, 2P4D, offline JCT of basic, dualpath and oracle at 512 to 4,096 agents."""
from common import runs, sim, write, within

PAPER = {512: (2900, 2100, 2000), 1024: (None, None, None), 2048: (10100, 5400, None), 4096: (19500, 10400, 9400)}
rows, lines = [], []
for agents, (pb, pd, po) in PAPER.items():
    r = runs(sim("--preset", "64k", "--agents", agents, "--compare", "basic,dualpath,oracle"))
    b, d, o = (r[p]["jct_s"] for p in ("basic", "dualpath", "oracle"))
    rows.append({"agents": agents, "basic_s": b, "dualpath_s": d, "oracle_s": o, "dualpath_vs_basic": b / d,
                 "paper": {"basic_s": pb, "dualpath_s": pd, "oracle_s": po}})
    paper_ratio = pb / pd if pb and pd else None
    lines.append(f"| {agents} | {b:,.0f} | {d:,.0f} | {o:,.0f} | {b / d:.2f} | "
                 + (f"{pb:,} / {pd:,} / {po or '–'} | {paper_ratio:.2f} | {within(b / d, paper_ratio)} |"
                    if paper_ratio else "– | – | – |"))
table = ("| agents | basic (s) | dualpath (s) | oracle (s) | dualpath/basic | paper basic / dualpath / oracle (s) "
         "| paper ratio | ratio within 15% |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(lines))
write("fig7_offline", {"rows": rows}, table)
