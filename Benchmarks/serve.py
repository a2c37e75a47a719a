#!/usr/bin/env python3
"""`catalog serve` against its baselines, measured in the same run (Benchmarks/run.sh --serve).

  serve.py CATALOG_BINARY SEEDS POSITIONS_SNAPSHOT [--polls N] [--seconds S] [--rounds R] [--nothing-new]

--nothing-new runs only case 2 (the "nothing new" polls against nginx's static 304).

POSITIONS_SNAPSHOT is a snapshot of many users' positions (Benchmarks/generate.py positions N). One
database gets the seed landmarks and those positions; `catalog serve` runs over it on 127.0.0.1 (an Ed25519
key made by openssl, tokens by `catalog token issue`), and real nginx on 127.0.0.1 serves a static file.

1. Bootstrap: a fresh device's first GET /v1/landmarks and GET /v1/positions for one user (bytes, ms),
   against a fresh database syncing the same catalog's published snapshot log (`catalog publish` then
   `catalog sync DIR`: bytes of the log, ms) -- what a device had to do before serve.
2. "Nothing new": wrk, authenticated polls that find nothing, against nginx answering a static file's 304
   (If-None-Match), same wrk settings (-t2 -c32 -d5s), interleaved over ROUNDS rounds (nginx, then each
   poll, each round), the median of each and of the per-round ratios: GET /v1/landmarks with If-None-Match
   (its ETag: 304), GET /v1/landmarks?after=CURSOR with If-None-Match (what sync sends: 304) and
   GET /v1/positions?after=CURSOR (200, no rows). The machine's load average is noted before and after.
3. A POST of one position (keep-alive connection): p50, p95 ms over 300.
4. Write-to-visible: client B long-polls (wait=30), client A POSTs B's user's row: from A's send to B's
   answer, p50, p95, max over 100.
5. N idle long-polls (default 10,000) held open S seconds: serve's RSS (MiB) and CPU (% of one core).

Prints a Markdown table. Servers are stopped by pid at the end, whatever happens.
"""
import http.client
import json
import os
import resource
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

binary, seeds, snapshot = sys.argv[1], sys.argv[2], sys.argv[3]
arguments = sys.argv[4:]


def option(name, fallback):
    return int(arguments[arguments.index(name) + 1]) if name in arguments else fallback


polls_wanted = option("--polls", 10000)
hold_seconds = option("--seconds", 20)
rounds = option("--rounds", 3)
nothing_new_only = "--nothing-new" in arguments
work = tempfile.mkdtemp(prefix="catalog-serve-bench-")
# nginx's workers (run as root, they switch to nobody) must reach the static file: without this, a 403.
os.chmod(work, 0o755)
children = []
rows = []


def cleanup():
    for p in children:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)


def catalog(*args, db=None):
    command = [binary] + (["--db", db] if db else []) + list(args)
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


WRK = ["wrk", "-t2", "-c32", "-d5s"]


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def wrk(url, headers):
    command = WRK + ["--latency"]
    for h in headers:
        command += ["-H", h]
    out = subprocess.run(command + [url], check=True, capture_output=True, text=True).stdout
    rps = next(float(line.split()[1]) for line in out.splitlines() if line.startswith("Requests/sec:"))
    non2xx = next((int(line.split()[-1]) for line in out.splitlines() if "Non-2xx" in line), 0)
    return rps, non2xx


