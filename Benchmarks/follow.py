#!/usr/bin/env python3
"""Live sync (`catalog sync --follow`): how long a write on one node takes to be visible on the others,
and what an idle follower costs.

    Benchmarks/follow.py CATALOG_BINARY SEEDS [--hub URI] [--writes N] [--rate PER_SECOND] [--idle SECONDS]

Three nodes on this machine:
  A  writes N positions (user w0 … wN-1), PER_SECOND a second, each with `catalog position set` (a process
     of its own, as an app or a script would); A's follower publishes its log (`sync --follow --publish`)
     and, with --hub, follows the hub too (so it pushes each commit as soon as it sees it).
  B  follows A's log through real nginx serving contrib/nginx/catalog-log.conf (conditional GET every
     second, the default interval).
  C  (with --hub) follows the PostgreSQL hub (LISTEN; a push's transaction NOTIFYs).
Write-to-visible = the row's stamp (its updated_ms, set at A's commit) → the moment this script, reading
B's (C's) database every 5 ms, first sees the row. Then, with no writes, SECONDS of idle: B's CPU (utime +
stime from /proc, % of one core), its RSS at the start and the end, and the requests nginx served it.
Prints a Markdown table.
"""
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = max(0, min(len(values) - 1, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_nginx(work, log_dir, repo):
    nginx = next((p for p in ("/usr/sbin/nginx", "/usr/bin/nginx") if os.access(p, os.X_OK)), None)
    if nginx is None:
        sys.exit("follow.py: nginx is not installed (apt-get install nginx-light)")
    prefix = os.path.join(work, "nginx")
    os.makedirs(os.path.join(prefix, "logs"))
    os.makedirs(os.path.join(prefix, "tmp"))
    with open(os.path.join(repo, "contrib/nginx/catalog-log.conf")) as f:
        snippet = f.read().replace("/srv/catalog/log", log_dir)
    with open(os.path.join(prefix, "catalog-log.conf"), "w") as f:
        f.write(snippet)
    port = free_port()
    with open(os.path.join(prefix, "nginx.conf"), "w") as f:
        f.write(f"""master_process off;
daemon off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format catalog '$request_uri $status $body_bytes_sent';
    access_log {prefix}/logs/access.log catalog;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    server {{
        listen 127.0.0.1:{port};
        include {prefix}/catalog-log.conf;
    }}
}}
""")
    process = subprocess.Popen([nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return process, port, os.path.join(prefix, "logs/access.log")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    binary, seeds = os.path.abspath(args[0]), args[1]
    option = lambda name, default: type(default)(args[args.index(name) + 1]) if name in args else default
    hub = option("--hub", "")
    writes, rate, idle = option("--writes", 200), option("--rate", 5.0), option("--idle", 300.0)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix="follow-bench-")
    processes = []
    try:
        db = {n: os.path.join(work, f"{n}.sqlite") for n in "abc"}
        log_dir = os.path.join(work, "a-log")
        run = lambda node, *a: subprocess.run([binary, "--db", db[node], *a], check=True, stdout=subprocess.DEVNULL)
        run("a", "import", seeds)
        run("a", "publish", log_dir)
        nginx, port, access = start_nginx(work, log_dir, repo)
        processes.append(nginx)

        def follow(node, *sources):
            p = subprocess.Popen([binary, "--db", db[node], "sync", "--follow", "--quiet", *sources],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"{node}.err"), "w"))
            processes.append(p)
            return p

        follow("a", "--publish", log_dir, *([hub] if hub else []))
        b = follow("b", f"http://127.0.0.1:{port}/catalog/manifest.json")
        nodes = ["b"]
        if hub:
            follow("c", hub)
            nodes.append("c")
        # Every follower has caught up (the seed landmarks are there).
        readers = {}
        deadline = time.time() + 30
        for node in nodes:
            while time.time() < deadline:
                try:
                    readers[node] = sqlite3.connect(f"file:{db[node]}?mode=ro", uri=True, isolation_level=None)
                    if readers[node].execute("SELECT count(*) FROM landmarks").fetchone()[0] > 0:
                        break
                except sqlite3.Error:
                    readers.pop(node, None)
                time.sleep(0.05)
            else:
                sys.exit(f"follow.py: node {node} did not catch up: {open(os.path.join(work, node + '.err')).read()}")
        writer = sqlite3.connect(f"file:{db['a']}?mode=ro", uri=True, isolation_level=None)

        # Writes at RATE per second, each its own `position set` process; meanwhile B and C are read.
        stamps, seen = {}, {node: {} for node in nodes}
        pending = {node: set() for node in nodes}
        start = time.time()
        next_write = 0
        while next_write < writes or any(pending.values()):
            now = time.time()
            if next_write < writes and now >= start + next_write / rate:
                user = f"w{next_write}"
                subprocess.run([binary, "--db", db["a"], "position", "set", "--user", user, "--page", str(next_write % 4)],
                               check=True, stdout=subprocess.DEVNULL)
                stamps[user] = writer.execute("SELECT updated_ms FROM positions WHERE user_id = ?", (user,)).fetchone()[0] / 1000
                for node in nodes:
                    pending[node].add(user)
                next_write += 1
            for node in nodes:
                if not pending[node]:
                    continue
                marks = ",".join("?" * len(pending[node]))
                for (user,) in readers[node].execute(f"SELECT user_id FROM positions WHERE user_id IN ({marks})", list(pending[node])):
                    seen[node][user] = time.time()
                    pending[node].discard(user)
            if time.time() - start > writes / rate + 60:
                sys.exit(f"follow.py: rows never arrived: {[(n, len(p)) for n, p in pending.items()]}")
            time.sleep(0.005)

        print(f"Benchmarks/follow.py — {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores, "
              f"{writes} writes at {rate:g}/s")
        print()
        print("| path | p50 s | p95 s | max s | target p95 |")
        print("| --- | --- | --- | --- | --- |")
        names = {"b": "A → nginx → B (HTTP, interval 1 s)", "c": "A → hub → C (LISTEN/NOTIFY)"}
        targets = {"b": "≤ 1 s", "c": "≤ 0.25 s"}
        for node in nodes:
            lags = [seen[node][u] - stamps[u] for u in stamps]
            print(f"| {names[node]} | {percentile(lags, 50):.3f} | {percentile(lags, 95):.3f} | {max(lags):.3f} | {targets[node]} |")

        # Idle: B with nothing to fetch.
        time.sleep(2)
        with open(access) as f:
            requests_before = sum(1 for _ in f)
        cpu0, rss0, t0 = cpu_seconds(b.pid), rss_kib(b.pid), time.time()
        time.sleep(idle)
        cpu1, rss1, t1 = cpu_seconds(b.pid), rss_kib(b.pid), time.time()
        with open(access) as f:
            lines = f.readlines()[requests_before:]
        statuses = {}
        for line in lines:
            parts = line.split()
            statuses[parts[1]] = statuses.get(parts[1], 0) + 1
        print()
        print(f"Idle HTTP follower (B) over {t1 - t0:.0f} s: CPU {100 * (cpu1 - cpu0) / (t1 - t0):.2f} % of one core (target ≤ 1 %); "
              f"RSS {rss0 / 1024:.1f} MB → {rss1 / 1024:.1f} MB; {60 * len(lines) / (t1 - t0):.1f} requests per minute to nginx "
              f"({', '.join(f'{n} × {s}' for s, n in sorted(statuses.items()))}).")
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
