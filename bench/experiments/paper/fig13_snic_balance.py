#!/usr/bin/env python3
"""Fig 13: storage NIC load max/avg across nodes with DualPath's scheduler, round robin, and queue-blind paths."""
from common import runs, sim, write

AGENTS = 2048
r = runs(sim("--preset", "64k", "--agents", AGENTS, "--compare", "dualpath,round_robin,dualpath_nosched"))
rows = [{"policy": p, "snic_max_over_avg": r[p]["snic_max_over_avg"], "jct_s": r[p]["jct_s"]} for p in r]
paper = {"dualpath": 1.184, "dualpath_nosched": 1.528}
table = ("| policy | SNIC bytes max/avg | JCT (s) | paper |\n|---|---|---|---|\n"
         + "\n".join(f"| {x['policy']} | {x['snic_max_over_avg']:.3f} | {x['jct_s']:,.0f} | {paper.get(x['policy'], '–')} |"
                     for x in rows))
write("fig13_snic_balance", {"agents": AGENTS, "rows": rows}, table)
