#!/usr/bin/env python3
"""Fig 8: DS 27B P/D sweep, offline, basic vs dualpath; equal SNIC counts alike, the largest gain at 1P2D."""
from common import runs, sim, write

LAYOUTS = [(1, 1), (1, 2), (2, 1), (2, 2)]  # the layouts the paper names
AGENTS = 1024
rows, lines = [], []
for p, d in LAYOUTS:
    r = runs(sim("--preset", "64k", "--agents", AGENTS, "--prefill-nodes", p, "--decode-nodes", d,
                 "--compare", "basic,dualpath", cluster="ds27b.toml"))
    b, du = r["basic"]["jct_s"], r["dualpath"]["jct_s"]
    rows.append({"layout": f"{p}P{d}D", "basic_s": b, "dualpath_s": du, "gain": b / du})
    lines.append(f"| {p}P{d}D | {b:,.0f} | {du:,.0f} | {b / du:.2f} |")
by = {x["layout"]: x for x in rows}
pairs = [("basic 1P1D", by["1P1D"]["basic_s"], "basic 1P2D", by["1P2D"]["basic_s"]),
         ("dualpath 1P1D", by["1P1D"]["dualpath_s"], "basic 2P1D", by["2P1D"]["basic_s"]),
         ("dualpath 2P1D", by["2P1D"]["dualpath_s"], "dualpath 1P2D", by["1P2D"]["dualpath_s"])]
best = max(rows, key=lambda x: x["gain"])
table = ("| layout | basic (s) | dualpath (s) | gain |\n|---|---|---|---|\n" + "\n".join(lines)
         + f"\n\nlargest gain {best['gain']:.2f} at {best['layout']} (paper 2.46 at 1P2D); mean "
         + f"{sum(x['gain'] for x in rows) / len(rows):.2f} (paper 1.64)\n\n| equal SNIC count | ratio |\n|---|---|\n"
         + "\n".join(f"| {a} / {c} | {x / y:.2f} |" for a, x, c, y in pairs))
write("fig8_pd_sweep", {"agents": AGENTS, "rows": rows, "pairs": [{"a": a, "b": c, "ratio": x / y} for a, x, c, y in pairs]},
      table)
