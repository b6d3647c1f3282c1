"""What the paper-scale experiment scripts share: running `dualpath sim`, reading its report, writing the
result JSON next to the script and a markdown table with the paper's numbers beside ours."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DUALPATH_BIN", os.path.join(HERE, "..", "..", "..", "build", "apps", "dualpath"))


def sim(*args, cluster="ds660b_2p4d.toml"):
    """Runs `dualpath sim --cluster CLUSTER ARGS --quiet` and returns its report JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [BIN, "sim", "--cluster", os.path.join(HERE, cluster), "--quiet", "--report", report, *map(str, args)]
        print("+", " ".join(cmd[1:]), file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True)
        with open(report) as f:
            return json.load(f)


def runs(report):
    return {r["policy"]: r for r in report["runs"]}


def write(name, result, table):
    with open(os.path.join(HERE, name + ".result.json"), "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(table)


def within(ours, paper, tolerance=0.15):
    return "yes" if paper and abs(ours / paper - 1) <= tolerance else "no"
