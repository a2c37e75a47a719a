#!/usr/bin/env python3
"""A serve restored from a backup: `sync --repair` against the full re-read of the same restore (docs/repair.md §6, §7).

    python3 Benchmarks/restore.py CATALOG POSITIONS.json [--counts 0,1,100,1000] [--spread]

S (the serve's database) holds the positions file; node A syncs everything from `catalog serve` over S
once, and S is backed up. Then, for each count N: N rows are written after the backup — half on A
(pushed by A's sync), half on S (pulled by it) — and S is restored from the backup, so it lacks all N.
A then runs `catalog sync catalog+http://127.0.0.1:PORT/v1 --repair --json`: the sync finds the serve
forgot it and the repair moves the N rows (round trips, the repair's bytes, the sync's HTTP bytes, time).
The same restore without `--repair` is what a node did before: a sync that reads everything again and a
second that pushes every row of the node (HTTP bytes of the first, rows pushed by the second, time of
both). Prints a Markdown table, a row per count; both digests must agree afterwards either way.

The N rows are new users (`node-K`, `srv-K`: two runs of neighbouring keys) by default; with `--spread`
they are existing users spread evenly over the key space, each moved to another page (a changed row).
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time


def run(catalog, db, *args):
    started = time.monotonic()
    out = subprocess.run([catalog, "--db", db, *args], check=True, capture_output=True, text=True).stdout
    return out, time.monotonic() - started


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Serve:
    """`catalog serve` over `db` on a fixed loopback port (the node's source key names the port)."""

    def __init__(self, catalog, db, public_key, port):
        self.p = subprocess.Popen(
            [catalog, "--db", db, "serve", "--listen", f"127.0.0.1:{port}", "--auth-key", public_key],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.p.stderr:
            if '"event":"listening"' in line:
                threading.Thread(target=lambda: [None for _ in self.p.stderr], daemon=True).start()
                return
        raise RuntimeError(f"serve did not start over {db}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)


def edge_token(catalog, work):
    private, public, token = (os.path.join(work, n) for n in ("k.pem", "k.pub", "edge.jwt"))
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", private], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True, capture_output=True)
    out = subprocess.run([catalog, "token", "issue", "--key", private, "--user", "bench", "--scope", "edge"],
                         check=True, capture_output=True, text=True).stdout
    with open(token, "w") as f:
        f.write(out.strip() + "\n")
    os.chmod(token, 0o600)
    return public, token


def copy_db(src, dst):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(dst + suffix):
            os.remove(dst + suffix)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(src + suffix):
            shutil.copy(src + suffix, dst + suffix)


def diff_file(work, name, rows):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(json.dumps({"format": "landmark-catalog-snapshot", "version": 1, "node": "bench", "positions": rows}))
    return path


def digest(catalog, db):
    return json.loads(run(catalog, db, "status", "--json")[0])["digest"]


def main():
    catalog, positions = sys.argv[1], sys.argv[2]
    counts = [0, 1, 100, 1000]
    if "--counts" in sys.argv:
        counts = [int(c) for c in sys.argv[sys.argv.index("--counts") + 1].split(",")]
    work = tempfile.mkdtemp(prefix="catalog-restore-bench-")
    try:
        spread = "--spread" in sys.argv
        users = []
        if spread:
            with open(positions) as f:
                users = [line.split('"user":"', 1)[1].split('"', 1)[0] for line in f if line.startswith('{"user"')]
        public_key, token = edge_token(catalog, work)
        port = free_port()
        source = f"catalog+http://127.0.0.1:{port}/v1"
        s0, a0 = os.path.join(work, "s0.sqlite"), os.path.join(work, "a0.sqlite")
        run(catalog, s0, "sync", positions)
        serve = Serve(catalog, s0, public_key, port)
        _, first_s = run(catalog, a0, "sync", source, "--token-file", token)
        serve.stop()
        rows_total = json.loads(run(catalog, s0, "status", "--json")[0]).get("positions", "?")
        print(f"S: {rows_total} positions; node A's first sync through serve took {first_s:.1f} s")
        print()
        print("| differing rows | way | round trips | repair bytes | HTTP bytes read | rows pushed | seconds | digests equal |")
        print("| ---: | :--- | ---: | ---: | ---: | ---: | ---: | :---: |")
        s, a = os.path.join(work, "s.sqlite"), os.path.join(work, "a.sqlite")
        for n in counts:
            copy_db(s0, s)
            copy_db(a0, a)
            # The serve's mark of the cursors it handed out goes with the database here (no restore yet).
            if os.path.exists(s0 + ".serve-cursor"):
                shutil.copy(s0 + ".serve-cursor", s + ".serve-cursor")
            serve = Serve(catalog, s, public_key, port)
            stamp = "2026-12-06T00:00:00.000Z"
            if spread:
                picked = [users[(k * len(users)) // max(n, 1)] for k in range(n)]
                names_a, names_s = picked[0::2], picked[1::2]
            else:
                names_a = [f"node-{k}" for k in range((n + 1) // 2)]
                names_s = [f"srv-{k}" for k in range(n // 2)]
            on_a = [{"user": u, "page": 1, "landmarkId": None, "updatedAt": stamp, "counter": 0, "node": "bench"} for u in names_a]
            on_s = [{"user": u, "page": 2, "landmarkId": None, "updatedAt": stamp, "counter": 0, "node": "bench"} for u in names_s]
            if on_a:
                run(catalog, a, "sync", diff_file(work, "on-a.json", on_a))
            if on_s:
                run(catalog, s, "sync", diff_file(work, "on-s.json", on_s))
            run(catalog, a, "sync", source, "--token-file", token)
            serve.stop()
            a_full = a + ".full"
            copy_db(a, a_full)
            # The restore: S back to the backup (its database file alone, docs/protocol.md §3).
            copy_db(s0, s)
            serve = Serve(catalog, s, public_key, port)
            out, secs = run(catalog, a, "sync", source, "--token-file", token, "--repair", "--json")
            report = json.loads(out)
            src = report["sources"][0]
            repair = src["repair"] or {}
            equal = "yes" if digest(catalog, a) == digest(catalog, s) else "NO"
            print(f"| {n:,} | sync --repair | {repair.get('roundTrips', 0)} | "
                  f"{repair.get('bytesSent', 0) + repair.get('bytesReceived', 0):,} | {src['bytes']:,} | "
                  f"{(src['pushed'] or {}).get('sent', 0) + repair.get('rowsSent', 0):,} | {secs:.2f} | {equal} |")
            serve.stop()
            copy_db(s0, s)
            serve = Serve(catalog, s, public_key, port)
            out1, t1 = run(catalog, a_full, "sync", source, "--token-file", token, "--json")
            out2, t2 = run(catalog, a_full, "sync", source, "--token-file", token, "--json")
            r1, r2 = json.loads(out1)["sources"][0], json.loads(out2)["sources"][0]
            pushed = (r1["pushed"] or {}).get("sent", 0) + (r2["pushed"] or {}).get("sent", 0)
            equal = "yes" if digest(catalog, a_full) == digest(catalog, s) else "NO"
            print(f"| {n:,} | full re-read (2 syncs) | — | — | {r1['bytes'] + r2['bytes']:,} | {pushed:,} | {t1 + t2:.2f} | {equal} |")
            serve.stop()
            sys.stdout.flush()
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
