#!/usr/bin/env python3
"""Write-to-visible across two `catalog serve --hub` processes on one PostgreSQL hub (Benchmarks/run.sh --serve).

  serve_hub.py CATALOG_BINARY SEEDS HUB_URI [--round-trips N]

Server one's database gets the seed landmarks; server two's starts empty and takes them from the hub. A
device on server two long-polls (wait=30) for its user; a device on server one POSTs that user's row. From
the POST's send to the long-poll's answer: p50, p95, max over N (default 100), beside the same figure with
both devices on server one (the one-server baseline, same run). Prints Markdown table rows. Servers are
stopped by pid at the end, whatever happens.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

binary, seeds, hub = sys.argv[1], sys.argv[2], sys.argv[3]
arguments = sys.argv[4:]
trips = int(arguments[arguments.index("--round-trips") + 1]) if "--round-trips" in arguments else 100
work = tempfile.mkdtemp(prefix="catalog-serve-hub-bench-")
children = []


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


def start_serve(name, db):
    port = free_port()
    log_path = f"{work}/{name}.log"
    serve = subprocess.Popen([binary, "--db", db, "serve", "--listen", f"127.0.0.1:{port}", "--auth-key",
                              f"{work}/key.pub", "--hub", hub,
                              # One user's POSTs back to back: above the per-user POST rate (docs/serve.md §3).
                              "--post-burst", "1000000"], stderr=open(log_path, "w"), stdout=subprocess.DEVNULL)
    children.append(serve)
    deadline = time.time() + 60
    while '"listening"' not in open(log_path).read():
        if time.time() > deadline or serve.poll() is not None:
            sys.exit(f"serve {name} did not start: " + open(log_path).read()[-2000:])
        time.sleep(0.05)
    return port


def request(port, method, path, token, body=None, connection=None):
    c = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    answer = r.read()
    assert r.status == 200, (r.status, answer)
    return json.loads(answer)


def measure(post_port, poll_port, token, user, offset):
    cursor = request(poll_port, "GET", "/v1/positions", token)["cursor"]
    poster = http.client.HTTPConnection("127.0.0.1", post_port, timeout=30)
    poller = http.client.HTTPConnection("127.0.0.1", poll_port, timeout=60)
    base_ms = int(time.time() * 1000)
    visible = []
    for i in range(trips):
        answered = {}
        ms = base_ms + offset + i
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + ".%03dZ" % (ms % 1000)

        def poll():
            # Until the row posted in this round arrives: a row of an earlier round the server had not
            # replicated yet when the cursor was taken is read past, not counted (it made the figures negative).
            after = cursor
            while True:
                body = request(poll_port, "GET", f"/v1/positions?after={after}&wait=30", token, connection=poller)
                after = body["cursor"]
                if any(r.get("updatedAt") == stamp for r in body.get("positions", [])):
                    answered["body"], answered["at"] = body, time.perf_counter()
                    return

        t = threading.Thread(target=poll)
        t.start()
        time.sleep(0.03)  # the poll is parked (a missed park only makes the figure smaller: it answers at once)
        row = {"user": user, "page": i % 7, "landmarkId": None, "updatedAt": stamp, "counter": 0, "node": "bench-a",
               "deleted": False}
        sent = time.perf_counter()
        request(post_port, "POST", "/v1/positions", token, body=json.dumps({"positions": [row]}), connection=poster)
        t.join(40)
        assert answered.get("body", {}).get("positions"), answered
        cursor = answered["body"]["cursor"]
        visible.append((answered["at"] - sent) * 1000)
    return visible


try:
    one_db, two_db = f"{work}/one.sqlite", f"{work}/two.sqlite"
    catalog("import", seeds, db=one_db)
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", f"{work}/key.pem"], check=True)
    subprocess.run(["openssl", "pkey", "-in", f"{work}/key.pem", "-pubout", "-out", f"{work}/key.pub"], check=True)
    token = catalog("token", "issue", "--key", f"{work}/key.pem", "--user", "bench-user").strip()
    one = start_serve("one", one_db)
    two = start_serve("two", two_db)
    local = measure(one, one, token, "bench-user", 0)
    across = measure(one, two, token, "bench-user", 10_000)
    summary = lambda v: f"{percentile(v, 50):.1f} / {percentile(v, 95):.1f} / {max(v):.1f}"
    print(f"| write-to-visible across two serve --hub on one PostgreSQL hub, ms p50 / p95 / max ({trips}) "
          f"| {summary(across)} | {summary(local)} (both devices on one of them) | target p95 ≤ 250 |")
finally:
    for p in children:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)