try:
    # Enough descriptors for the idle long-polls, in this process and in serve (inherited).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = polls_wanted + 1024
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, want), hard if hard > 0 else want), hard))

    db = os.path.join(work, "server.sqlite")
    catalog("import", seeds, db=db)
    catalog("sync", "--quiet", snapshot, db=db)
    users = json.load(open(snapshot))["positions"]
    user = users[len(users) // 2]["user"]
    other = users[len(users) // 3]["user"]
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", f"{work}/key.pem"], check=True)
    subprocess.run(["openssl", "pkey", "-in", f"{work}/key.pem", "-pubout", "-out", f"{work}/key.pub"], check=True)
    token = catalog("token", "issue", "--key", f"{work}/key.pem", "--user", user).strip()
    other_token = catalog("token", "issue", "--key", f"{work}/key.pem", "--user", other).strip()

    port = free_port()
    log = open(f"{work}/serve.log", "w")
    serve = subprocess.Popen([binary, "--db", db, "serve", "--listen", f"127.0.0.1:{port}", "--auth-key",
                              f"{work}/key.pub", "--max-connections", str(polls_wanted + 500),
                              # One user makes every request here: the per-user limits (docs/serve.md §3)
                              # would refuse most of them, and this measures the server, not them.
                              "--max-connections-per-user", str(polls_wanted + 500), "--post-burst", "1000000"],
                             stderr=log, stdout=subprocess.DEVNULL)
    children.append(serve)
    deadline = time.time() + 30
    while '"listening"' not in open(f"{work}/serve.log").read():
        if time.time() > deadline or serve.poll() is not None:
            sys.exit("serve did not start: " + open(f"{work}/serve.log").read()[-2000:])
        time.sleep(0.05)

    def get(path, tok=token, connection=None):
        c = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=90)
        c.request("GET", path, headers={"Authorization": f"Bearer {tok}"})
        r = c.getresponse()
        body = r.read()
        if connection is None:
            c.close()
        return r.status, body

    if not nothing_new_only:
        # 1. Bootstrap.
        times, sizes = [], None
        for _ in range(5):
            start = time.perf_counter()
            s1, landmarks = get("/v1/landmarks")
            s2, positions = get("/v1/positions")
            times.append((time.perf_counter() - start) * 1000)
            assert s1 == 200 and s2 == 200, (s1, s2)
            held = json.loads(positions)["positions"]
            assert [r["user"] for r in held] == [user], held
            sizes = (len(landmarks), len(positions))
        publish = os.path.join(work, "log")
        catalog("publish", "--quiet", publish, db=db)
        log_bytes = sum(os.path.getsize(os.path.join(publish, f)) for f in os.listdir(publish))
        log_times = []
        for i in range(3):
            fresh = os.path.join(work, f"fresh-{i}.sqlite")
            start = time.perf_counter()
            catalog("sync", "--quiet", publish, db=fresh)
            log_times.append((time.perf_counter() - start) * 1000)
            os.remove(fresh)
        rows.append(("bootstrap one user of %d: bytes beyond the landmarks" % len(users), f"{sizes[1]:,} B",
                     f"{log_bytes - sizes[0]:,} B (log {log_bytes:,} B)", f"1/{(log_bytes - sizes[0]) / max(1, sizes[1]):,.0f}"))
        rows.append(("bootstrap one user: landmarks + own row, median ms", f"{statistics.median(times):.1f}",
                     f"{statistics.median(log_times):.1f} (sync the log)", f"1/{statistics.median(log_times) / statistics.median(times):,.0f}"))

    # 2. "Nothing new" against nginx's static 304.
    static = os.path.join(work, "static.json")
    if nothing_new_only:
        with open(static, "w") as f:
            f.write(json.dumps({"padding": "x" * 4000}))
    else:
        shutil.copy(os.path.join(publish, "manifest.json"), static)
    prefix = os.path.join(work, "nginx")
    os.makedirs(f"{prefix}/html")
    os.makedirs(f"{prefix}/logs")
    shutil.copy(static, f"{prefix}/html/manifest.json")
    nginx_port = free_port()
    with open(f"{prefix}/nginx.conf", "w") as f:
        f.write(f"""daemon off; worker_processes 1; pid {prefix}/nginx.pid; error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{ access_log off; client_body_temp_path {prefix}/tmp; proxy_temp_path {prefix}/tmp;
  fastcgi_temp_path {prefix}/tmp; uwsgi_temp_path {prefix}/tmp; scgi_temp_path {prefix}/tmp;
  server {{ listen 127.0.0.1:{nginx_port}; root {prefix}/html; }} }}
""")
    nginx = subprocess.Popen(["nginx", "-p", prefix, "-c", f"{prefix}/nginx.conf"], stderr=subprocess.DEVNULL)
    children.append(nginx)
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=5)
            c.request("HEAD", "/manifest.json")
            etag = c.getresponse().getheader("ETag")
            c.close()
            break
        except OSError:
            time.sleep(0.05)

    def status_of(port_, path, headers):
        c = http.client.HTTPConnection("127.0.0.1", port_, timeout=10)
        c.request("GET", path, headers=headers)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, r.getheader("ETag")

    auth = f"Authorization: Bearer {token}"
    _, body = get("/v1/positions")
    cursor = json.loads(body)["cursor"]
    _, landmarks_etag = status_of(port, "/v1/landmarks", {"Authorization": f"Bearer {token}"})
    _, body = get("/v1/landmarks")
    landmarks_cursor = json.loads(body)["cursor"]
    # (label, port, path, headers, status every answer must have)
    polls = [
        ("nginx", nginx_port, "/manifest.json", [f"If-None-Match: {etag}"], 304),
        ("landmarks", port, "/v1/landmarks", [auth, f"If-None-Match: {landmarks_etag}"], 304),
        ("landmarks?after", port, f"/v1/landmarks?after={landmarks_cursor}", [auth, f'If-None-Match: "{landmarks_cursor}"'], 304),
        ("positions", port, f"/v1/positions?after={cursor}", [auth], 200),
    ]
    measured = {label: [] for label, *_ in polls}
    loads = [load()]
    bad = {}
    for _ in range(rounds):
        for label, port_, path, headers, expected in polls:
            status, _ = status_of(port_, path, dict(h.split(": ", 1) for h in headers))
            assert status == expected, (label, status)
            rps, non2xx = wrk(f"http://127.0.0.1:{port_}{path}", headers)
            measured[label].append(rps)
            bad[label] = bad.get(label, 0) + non2xx
            status, _ = status_of(port_, path, dict(h.split(": ", 1) for h in headers))
            assert status == expected, (label, status)
    loads.append(load())
    note = f"median of {rounds} interleaved rounds; load average {loads[0]} before, {loads[1]} after"
    nginx_median = statistics.median(measured["nginx"])
    titles = {
        "landmarks": '"nothing new" GET /v1/landmarks, If-None-Match → 304, requests/s',
        "landmarks?after": '"nothing new" GET /v1/landmarks?after=CURSOR, If-None-Match → 304, requests/s',
        "positions": '"nothing new" GET /v1/positions?after=CURSOR → 200 no rows, requests/s',
    }
    for label in ["landmarks", "landmarks?after", "positions"]:
        ratios = [a / b for a, b in zip(measured[label], measured["nginx"])]
        rows.append((titles[label] + f" ({' '.join(WRK[1:])})", f"{statistics.median(measured[label]):,.0f}",
                     f"{nginx_median:,.0f} (nginx static 304)",
                     f"{statistics.median(ratios):.2f}× (rounds: {', '.join(f'{r:.2f}' for r in ratios)})"))
        if bad[label]:
            rows.append((f'"nothing new" {label}: answers over 399', str(bad[label]), "", ""))
    rows.append(('"nothing new" polls: how measured', note, "", ""))

    if not nothing_new_only:
        # 3. POST one position, keep-alive.
        template = dict(held[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        base_ms = int(time.time() * 1000)

        def row(u, i):
            r = dict(template, user=u, node="bench-device", counter=0)
            r["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((base_ms + i) / 1000)) + ".%03dZ" % ((base_ms + i) % 1000)
            return r

        def post(u, tok, i, c):
            c.request("POST", "/v1/positions", body=json.dumps({"positions": [row(u, i)]}),
                      headers={"Authorization": f"Bearer {tok}", "Content-Type": "application/json"})
            r = c.getresponse()
            answer = r.read()
            assert r.status == 200, (r.status, answer)
            return json.loads(answer)["results"][0]["outcome"]

        post_ms = []
        for i in range(300):
            start = time.perf_counter()
            outcome = post(user, token, i + 1, connection)
            post_ms.append((time.perf_counter() - start) * 1000)
            assert outcome == "applied", outcome
        rows.append(("POST one position, ms p50 / p95 (300)", f"{percentile(post_ms, 50):.2f} / {percentile(post_ms, 95):.2f}", "", ""))

        # 4. Write-to-visible: A's POST to B's long-poll.
        _, body = get("/v1/positions", tok=other_token)
        b_cursor = json.loads(body)["cursor"]
        visible = []
        b_connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(100):
            answered = {}

            def poll():
                status, answer = get(f"/v1/positions?after={b_cursor}&wait=30", tok=other_token, connection=b_connection)
                answered["at"] = time.perf_counter()
                answered["body"] = json.loads(answer)

            t = threading.Thread(target=poll)
            t.start()
            time.sleep(0.03)  # the poll is parked (a missed park only makes the figure smaller: it answers at once)
            sent = time.perf_counter()
            post(other, other_token, 1000 + i, connection)
            t.join(40)
            assert answered["body"]["positions"], answered
            b_cursor = answered["body"]["cursor"]
            visible.append((answered["at"] - sent) * 1000)
        rows.append(("write-to-visible, POST → another client's long-poll, ms p50 / p95 / max (100)",
                     f"{percentile(visible, 50):.1f} / {percentile(visible, 95):.1f} / {max(visible):.1f}", "", ""))

        # 5. Idle long-polls.
        rss_before = rss_mib(serve.pid)
        _, body = get("/v1/positions")
        cursor = json.loads(body)["cursor"]  # after the POSTs of case 3: nothing new for this user
        request = (f"GET /v1/positions?after={cursor}&wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {token}\r\n\r\n").encode()
        sockets = []
        selector = selectors.DefaultSelector()
        for i in range(polls_wanted):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            selector.register(s, selectors.EVENT_WRITE)
            sockets.append(s)
        pending = set(sockets)
        deadline = time.time() + 60
        while pending and time.time() < deadline:
            for key, _ in selector.select(1):
                s = key.fileobj
                try:
                    s.send(request)
                except OSError:
                    pass
                selector.unregister(s)
                pending.discard(s)
        time.sleep(2)
        opened = polls_wanted - len(pending)
        cpu0, wall0 = cpu_seconds(serve.pid), time.time()
        time.sleep(hold_seconds)
        cpu = (cpu_seconds(serve.pid) - cpu0) / (time.time() - wall0) * 100
        rss = rss_mib(serve.pid)
        answered_early = 0
        for s in sockets:
            try:
                if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                    answered_early += 1
            except OSError:
                pass
        rows.append((f"{opened:,} idle long-polls held {hold_seconds} s: serve RSS MiB / CPU % of a core",
                     f"{rss:.0f} / {cpu:.2f}", f"{rss_before:.0f} MiB before", f"{answered_early} answered early"))
        for s in sockets:
            s.close()

    print("| case | serve | baseline (same run) | ratio / note |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
finally:
    cleanup()
