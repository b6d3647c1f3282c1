#!/usr/bin/env python3
"""Serving soak: `dualpath serve` under `dualpath bench serve` for --minutes (docs/guide/serve.md, "Soak").

The tiny model on 2P2D node processes started by this script at the server's registry (as an operator would
on other hosts; tcp between nodes; with --verify every answer is also checked against a full recompute). Load:
`bench serve` rounds of --agents conversations of the demo shape (--concurrency at once, each round its own
seed, so its prompts are new), a --cancel-share of turns hung up on after their first token and sent again.
Every --kill-every seconds one node process is SIGKILLed (decode and prefill in turn) and started again as
the same index --restart-after seconds later; it rejoins after its quarantine. Reports requests answered,
errors by status, hang-ups, kills and rejoins, resident memory of every process at the start and the end,
every node's free DRAM buffer slots and every engine's free HBM at the end against the start (nothing
leaked), and TTFT drift (each round's p50 and p99). Writes serve_soak.result.json (or --out). Talks only to
127.0.0.1; every wait is bounded.

  bench/experiments/serve_soak.py [--minutes 10] [--agents 64] [--concurrency 16] [--cancel-share 0.05]
                                  [--kill-every 120] [--restart-after 2] [--verify]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "build", "apps", "dualpath"))
PREFILL, DECODE = 2, 2  # serve_2p2d.toml's

CLUSTER = os.path.join(HERE, "serve_2p2d.toml")  # 2P2D of the tiny model over tcp


def get(port, path, timeout=10):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


def samples(text, name):
    """{labels: value} of one metric family in Prometheus text."""
    out = {}
    for m in re.finditer(r"^" + re.escape(name) + r"(\{[^}]*\})? (\S+)$", text, re.M):
        out[m.group(1) or ""] = float(m.group(2))
    return out


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wait_for(what, seconds, check):
    until = time.time() + seconds
    while time.time() < until:
        v = check()
        if v:
            return v
        time.sleep(0.2)
    sys.exit(f"serve_soak: {what} not within {seconds} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--cancel-share", type=float, default=0.05)
    ap.add_argument("--kill-every", type=float, default=120)
    ap.add_argument("--restart-after", type=float, default=2)
    ap.add_argument("--port", type=int, default=8177)
    ap.add_argument("--verify", action="store_true", help="serve --verify: recompute every answer (fewer requests)")
    ap.add_argument("--out", default="serve_soak.result.json")
    ap.add_argument("--keep", action="store_true", help="keep the server's and the nodes' logs (the path is printed)")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="serve-soak-")
    env = dict(os.environ, DUALPATH_SECRET=f"soak-{os.getpid()}-{time.time_ns()}")
    procs = {}
    server = None
    try:
        out = open(os.path.join(tmp, "serve.out"), "w")
        server = subprocess.Popen(
            [BIN, "serve", "--cluster", CLUSTER, "--node-registry", "127.0.0.1:0", "--listen", f"127.0.0.1:{a.port}"]
            + (["--verify"] if a.verify else []),
            cwd=tmp, env=env, stdout=out, stderr=open(os.path.join(tmp, "serve.log"), "w"))

        def registry():
            m = re.search(r"node registry at (\S+?):\s", open(os.path.join(tmp, "serve.out")).read())
            return m.group(1) if m else None

        at = wait_for("the node registry", 60, registry)

        def start_node(n):
            log = open(os.path.join(tmp, f"node-{n}.log"), "a")
            procs[n] = subprocess.Popen([BIN, "node", "--registry", at, "--node", str(n), "--timeout-ms", "20000"],
                                        env=env, stdout=log, stderr=log)

        for n in range(PREFILL + DECODE):
            start_node(n)

        def healthy():
            try:
                return get(a.port, "/health", 2) and True
            except OSError:
                return False

        wait_for("serve's /health", 120, healthy)
        time.sleep(3)  # the buffers' first sample (every 2 s)
        start_metrics = get(a.port, "/metrics")
        start_rss = {"serve": rss_kb(server.pid), **{f"node {n}": rss_kb(p.pid) for n, p in procs.items()}}

        t0 = time.time()
        rounds, kills, next_kill, victims = [], [], t0 + a.kill_every, [2, 0, 3, 1]
        restart_at = None
        while time.time() - t0 < a.minutes * 60:
            seed = len(rounds) + 1
            report = os.path.join(tmp, f"round-{seed}.json")
            bench = subprocess.Popen(
                [BIN, "bench", "serve", "--url", f"127.0.0.1:{a.port}", "--agents", str(a.agents), "--seed",
                 str(seed), "--concurrency", str(a.concurrency), "--cancel-share", str(a.cancel_share),
                 "--label", f"round {seed}", "--quiet", "--report", report], env=env)
            while bench.poll() is None:  # kills and restarts while the round runs
                now = time.time()
                if now >= next_kill and restart_at is None:
                    n = victims[len(kills) % len(victims)]
                    procs[n].send_signal(signal.SIGKILL)
                    procs[n].wait(timeout=10)
                    kills.append({"at_s": round(now - t0, 1), "node": n})
                    restart_at = now + a.restart_after
                elif restart_at is not None and now >= restart_at:
                    start_node(kills[-1]["node"])
                    restart_at, next_kill = None, now + a.kill_every
                time.sleep(0.2)
            if os.path.exists(report):
                r = json.load(open(report))["runs"][0]
                r["exit_code"] = bench.returncode
                rounds.append(r)
                print(f"serve_soak: round {seed} at {time.time() - t0:.0f} s: {r['turns']} turns, "
                      f"{r['failed_turns']} failed, TTFT p50 {1e3 * r['ttft_s']['p50']:.1f} ms", flush=True)
            else:
                sys.exit(f"serve_soak: bench serve wrote no report (exit {bench.returncode})")
        if restart_at is not None:
            start_node(kills[-1]["node"])
        elapsed = time.time() - t0

        # Quiet: every rejoin done, the buffers' gauges sampled again, the recompute caught up (bounded).
        def all_back():
            nodes = samples(get(a.port, "/metrics"), "dualpath_serve_nodes_total")
            return nodes.get('{event="rejoined"}', 0) >= len(kills)

        until = time.time() + 60
        while time.time() < until and not all_back():
            time.sleep(0.5)
        answered = sum(r["turns"] - r["failed_turns"] for r in rounds)

        def checked():
            v = samples(get(a.port, "/metrics"), "dualpath_serve_verified_answers")
            return sum(v.values()) >= answered

        until = time.time() + 120
        while a.verify and time.time() < until and not checked():
            time.sleep(1)
        time.sleep(3)
        end_metrics = get(a.port, "/metrics")
        end_rss = {"serve": rss_kb(server.pid), **{f"node {n}": rss_kb(p.pid) for n, p in procs.items()}}
        server.send_signal(signal.SIGTERM)
        server_exit = server.wait(timeout=60)
        server = None
        node_exits = {}
        for n, p in procs.items():
            try:
                node_exits[n] = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                node_exits[n] = "still running 30 s after the server stopped"
        stopped = re.search(r"stopped: .*", open(os.path.join(tmp, "serve.out")).read())

        errors = {}
        for r in rounds:
            for status, n in r.get("errors_by_status", {}).items():
                errors[status] = errors.get(status, 0) + n
        slots0, slots1 = (samples(m, "dualpath_serve_buffer_slots") for m in (start_metrics, end_metrics))
        hbm0, hbm1 = (samples(m, "dualpath_serve_hbm_free_bytes") for m in (start_metrics, end_metrics))
        verified = samples(end_metrics, "dualpath_serve_verified_answers")
        result = {
            "minutes": round(elapsed / 60, 2),
            "rounds": len(rounds),
            "requests": sum(r["turns"] for r in rounds),
            "answered": answered,
            "failed": sum(r["failed_turns"] for r in rounds),
            "hung_up": sum(r.get("hung_up", 0) for r in rounds),
            "errors_by_status": errors,
            "kills": kills,
            "nodes": samples(end_metrics, "dualpath_serve_nodes_total"),
            "resumed_streams": samples(end_metrics, "dualpath_serve_resumed_streams_total").get("", 0),
            "rechecked_tokens": samples(end_metrics, "dualpath_serve_rechecked_tokens_total"),
            "verified": verified,
            "rss_kb_start": start_rss,
            "rss_kb_end": end_rss,
            "slots_start": slots0,
            "slots_end": slots1,
            "hbm_free_start": hbm0,
            "hbm_free_end": hbm1,
            "slots_and_hbm_back": slots0 == slots1 and hbm0 == hbm1 and bool(slots0) and bool(hbm0),
            "ttft_p50_ms_by_round": [round(1e3 * r["ttft_s"]["p50"], 2) for r in rounds],
            "ttft_p99_ms_by_round": [round(1e3 * r["ttft_s"]["p99"], 2) for r in rounds],
            "server_exit": server_exit,
            "node_exits": node_exits,
            "server_said": stopped.group(0) if stopped else None,
        }
        json.dump(result, open(a.out, "w"), indent=2)
        first, last = rounds[0]["ttft_s"]["p50"], rounds[-1]["ttft_s"]["p50"]
        print(f"requests {result['requests']} in {result['minutes']} min ({len(rounds)} rounds): "
              f"{answered} answered, {result['failed']} failed, {result['hung_up']} hung up and sent again; "
              f"errors {errors or 'none'}")
        print(f"nodes killed {len(kills)}, lost/rejoined {result['nodes']}; streams resumed "
              f"{result['resumed_streams']:.0f}, re-made tokens {result['rechecked_tokens']}")
        print(f"verified {verified}")
        print(f"resident MB start/end: " + ", ".join(
            f"{k} {(start_rss.get(k) or 0) / 1024:.0f}/{(end_rss.get(k) or 0) / 1024:.0f}" for k in end_rss))
        print(f"free slots and HBM at the end as at the start: {result['slots_and_hbm_back']}")
        print(f"TTFT p50 first/last round {1e3 * first:.1f}/{1e3 * last:.1f} ms ({last / first:.2f}x)")
        print(f"server: exit {server_exit}; {result['server_said']}; nodes exit {node_exits}")
    finally:
        for p in ([server] if server else []) + list(procs.values()):
            if p.poll() is None:
                p.kill()
                p.wait()
        if a.keep:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
