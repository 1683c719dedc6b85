#!/usr/bin/env python3
"""Export and import throughput against change count: Tidemark against the SQLite session extension.

Runs the release build of `tidemark-bench --workload changeset` once per change count (each run
compares both sides in one process), keeps the JSON lines in a CSV, and draws
BENCHMARKS-throughput.png: changes per second for our export and import, the session extension's
changeset generation and sqlite3changeset_apply.

    python3 -m pip install matplotlib     # once
    python3 tools/plot-throughput.py [--sizes 10000,100000,1000000] [--repetitions 3]
    python3 tools/plot-throughput.py --from-csv tools/plot-throughput.csv   # redraw only
"""

import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = {"export.throughput": "export", "import.throughput": "import"}


def measure(sizes, repetitions):
    """One tidemark-bench run per size; returns rows of (changes, metric, ours, baseline, baseline name)."""
    subprocess.run(["swift", "build", "-c", "release", "--product", "tidemark-bench"], cwd=ROOT, check=True)
    binary = subprocess.run(
        ["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    rows = []
    for changes in sizes:
        print(f"changeset workload, {changes} changes", file=sys.stderr)
        out = subprocess.run(
            [os.path.join(binary, "tidemark-bench"), "--workload", "changeset", "--changes", str(changes),
             "--repetitions", str(repetitions), "--json"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        for line in out.splitlines():
            record = json.loads(line)
            if record["metric"] in METRICS:
                rows.append((changes, record["metric"], record["value"], record["baseline_value"], record["baseline"]))
    return rows


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=False)
    for axis, (metric, label) in zip(axes, METRICS.items()):
        points = sorted((r for r in rows if r[1] == metric), key=lambda r: r[0])
        if not points:
            continue
        counts = [p[0] for p in points]
        axis.plot(counts, [p[2] for p in points], "o-", label=f"Tidemark {label} (signed, compressed bundle)")
        axis.plot(counts, [p[3] for p in points], "s--", label=points[0][4])
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("changes")
        axis.set_ylabel("changes per second (median)")
        axis.set_title(label)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle("Throughput against change count, one process per size (tidemark-bench --workload changeset)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated change counts")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--csv", default=os.path.join(ROOT, "tools", "plot-throughput.csv"))
    parser.add_argument("--from-csv", help="redraw from this CSV without running the benchmark")
    parser.add_argument("--png", default=os.path.join(ROOT, "BENCHMARKS-throughput.png"))
    args = parser.parse_args()

    if args.from_csv:
        with open(args.from_csv) as f:
            rows = [(int(r["changes"]), r["metric"], float(r["ours"]), float(r["baseline"]), r["baseline_name"])
                    for r in csv.DictReader(f)]
    else:
        rows = measure([int(s) for s in args.sizes.split(",")], args.repetitions)
        with open(args.csv, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["changes", "metric", "ours", "baseline", "baseline_name"])
            writer.writerows(rows)
        print(f"wrote {args.csv}", file=sys.stderr)
    plot(rows, args.png)


if __name__ == "__main__":
    main()
