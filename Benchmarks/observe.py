#!/usr/bin/env python3
"""How fast another process's commit reaches an observer, and what an idle observer costs.

    Benchmarks/observe.py CATALOG_BINARY SEEDS [--commits N] [--idle SECONDS]

The observer is `catalog watch --user u` (Catalog.observe behind it: inotify on the database's directory
wakes its monitor thread, which then checks PRAGMA data_version; no polling).
The writer is this script: Python's sqlite3 module, another process, committing a change of u's page
(`UPDATE positions …`, so the commit's end is timed exactly, not a process's exit); latency = commit
returned → watch printed the line. Commits are spaced by a random 0–60 ms (as when a 50 ms poll found
them, so the figures compare). Baseline in the same run: one `catalog position get` process (what a
script polling the CLI pays per look).
Idle CPU: the watch's utime + stime from /proc over SECONDS with no commits, as % of one core.
Prints a Markdown table.
"""
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    binary, seeds = args[0], args[1]
    commits = int(args[args.index("--commits") + 1]) if "--commits" in args else 200
    idle = float(args[args.index("--idle") + 1]) if "--idle" in args else 60.0
    work = tempfile.mkdtemp(prefix="observe-bench-")
    db = os.path.join(work, "catalog.sqlite")
    run = lambda *a: subprocess.run([binary, "--db", db, *a], check=True, stdout=subprocess.DEVNULL)
    run("import", seeds)
    run("position", "set", "--user", "u", "--page", "0")
    printed = subprocess.run([binary, "--db", db, "featured", "--json"], check=True, capture_output=True, text=True).stdout
    featured = [landmark["id"] for landmark in json.loads(printed)]
    watch = subprocess.Popen([binary, "--db", db, "watch", "--user", "u"], stdout=subprocess.PIPE, text=True)
    try:
        watch.stdout.readline()
        writer = sqlite3.connect(db, isolation_level=None, timeout=5)
        rng = random.Random(19)
        latencies = []
        for i in range(commits):
            page = (i + 1) % len(featured)
            time.sleep(rng.uniform(0, 0.060))
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE positions SET page = ?, landmark_id = ?, updated_ms = updated_ms + 1 WHERE user_id = 'u'",
                           (page, featured[page]))
            writer.execute("COMMIT")
            t0 = time.monotonic()
            line = watch.stdout.readline()
            latencies.append(time.monotonic() - t0)
            assert f"page {page} " in line, line
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        gets = []
        for _ in range(20):
            t0 = time.monotonic()
            run("position", "get", "--user", "u")
            gets.append(time.monotonic() - t0)
        get = statistics.median(gets)

        ticks = os.sysconf("SC_CLK_TCK")
        def cpu():
            with open(f"/proc/{watch.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks
        before, t0 = cpu(), time.monotonic()
        time.sleep(idle)
        share = (cpu() - before) / (time.monotonic() - t0) * 100
    finally:
        watch.terminate()
        watch.wait()
        subprocess.run(["rm", "-rf", work])

    print("| case | figure | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| another process's commit → observe yields (inotify), p50 ({commits} commits) | {p50 * 1000:.1f} ms | one `catalog position get` process {get * 1000:.1f} ms | {p50 / get:.2f} |")
    print(f"| same, p95 (target ≤ 100 ms) | {p95 * 1000:.1f} ms | one `catalog position get` process {get * 1000:.1f} ms | {p95 / get:.2f} |")
    print(f"| one idle observer, CPU over {idle:.0f} s (target ≤ 1 %) | {share:.2f} % of a core | | |")


if __name__ == "__main__":
    main()
