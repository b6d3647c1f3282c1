"""`dualpath plot REPORT.json -o DIR`: the pictures of a run report (docs/design.md §15), as the paper draws them.

A comparison report (`run`/`sim` with --compare) gives jct.png (JCT per policy), ttft_breakdown.png (the
mean TTFT split into queue, KV read, wait and prefill: Fig 12 left), snic_over_time.png (each node's SNIC
read rate per window, one panel per policy: Fig 13) and latency.png (TTFT and TPOT percentiles). A sweep
report (--aps-sweep) gives ttft_vs_aps.png (Fig 10). A run-vs-sim result (bench/experiments/
sim_validation.sh) gives validation.png. Prints the files it wrote, one per line."""
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.stderr.write("dualpath plot: needs matplotlib for /usr/bin/python3 (Debian package python3-matplotlib)\n")
    sys.exit(2)


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)


def comparison(runs, out, written):
    names = [r["policy"] for r in runs]
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(runs), 3.4))
    ax.bar(names, [r["jct_s"] for r in runs], color="#4477aa")
    ax.set_ylabel("JCT (s)")
    ax.set_title("Job completion time")
    for i, r in enumerate(runs):
        ax.annotate(f"{r['jct_s']:.1f}", (i, r["jct_s"]), ha="center", va="bottom", fontsize=8)
    save(fig, out, "jct.png", written)

    parts = [("queue", "queue"), ("kv_read", "KV read"), ("assign", "wait for a pass"), ("prefill", "prefill")]
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(runs), 3.4))
    bottom = [0.0] * len(runs)
    for key, label in parts:
        vals = [r["ttft_breakdown_s"][key]["mean"] for r in runs]
        ax.bar(names, vals, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("mean TTFT (s)")
    ax.set_title("TTFT breakdown")
    ax.legend(fontsize=8)
    save(fig, out, "ttft_breakdown.png", written)

    # One panel per policy that read anything (the oracle reads nothing: no empty panel), on one y-axis
    # from 0, so the panels compare at a glance; nodes named by role.
    timed = [r for r in runs if r.get("snic_over_time", {}).get("windows")
             and any(v > 0 for x in r["snic_over_time"]["windows"] for v in x["read_gb_per_s"])]
    if timed:
        fig, axes = plt.subplots(len(timed), 1, figsize=(7, 1.2 + 1.9 * len(timed)), squeeze=False, sharex=True,
                                 sharey=True)
        for ax, r in zip(axes[:, 0], timed):
            w = r["snic_over_time"]["windows"]
            t = [x["t_s"] for x in w]
            prefill = r.get("prefill_nodes", 0)
            for n in range(len(w[0]["read_gb_per_s"])):
                role = "prefill" if n < prefill else "decode" if prefill else "node"
                ax.plot(t, [x["read_gb_per_s"][n] for x in w], linewidth=0.9, label=f"{role} node {n}")
            mean = r["snic_over_time"]["rate_max_over_avg_mean"]
            ax.set_title(f"{r['policy']}: SNIC read rate per node (max/avg per window, mean {mean:.2f})", fontsize=9)
            ax.set_ylabel("GB/s")
            ax.set_ylim(bottom=0)
        axes[0, 0].legend(fontsize=7, ncol=4)
        axes[-1, 0].set_xlabel("time (s)")
        save(fig, out, "snic_over_time.png", written)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.2))
    for r in runs:
        for ax, key in ((a1, "ttft_s"), (a2, "tpot_s")):
            d = r[key]
            ax.plot([50, 90, 99], [d["p50"], d["p90"], d["p99"]], marker="o", label=r["policy"])
    a1.set_title("TTFT percentiles")
    a1.set_ylabel("s")
    a2.set_title("TPOT percentiles")
    for ax in (a1, a2):
        ax.set_xlabel("percentile")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    save(fig, out, "latency.png", written)


def sweep(rep, out, written):
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for policy, p in rep["policies"].items():
        pts = p["points"]
        ax.plot([x["aps"] for x in pts], [x["run"]["ttft_peak_10s_mean_s"] for x in pts], marker="o",
                label=f"{policy} (capacity {p['capacity_aps']} APS)")
    ax.axhline(rep["slo"]["ttft_peak_10s_mean_s"], color="grey", linestyle="--", linewidth=0.8, label="SLO")
    ax.set_xlabel("agents per second")
    ax.set_ylabel("TTFT, peak 10 s mean (s)")
    ax.set_ylim(bottom=0)
    ax.set_title("TTFT against arrival rate")
    ax.legend(fontsize=7)
    save(fig, out, "ttft_vs_aps.png", written)


def validation(rep, out, written):
    rows = rep["rows"]
    names = [x["policy"] for x in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.2))
    xs = range(len(rows))
    for ax, key, title in ((a1, "jct", "JCT (s)"), (a2, "ttft_p50", "TTFT p50 (s)")):
        ax.bar([x - 0.2 for x in xs], [r[key + "_run_s"] for r in rows], width=0.4, label="dualpath run")
        ax.bar([x + 0.2 for x in xs], [r[key + "_sim_s"] for r in rows], width=0.4, label="dualpath sim")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=20, fontsize=8)
        ax.set_title(title)
        ax.legend(fontsize=7)
    save(fig, out, "validation.png", written)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: plot.py REPORT.json OUT_DIR\n")
        return 2
    try:
        with open(argv[1]) as f:
            rep = json.load(f)
    except OSError as e:
        sys.stderr.write(f"dualpath plot: {argv[1]}: cannot read the report: {e.strerror}\n")
        return 2
    except ValueError as e:
        sys.stderr.write(f"dualpath plot: {argv[1]}: not a JSON report: {e}\n")
        return 2
    os.makedirs(argv[2], exist_ok=True)
    written = []
    try:
        if "runs" in rep:
            comparison(rep["runs"], argv[2], written)
        elif "policies" in rep and "slo" in rep:
            sweep(rep, argv[2], written)
        elif "rows" in rep and rep["rows"] and "jct_sim_s" in rep["rows"][0]:
            validation(rep, argv[2], written)
        else:
            sys.stderr.write(f"dualpath plot: {argv[1]}: neither a run, a sweep nor a validation report\n")
            return 2
    except (KeyError, TypeError, IndexError) as e:
        sys.stderr.write(f"dualpath plot: {argv[1]}: missing or malformed field {e}\n")
        return 2
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
