#!/usr/bin/env python3
"""Soak: node processes SIGKILLed one after another while a multi-process run goes on (docs/design.md §13).

Runs the same workload twice on a 6P6D cluster of the tiny model (cpu backend, one process per node, tcp,
every turn verified against a full recompute): once undisturbed, once while this script SIGKILLs a random
node process every --interval seconds, `--kills` times, always leaving one prefill and one decode node
alive (a lost node does not come back). Prints a table and writes soak.result.json (or --out): kills
done, nodes the run lost, turns re-run, turns verified, failed and mismatched, and JCT against the
undisturbed run. Talks only to 127.0.0.1. A few minutes.

  bench/experiments/soak.py [--kills 10] [--interval 2.5] [--agents 24] [--max-turns 20] [--seed 1]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
PREFILL, DECODE = 6, 6

CLUSTER = f"""# 6P6D of the tiny model on the cpu backend, storage-bound (real files, capped SNICs), tcp between nodes.
[model]
name = "tiny"
backend = "cpu"

[cluster]
prefill_nodes = {PREFILL}
decode_nodes = {DECODE}
engines_per_node = 1
block_tokens = 16

[hardware]
snic_gb_per_s = 0.004
dram_buffer_gb = 0.032
hbm_gb = 0.032
provider = "tcp"

[storage]
dir = "store"

[runtime]
timeout_s = 10
"""


def node_pids(launcher):
    """{node index: pid} of the launcher's `dualpath node` children, from /proc."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher:
                continue
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"node" in argv and b"--node" in argv:
            out[int(argv[argv.index(b"--node") + 1])] = int(p)
    return out


def answered(log_path):
    """True once the launcher's progress line says a turn was answered ("dualpath: turns 3/480 ...")."""
    with open(log_path) as f:
        for line in f:
            if line.startswith("dualpath: turns ") and not line.startswith("dualpath: turns 0/"):
                return True
    return False


def run(tmp, name, args, kills=0):
    """One `dualpath run --processes`; with kills, SIGKILLs nodes meanwhile. Returns (report run, kill log)."""
    cluster = os.path.join(tmp, "cluster.toml")
    report = os.path.join(tmp, f"{name}.json")
    cmd = [BIN, "run", "--cluster", cluster, "--trace", os.path.join(tmp, "trace.jsonl"), "--processes",
           "--max-turns", str(args.max_turns), "--verify-every", "1", "--report", report]
    print("+ dualpath", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    rng = random.Random(args.seed)
    log = []
    with open(os.path.join(tmp, f"{name}.log"), "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=err)
        start = time.monotonic()
        alive = set(range(PREFILL + DECODE))
        deadline = start + 1800  # bounded: the run itself ends long before
        next_kill = None  # the first kill comes --interval after the first answered turn: a node lost
        # while the cluster is still being wired ends the run (docs/design.md §13)
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            if len(log) >= kills:
                continue
            if next_kill is None:
                if answered(err.name):
                    next_kill = time.monotonic() + args.interval
                continue
            if time.monotonic() < next_kill:
                continue
            next_kill += args.interval
            prefill = [n for n in alive if n < PREFILL]
            decode = [n for n in alive if n >= PREFILL]
            victims = (prefill if len(prefill) > 1 else []) + (decode if len(decode) > 1 else [])
            pids = node_pids(proc.pid)
            victims = [n for n in victims if n in pids]
            if not victims:
                continue
            v = rng.choice(victims)
            os.kill(pids[v], signal.SIGKILL)
            alive.discard(v)
            log.append({"node": v, "role": "prefill" if v < PREFILL else "decode",
                        "t_s": round(time.monotonic() - start, 2)})
            err.flush()
        if proc.poll() is None:
            proc.kill()
            raise SystemExit(f"{name}: the run did not end within 30 minutes")
    if proc.returncode != 0:
        with open(err.name) as f:
            tail = f.readlines()[-15:]
        raise SystemExit(f"{name}: dualpath run exited {proc.returncode}; kills {log}; its last lines:\n" + "".join(tail))
    with open(report) as f:
        return json.load(f)["runs"][0], log


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--interval", type=float, default=2.5, help="seconds between kills")
    ap.add_argument("--agents", type=int, default=24)
    ap.add_argument("--max-turns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "soak.result.json"))
    args = ap.parse_args()
    if args.kills > PREFILL + DECODE - 2:
        raise SystemExit(f"--kills at most {PREFILL + DECODE - 2}: one prefill and one decode node must remain")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "cluster.toml"), "w") as f:
            f.write(CLUSTER)
        subprocess.run([BIN, "trace", "gen", "--preset", "32k", "--agents", str(args.agents), "--scale", "128",
                        "--seed", str(args.seed), "-o", os.path.join(tmp, "trace.jsonl")], check=True,
                       stdout=subprocess.DEVNULL)
        calm, _ = run(tmp, "undisturbed", args)
        hit, kills = run(tmp, "killed", args, args.kills)
    keys = ["jct_s", "turns", "failed_turns", "verified_turns", "mismatched_turns", "lost_nodes", "migrated_turns"]
    res = {"cluster": f"{PREFILL}P{DECODE}D tiny cpu, --processes, tcp", "agents": args.agents,
           "max_turns": args.max_turns, "seed": args.seed, "interval_s": args.interval, "kills": kills,
           "undisturbed": {k: calm[k] for k in keys}, "killed": {k: hit[k] for k in keys},
           "jct_ratio": hit["jct_s"] / calm["jct_s"]}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=2)
    print("| run | JCT s | turns | verified | failed | mismatched | nodes lost | turns re-run |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in (("undisturbed", calm), (f"{len(kills)} kills", hit)):
        print(f"| {name} | {r['jct_s']:.2f} | {r['turns']} | {r['verified_turns']} | {r['failed_turns']} | "
              f"{r['mismatched_turns']} | {r['lost_nodes']} | {r['migrated_turns']} |")
    print(f"\nJCT with kills / undisturbed = {res['jct_ratio']:.2f}; kills at "
          + ", ".join(f"{k['t_s']} s (node {k['node']}, {k['role']})" for k in kills))


if __name__ == "__main__":
    main()
