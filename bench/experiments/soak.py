#!/usr/bin/env python3
"""Soak: node processes SIGKILLed one after another while a multi-process run goes on (docs/design.md §13).

Runs the same workload twice on a 6P6D cluster of the tiny model (cpu backend, one process per node, tcp,
every turn verified against a full recompute): once undisturbed, once while this script SIGKILLs a random
node process every --interval seconds, `--kills` times, always leaving one prefill and one decode node
up, and once more the same way on nodes this script starts itself (`--node-registry`), starting every
killed node again --restart-after seconds later as the same index: it rejoins once its quarantine
(2 timeout_s + 1 s after the loss) is over. Prints a table and writes soak.result.json (or --out): kills
done, nodes the run lost and got back, turns re-run, turns verified, failed and mismatched, and JCT against
the undisturbed run. Talks only to 127.0.0.1. A few minutes.

  bench/experiments/soak.py [--kills 10] [--interval 2.5] [--restart-after 1] [--agents 24] [--max-turns 20]
                            [--seed 1]
"""
import argparse
import collections
import contextlib
import json
import os
import random
import shutil
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


class launcher_log:
    """What the launcher's stderr has said so far, read incrementally (each poll reads only the new lines):
    turns answered of the total, the registry's address, and how often each node rejoined."""

    def __init__(self, path):
        self.path, self.offset, self.partial = path, 0, ""
        self.done, self.total, self.registry = 0, None, None
        self.rejoins = collections.Counter()

    def poll(self):
        with open(self.path) as f:
            f.seek(self.offset)
            text = self.partial + f.read()
            self.offset = f.tell()
        *lines, self.partial = text.split("\n")
        for line in lines:
            if line.startswith("dualpath: turns "):  # "dualpath: turns 3/480 agents ..."
                self.done, self.total = map(int, line.split()[2].split("/"))
            elif line.startswith("dualpath: node registry at "):  # "... at HOST:PORT: start ..."
                self.registry = line.split(" at ", 1)[1].split(": ", 1)[0]
            elif "launcher: node " in line and " rejoined the run" in line:
                self.rejoins[int(line.split("launcher: node ", 1)[1].split()[0])] += 1

    def all_answered(self):
        return self.total is not None and self.done == self.total


class hand_nodes:
    """`dualpath node` processes this script starts (restart mode): {node: Popen}, and every one started."""

    def __init__(self, tmp, env):
        self.tmp, self.env, self.now, self.all = tmp, env, {}, []

    def start(self, registry, n):
        path = os.path.join(self.tmp, f"node{n}.{len(self.all)}.log")
        with open(path, "w") as log:
            p = subprocess.Popen([BIN, "node", "--registry", registry, "--node", str(n), "--timeout-ms", "60000"],
                                 cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=log, env=self.env)
        self.now[n] = p
        self.all.append((p, path))


def run(tmp, name, args, kills=0, restart=False):
    """One multi-process run; with kills, SIGKILLs nodes meanwhile (and with restart, starts them again).
    Returns (report run, kill log, restarts that came too late: the run had ended)."""
    cluster = os.path.join(tmp, "cluster.toml")
    report = os.path.join(tmp, f"{name}.json")
    nodes_flag = ["--node-registry", "127.0.0.1:0"] if restart else ["--processes"]
    cmd = [BIN, "run", "--cluster", cluster, "--trace", os.path.join(tmp, "trace.jsonl"), *nodes_flag,
           "--max-turns", str(args.max_turns), "--tool-time", "--verify-every", "1", "--report", report]
    print("+ dualpath", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    shutil.rmtree(os.path.join(tmp, "store"), ignore_errors=True)  # every run starts cold: runs compare alike
    rng = random.Random(args.seed)
    log = []
    env = dict(os.environ, DUALPATH_SECRET="soak-" + "%032x" % random.Random(args.seed).getrandbits(128))
    hands = hand_nodes(tmp, env)
    to_restart = []  # (when, node)
    kills_of = collections.Counter()
    with open(os.path.join(tmp, f"{name}.log"), "w") as err:
        proc = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=err, env=env)
        start = time.monotonic()
        alive = set(range(PREFILL + DECODE))
        said = launcher_log(err.name)
        deadline = start + 1800  # bounded: the run itself ends long before
        next_kill = None  # the first kill comes --interval after the first answered turn: a node lost
        # while the cluster is still being wired ends the run (docs/design.md §13)
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            said.poll()
            if restart and not hands.all:
                if said.registry:
                    for n in range(PREFILL + DECODE):
                        hands.start(said.registry, n)
                continue
            if to_restart and said.all_answered():
                to_restart.clear()  # the run is ending: a node started now would find no registry
            for when, n in [r for r in to_restart if r[0] <= time.monotonic()]:
                to_restart.remove((when, n))
                hands.start(said.registry, n)
            if restart:  # a node is up again once the launcher switched back to it as often as it was killed
                alive |= {n for n, times in said.rejoins.items() if times == kills_of[n]}
            if len(log) >= kills:
                continue
            if next_kill is None:
                if said.done > 0:
                    next_kill = time.monotonic() + args.interval
                continue
            if time.monotonic() < next_kill:
                continue
            next_kill += args.interval
            prefill = [n for n in alive if n < PREFILL]
            decode = [n for n in alive if n >= PREFILL]
            victims = (prefill if len(prefill) > 1 else []) + (decode if len(decode) > 1 else [])
            pids = {n: p.pid for n, p in hands.now.items()} if restart else node_pids(proc.pid)
            victims = [n for n in victims if n in pids]
            if not victims:
                continue
            v = rng.choice(victims)
            os.kill(pids[v], signal.SIGKILL)
            alive.discard(v)
            kills_of[v] += 1
            if restart:
                to_restart.append((time.monotonic() + args.restart_after, v))
            log.append({"node": v, "role": "prefill" if v < PREFILL else "decode",
                        "t_s": round(time.monotonic() - start, 2)})
            err.flush()
        if proc.poll() is None:
            proc.kill()
            raise SystemExit(f"{name}: the run did not end within 30 minutes")
        bad, late = [], 0
        for p, path in hands.all:  # the killed: -9; the rest exit 0 when stopped
            code = p.wait(timeout=60)
            if code in (0, -signal.SIGKILL):
                continue
            with open(path) as f:
                text = f.read()
            # A restart that came as the run ended finds no registry (or loses it while joining): not a fault.
            if "no registry at" in text or "went away" in text:
                late += 1
                continue
            bad.append(f"{os.path.basename(path)} exited {code}: {text[-300:]}")
        if bad:
            raise SystemExit(f"{name}: node processes failed:\n" + "\n".join(bad))

    if proc.returncode != 0:
        with open(err.name) as f:
            tail = f.readlines()[-15:]
        raise SystemExit(f"{name}: dualpath run exited {proc.returncode}; kills {log}; its last lines:\n" + "".join(tail))
    with open(report) as f:
        return json.load(f)["runs"][0], log, late


