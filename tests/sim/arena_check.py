#!/usr/bin/env python3
"""The short policy arena (bench/experiments/arena.py --short): 30 seeded scenarios, every policy simulated on
each. Checks what could go wrong: a scenario that fails or loses turns, a summary that does not follow from the
scenarios, a result that is not deterministic (simulated time: the same seed gives the same JCTs), and the
policy beyond the paper falling behind round robin by more than the arena's bound on any scenario."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ARENA = os.path.join(HERE, "..", "..", "bench", "experiments", "arena.py")
POLICIES = ["round_robin", "dualpath", "queue_aware"]
WORST_VS_RR = 1.10  # the short arena's bound for queue_aware against round robin (docs/experiments.md)


def arena(out, scenarios, *extra):
    subprocess.run([sys.executable, ARENA, "--short", "--scenarios", str(scenarios), "--jobs", "2", "--policies",
                    ",".join(POLICIES), "--out", out, *extra], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        full = arena(os.path.join(tmp, "a.json"), 30)
        again = arena(os.path.join(tmp, "b.json"), 3, "--relabel")
    scen = full["scenarios"]
    if len(scen) != 30 or full["summary"]["errors"]:
        failures.append(f"{len(scen)} scenarios, {full['summary']['errors']} failed")
    for s in scen:
        for p in POLICIES:
            if s.get("failed_turns", {}).get(p, 1) != 0:
                failures.append(f"scenario {s['index']}: {p} failed turns")
    originals = [s for s in again["scenarios"] if not s.get("relabel")]
    for a, b in zip(originals, scen[:3]):
        if a["value"] != b["value"]:
            failures.append(f"scenario {a['index']} not deterministic: {a['value']} then {b['value']}")
    # --relabel: the same scenarios again with their agents in another order, kept out of the summary; the same
    # work, so every turn completes, but the order reaches the scheduler, so some figure moves.
    relabelled = [s for s in again["scenarios"] if s.get("relabel")]
    if len(originals) != 3 or len(relabelled) != 3 or again["summary"]["scenarios"] != 3:
        counted = again["summary"]["scenarios"]
        failures.append(f"--relabel: {len(originals)} + {len(relabelled)} runs, summary of {counted}")
    for b in relabelled:
        if any(b["failed_turns"][p] for p in POLICIES):
            failures.append(f"scenario {b['index']} relabelled: failed turns")
    if all(a["value"] == b["value"] for a, b in zip(originals, relabelled)):
        failures.append("--relabel changed no figure: the agents' order did not reach the simulator")
    for p, row in full["summary"]["policies"].items():
        for ref, x in row.items():
            ratios = [s["value"][p] / s["value"][ref[3:]] for s in scen]
            if abs(max(ratios) - x["worst_ratio"]) > 1e-12 or not 0 <= x["win_rate"] <= 1:
                failures.append(f"{p} {ref}: summary does not follow from the scenarios")
    worst = full["summary"]["policies"]["queue_aware"]["vs_round_robin"]["worst_ratio"]
    if worst > WORST_VS_RR:
        failures.append(f"queue_aware is {worst:.3f}x round robin's JCT on its worst scenario (bound {WORST_VS_RR})")
    for f in failures:
        print("FAIL:", f)
    print(f"arena: {len(scen)} scenarios, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
