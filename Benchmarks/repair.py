#!/usr/bin/env python3
"""catalog repair against a full sync of the same difference (docs/repair.md).

    python3 Benchmarks/repair.py CATALOG POSITIONS.json [--counts 0,1,100,1000] [--hub postgresql://USER@HOST:PORT/DB [--only-hub]]

A holds the positions file; B is a byte copy of A; then, for each count N, N rows differ: a quarter changed
on B, a quarter tombstoned on B, a quarter changed on A, a quarter new on A. Each case repairs a fresh pair
with `catalog --db A repair B --json`, then the same pair again over HTTP — B behind `catalog serve`, A
running `catalog repair catalog+http://127.0.0.1:PORT/v1 --token-file EDGE.jwt --json` (docs/protocol.md
§6b) — and, for comparison, moves the same difference the only other way
there is: a full snapshot of A synced into B and one of B into A (the bytes of both snapshots). Prints a
Markdown table, a row per case and way (`file`, `serve`): round trips, repair bytes (both ways, rows excluded), bytes per differing row, repair time,
full-sync bytes and time, and whether both digests agree afterwards.

With --hub (a server with pg_stat_statements preloaded; `Benchmarks/run.sh --repair` starts one), first the
same cases against a PostgreSQL hub holding B: round trips, repair bytes, time, the hub's statements per
repair (pg_stat_statements) and the bytes on the wire each way (a counting relay in front of the server).
"""
import json, os, shutil, signal, subprocess, sys, tempfile, threading, time


def run(catalog, db, *args):
    started = time.monotonic()
    out = subprocess.run([catalog, "--db", db, *args], check=True, capture_output=True, text=True).stdout
    return out, time.monotonic() - started


def serve(catalog, db, public_key):
    """Starts `catalog serve` over `db` on a free loopback port; returns the process and the port."""
    p = subprocess.Popen(
        [catalog, "--db", db, "serve", "--listen", "127.0.0.1:0", "--auth-key", public_key],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if '"event":"listening"' in line:
            port = json.loads(line)["listen"].rsplit(":", 1)[1]
            # The access log goes on to stderr: read it so serve never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, port
    raise RuntimeError(f"serve did not start over {db}")


def edge_token(catalog, work):
    """An Ed25519 key pair and an edge token for it: (public key path, token file path)."""
    private, public, token = (os.path.join(work, n) for n in ("k.pem", "k.pub", "edge.jwt"))
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", private], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True, capture_output=True)
    out = subprocess.run([catalog, "token", "issue", "--key", private, "--user", "bench", "--scope", "edge"],
                         check=True, capture_output=True, text=True).stdout
    with open(token, "w") as f:
        f.write(out.strip() + "\n")
    os.chmod(token, 0o600)
    return public, token


class WireCounter:
    """A loopback TCP relay in front of PostgreSQL that counts the bytes each way: the repair's bytes on the
    wire to the hub (libpq's protocol messages: queries, parameters, results), honestly measured."""

    def __init__(self, host, port):
        import socket
        self.up = self.down = 0
        self.target = (host, port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        import socket
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self.pump, args=(client, server, "up"), daemon=True).start()
            threading.Thread(target=self.pump, args=(server, client, "down"), daemon=True).start()

    def pump(self, src, dst, way):
        while True:
            try:
                data = src.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(1)
                except OSError:
                    pass
                return
            setattr(self, way, getattr(self, way) + len(data))
            dst.sendall(data)


def psql(admin, db, sql):
    """Runs `sql` on `db` of the server `admin` (postgresql://USER@HOST:PORT/...) with psql; returns stdout."""
    uri = admin.rsplit("/", 1)[0] + "/" + db
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", uri, "-c", sql],
                          check=True, capture_output=True, text=True).stdout.strip()