def with_tool_time(path, ms):
    """Every round of the trace gets `ms` of tool time (the generator writes none)."""
    agents = [json.loads(line) for line in open(path) if line.strip()]
    for a in agents:
        for r in a["rounds"]:
            r["tool_ms"] = ms
    with open(path, "w") as f:
        f.writelines(json.dumps(a) + "\n" for a in agents)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--interval", type=float, default=2.5, help="seconds between kills")
    ap.add_argument("--agents", type=int, default=24)
    ap.add_argument("--max-turns", type=int, default=40)
    ap.add_argument("--tool-ms", type=int, default=500,
                    help="agents think this long between turns, so restarted nodes outlast their quarantine")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--restart-after", type=float, default=1.0, help="seconds from a kill to the node's restart")
    ap.add_argument("--out", default=os.path.join(HERE, "soak.result.json"))
    ap.add_argument("--work", help="keep the store, traces and logs in this (new) directory instead of a temporary one")
    args = ap.parse_args()
    if args.kills > PREFILL + DECODE - 2:
        raise SystemExit(f"--kills at most {PREFILL + DECODE - 2}: one prefill and one decode node must remain")
    if args.work:
        os.makedirs(args.work)
    with (contextlib.nullcontext(args.work) if args.work else tempfile.TemporaryDirectory()) as tmp:
        with open(os.path.join(tmp, "cluster.toml"), "w") as f:
            f.write(CLUSTER)
        subprocess.run([BIN, "trace", "gen", "--preset", "32k", "--agents", str(args.agents), "--scale", "128",
                        "--seed", str(args.seed), "-o", os.path.join(tmp, "trace.jsonl")], check=True,
                       stdout=subprocess.DEVNULL)
        with_tool_time(os.path.join(tmp, "trace.jsonl"), args.tool_ms)
        calm, _, _ = run(tmp, "undisturbed", args)
        hit, kills, _ = run(tmp, "killed", args, args.kills)
        back, back_kills, late = run(tmp, "restarted", args, args.kills, restart=True)
    keys = ["jct_s", "turns", "failed_turns", "verified_turns", "mismatched_turns", "lost_nodes", "rejoined_nodes",
            "migrated_turns"]
    res = {"cluster": f"{PREFILL}P{DECODE}D tiny cpu, --processes, tcp", "agents": args.agents,
           "max_turns": args.max_turns, "tool_ms": args.tool_ms, "seed": args.seed, "interval_s": args.interval, "kills": kills,
           "restart_after_s": args.restart_after, "restart_kills": back_kills, "late_restarts": late,
           "undisturbed": {k: calm[k] for k in keys}, "killed": {k: hit[k] for k in keys},
           "killed_restarted": {k: back[k] for k in keys},
           "jct_ratio": hit["jct_s"] / calm["jct_s"], "jct_ratio_restarted": back["jct_s"] / calm["jct_s"]}
    with open(args.out, "w") as f:
        json.dump(res, f, indent=2)
    print("| run | JCT s | turns | verified | failed | mismatched | nodes lost | rejoined | turns re-run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in (("undisturbed", calm), (f"{len(kills)} kills", hit),
                    (f"{len(back_kills)} kills, each restarted", back)):
        print(f"| {name} | {r['jct_s']:.2f} | {r['turns']} | {r['verified_turns']} | {r['failed_turns']} | "
              f"{r['mismatched_turns']} | {r['lost_nodes']} | {r['rejoined_nodes']} | {r['migrated_turns']} |")
    print(f"\nJCT with kills / undisturbed = {res['jct_ratio']:.2f}, with restarts {res['jct_ratio_restarted']:.2f}; "
          "kills at " + ", ".join(f"{k['t_s']} s (node {k['node']}, {k['role']})" for k in kills)
          + "; with restarts at " + ", ".join(f"{k['t_s']} s (node {k['node']})" for k in back_kills))


if __name__ == "__main__":
    main()