def hub_cases(catalog, base, users, counts, admin, work):
    """The hub cases: the hub holds B (a copy of the base pushed once, then the B side of each case written on
    the hub), A repairs against it over a relay that counts the wire bytes; pg_stat_statements counts the
    hub's statements of the repair (its own, the extension's and the catalog's connection checks included)."""
    host, port = admin.split("@", 1)[1].split("/", 1)[0].rsplit(":", 1)
    template = "catalog_repair_base"
    psql(admin, "postgres", f"CREATE DATABASE {template}")
    seed = os.path.join(work, "hub-seed.sqlite")
    shutil.copy(base, seed)
    _, push_s = run(catalog, seed, "sync", admin.rsplit("/", 1)[0] + "/" + template)
    os.remove(seed)
    relay = WireCounter(host, int(port))
    print()
    print(f"Against a PostgreSQL hub (the base pushed once in {push_s:.1f} s; each case a copy of it):")
    print()
    print("| differing rows | round trips | repair bytes | bytes per differing row | repair s | hub statements | wire bytes to hub | wire bytes from hub | digests equal |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
    for n in counts:
        db = f"catalog_repair_{n}"
        psql(admin, "postgres", f"CREATE DATABASE {db} TEMPLATE {template}")
        psql(admin, db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        a = os.path.join(work, f"hub-a{n}.sqlite")
        shutil.copy(base, a)
        on_a, sql = [], []
        for k, user in enumerate(users[:n]):
            q = user.replace("'", "''")
            if k % 4 == 0:
                sql.append(f"UPDATE positions SET page = 3, updated_ms = 1796083200000, counter = 0, node = 'bench', seq = nextval('hub_change_seq') WHERE user_id = '{q}'")
            elif k % 4 == 1:
                sql.append(f"UPDATE positions SET deleted = true, updated_ms = 1796083200000, counter = 0, node = 'bench', seq = nextval('hub_change_seq') WHERE user_id = '{q}'")
            elif k % 4 == 2:
                on_a.append({"user": user, "page": 4, "landmarkId": None, "updatedAt": "2026-12-01T00:00:00.000Z", "counter": 0, "node": "bench"})
            else:
                on_a.append({"user": f"new-{k}", "page": 3, "landmarkId": None, "updatedAt": "2026-12-01T00:00:00.000Z", "counter": 0, "node": "bench"})
        if sql:
            psql(admin, db, "; ".join(sql))
        if on_a:
            path = os.path.join(work, "diff.json")
            with open(path, "w") as f:
                f.write(snapshot(on_a))
            run(catalog, a, "sync", path)
        psql(admin, db, "VACUUM ANALYZE")
        psql(admin, db, "SELECT pg_stat_statements_reset()")
        relay.up = relay.down = 0
        out, secs = run(catalog, a, "repair", f"postgresql://postgres@127.0.0.1:{relay.port}/{db}", "--json")
        up, down = relay.up, relay.down
        statements = psql(admin, db, f"SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '{db}') AND query NOT LIKE '%pg_stat_statements%'")
        r = json.loads(out)
        total = r["bytesSent"] + r["bytesReceived"]
        per_row = f"{total / n:.0f}" if n else "—"
        equal = "yes" if r["digest"] == r["sourceDigest"] else "NO"
        print(f"| {n:,} | {r['roundTrips']} | {total:,} | {per_row} | {secs:.2f} | {statements} | {up:,} | {down:,} | {equal} |")
        sys.stdout.flush()
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(a + suffix):
                os.remove(a + suffix)
        psql(admin, "postgres", f"DROP DATABASE {db}")
    psql(admin, "postgres", f"DROP DATABASE {template}")


def snapshot(rows):
    return json.dumps({"format": "landmark-catalog-snapshot", "version": 1, "node": "bench", "positions": rows})


def main():
    catalog, positions = sys.argv[1], sys.argv[2]
    counts = [0, 1, 100, 1000]
    if "--counts" in sys.argv:
        counts = [int(c) for c in sys.argv[sys.argv.index("--counts") + 1].split(",")]
    hub = sys.argv[sys.argv.index("--hub") + 1] if "--hub" in sys.argv else None
    only_hub = "--only-hub" in sys.argv
    work = tempfile.mkdtemp(prefix="catalog-repair-bench-")
    try:
        base = os.path.join(work, "base.sqlite")
        run(catalog, base, "sync", positions)
        users = []
        with open(positions) as f:
            for line in f:
                if line.startswith('{"user"'):
                    users.append(json.loads(line.rstrip(",\n"))["user"])
                    if len(users) >= 4000:
                        break
        if hub:
            hub_cases(catalog, base, users, counts, hub, work)
            if only_hub:
                return
            print()
        public_key, token = edge_token(catalog, work)
        print("| differing rows | via | round trips | repair bytes | bytes per differing row | repair s | full-sync bytes | full sync s | digests equal |")
        print("| ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |")
        for n in counts:
            a, b = os.path.join(work, f"a{n}.sqlite"), os.path.join(work, f"b{n}.sqlite")
            shutil.copy(base, a)
            shutil.copy(base, b)
            on_a, on_b = [], []
            for k, user in enumerate(users[:n]):
                row = {"user": user, "page": 3, "landmarkId": None, "updatedAt": "2026-12-01T00:00:00.000Z", "counter": 0, "node": "bench"}
                if k % 4 == 0:
                    on_b.append(row)
                elif k % 4 == 1:
                    on_b.append(dict(row, deleted=True))
                elif k % 4 == 2:
                    on_a.append(dict(row, page=4))
                else:
                    on_a.append(dict(row, user=f"new-{k}"))
            for db, rows in ((a, on_a), (b, on_b)):
                if rows:
                    path = os.path.join(work, "diff.json")
                    with open(path, "w") as f:
                        f.write(snapshot(rows))
                    run(catalog, db, "sync", path)
            # The full-sync comparison on copies of the same pair.
            fa, fb = a + ".full", b + ".full"
            ha, hb = a + ".http", b + ".http"
            for src, dst in ((a, fa), (b, fb), (a, ha), (b, hb)):
                shutil.copy(src, dst)
            out, repair_s = run(catalog, a, "repair", b, "--json")
            report = json.loads(out)
            repair_bytes = report["bytesSent"] + report["bytesReceived"]
            server, port = serve(catalog, hb, public_key)
            try:
                out, http_s = run(catalog, ha, "repair", f"catalog+http://127.0.0.1:{port}/v1", "--token-file", token, "--json")
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
            http = json.loads(out)
            http_bytes = http["bytesSent"] + http["bytesReceived"]
            snap_a, snap_b = os.path.join(work, "full-a.json"), os.path.join(work, "full-b.json")
            _, t1 = run(catalog, fa, "export", "--output", snap_a)
            _, t2 = run(catalog, fb, "export", "--output", snap_b)
            _, t3 = run(catalog, fb, "sync", snap_a)
            _, t4 = run(catalog, fa, "sync", snap_b)
            full_bytes = os.path.getsize(snap_a) + os.path.getsize(snap_b)
            full_s = t1 + t2 + t3 + t4
            for via, r, total, secs in (("file", report, repair_bytes, repair_s), ("serve", http, http_bytes, http_s)):
                per_row = f"{total / n:.0f}" if n else "—"
                equal = "yes" if r["digest"] == r["sourceDigest"] else "NO"
                print(f"| {n:,} | {via} | {r['roundTrips']} | {total:,} | {per_row} | {secs:.2f} | {full_bytes:,} | {full_s:.2f} | {equal} |")
            for path in (a, b, fa, fb, ha, hb, snap_a, snap_b):
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(path + suffix):
                        os.remove(path + suffix)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
