#!/usr/bin/env python3
"""A stand-in for `catalog serve`'s device routes (docs/protocol.md), for the LandmarkCatalogClient tests
while the real server is built beside them; on 127.0.0.1 only, bounded in time.

Usage: device_server.py --db FILE [--landmarks SNAPSHOT] [--port N]
Prints the port it listens on as the first line of stdout, then serves until stdin closes, SIGTERM, or
300 s pass. State is kept in FILE (SQLite), so a restart on the same FILE and port resumes it.

What it implements of docs/protocol.md: §1 error bodies; §2 bearer tokens, checking only that the JWT's
claims hold a string `sub` and an `exp` in the future (NOT the signature: the real server does that, and
its own tests cover it); §3 cursors `DBID:SEQ`; §4 GET /v1/positions and /v1/landmarks with `after`,
`more`, ETag and 304; §5 `wait`; §6 POST /v1/positions with the last-writer-wins rule of
docs/merge-rules.md §1–§3 and the outcomes applied / stale / tie (no quarantine); §7 /v1/healthz.
Extra: GET /__log answers {"requests": {route: count}, "stamps": [...]} — requests by route since this
process started, and the stamp of every row a POST wrote, ever (kept in FILE: a row POSTed again and
answered `applied` without a write is not listed again).
"""
import argparse
import base64
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

parser = argparse.ArgumentParser()
parser.add_argument("--db", required=True)
parser.add_argument("--landmarks")
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()

LOCK = threading.Condition()
COUNTS = {}


def connect():
    db = sqlite3.connect(args.db, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    return db


DB = connect()
DB.executescript("""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS positions (user_id TEXT PRIMARY KEY, page INTEGER, landmark_id INTEGER,
  updated_ms INTEGER, counter INTEGER, node TEXT, deleted INTEGER, seq INTEGER);
CREATE TABLE IF NOT EXISTS landmarks (id INTEGER PRIMARY KEY, row_json TEXT, seq INTEGER);
CREATE TABLE IF NOT EXISTS applied (n INTEGER PRIMARY KEY, stamp TEXT);
""")
if DB.execute("SELECT value FROM meta WHERE key='id'").fetchone() is None:
    DB.execute("INSERT INTO meta VALUES ('id', ?)", (os.urandom(6).hex(),))
DBID = DB.execute("SELECT value FROM meta WHERE key='id'").fetchone()[0]


def last_seq():
    a = DB.execute("SELECT coalesce(max(seq),0) FROM positions").fetchone()[0]
    b = DB.execute("SELECT coalesce(max(seq),0) FROM landmarks").fetchone()[0]
    return max(a, b)


if args.landmarks and DB.execute("SELECT count(*) FROM landmarks").fetchone()[0] == 0:
    with open(args.landmarks) as f:
        snapshot = json.load(f)
    seq = last_seq()
    DB.execute("BEGIN")
    for row in snapshot.get("landmarks", []):
        seq += 1
        DB.execute("INSERT INTO landmarks VALUES (?,?,?)", (row["id"], json.dumps(row, sort_keys=True), seq))
    DB.execute("COMMIT")


def ms(text):
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000 + 0.5)


def rfc3339(value):
    t = datetime.fromtimestamp(value // 1000, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (value % 1000)


def position_json(r):
    return {"counter": r[4], "deleted": bool(r[6]), "landmarkId": r[2], "node": r[5], "page": r[1],
            "updatedAt": rfc3339(r[3]), "user": r[0]}


class Refused(Exception):
    def __init__(self, status, code, message, field=None):
        self.status, self.code, self.message, self.field = status, code, message, field


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if status != 304:
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if status != 304:
            self.wfile.write(data)

    def user(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            raise Refused(401, "invalid_token", "no token")
        try:
            payload = auth[7:].split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except Exception:
            raise Refused(401, "invalid_token", "not a JWT")
        if not isinstance(claims.get("sub"), str) or not claims["sub"] or not isinstance(claims.get("exp"), (int, float)):
            raise Refused(401, "invalid_token", "no sub or exp")
        if claims["exp"] + 0 < time.time():
            raise Refused(401, "invalid_token", "expired")
        return claims["sub"]

    def count(self, route):
        with LOCK:
            COUNTS[route] = COUNTS.get(route, 0) + 1

    def handle_any(self, method):
        url = urlparse(self.path)
        route = url.path
        self.count(method + " " + route)
        try:
            if route == "/__log":
                with LOCK:
                    stamps = [r[0] for r in DB.execute("SELECT stamp FROM applied ORDER BY n")]
                    return self.answer(200, {"requests": dict(COUNTS), "stamps": stamps})
            if route == "/v1/healthz":
                return self.answer(200, {"status": "ok"})
            if route not in ("/v1/positions", "/v1/landmarks"):
                raise Refused(404, "not_found", "no such route")
            user = self.user()
            query = parse_qs(url.query)
            if method == "GET":
                return self.read(route, user, query)
            if method == "POST" and route == "/v1/positions":
                return self.write(user)
            raise Refused(405, "method_not_allowed", "no such method")
        except Refused as r:
            error = {"status": r.status, "code": r.code, "message": r.message}
            if r.field:
                error["field"] = r.field
            headers = {"WWW-Authenticate": 'Bearer realm="catalog", error="invalid_token"'} if r.status == 401 else {}
            self.answer(r.status, {"error": error}, headers)

    # A client that went away mid-answer (a long-poll cancelled by stop()) is expected, not an error.
    def do_GET(self):
        try:
            self.handle_any("GET")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self):
        try:
            self.handle_any("POST")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def read(self, route, user, query):
        after = 0
        if "after" in query:
            text = query["after"][0]
            dbid, _, seq = text.partition(":")
            if not seq.isdigit():
                raise Refused(400, "invalid_parameter", "not a cursor", "after")
            after = int(seq) if dbid == DBID else 0
        wait = min(int(query.get("wait", ["0"])[0] or 0), 60)
        deadline = time.time() + wait
        while True:
            with LOCK:
                if route == "/v1/positions":
                    rows = DB.execute("SELECT user_id,page,landmark_id,updated_ms,counter,node,deleted,seq FROM positions "
                                      "WHERE seq > ? AND user_id = ? ORDER BY seq LIMIT 5000", (after, user)).fetchall()
                else:
                    rows = DB.execute("SELECT id,row_json,seq FROM landmarks WHERE seq > ? ORDER BY seq LIMIT 5000",
                                      (after,)).fetchall()
                left = deadline - time.time()
                if rows or left <= 0:
                    break
                LOCK.wait(timeout=left)
        through = rows[-1][-1] if rows else after
        cursor = "%s:%d" % (DBID, through)
        doc = {"format": "landmark-catalog-snapshot", "version": 1, "node": "serve-standin"}
        if route == "/v1/positions":
            doc["positions"] = [position_json(r) for r in rows]
        else:
            etag = '"%s"' % cursor
            if not rows and self.headers.get("If-None-Match") == etag:
                return self.answer(304, None, {"ETag": etag})
            doc["landmarks"] = [json.loads(r[1]) for r in rows]
        doc["cursor"] = cursor
        doc["more"] = len(rows) == 5000
        headers = {"ETag": '"%s"' % cursor, "Cache-Control": "no-cache"} if route == "/v1/landmarks" else {}
        self.answer(200, doc, headers)

    def write(self, user):
        length = int(self.headers.get("Content-Length", "0"))
        if length > 1 << 20:
            raise Refused(413, "body_too_large", "over 1 MiB")
        try:
            body = json.loads(self.rfile.read(length))
            rows = body["positions"]
        except Exception:
            raise Refused(400, "malformed_json", "not a positions document")
        for i, row in enumerate(rows):
            if row.get("user") != user:
                raise Refused(403, "insufficient_scope", "a row of another user", "positions[%d].user" % i)
        results = []
        with LOCK:
            DB.execute("BEGIN IMMEDIATE")
            seq = last_seq()
            for row in rows:
                incoming = (ms(row["updatedAt"]), row["counter"], row["node"].encode())
                content = (row["page"], -(1 << 63) if row.get("landmarkId") is None else row["landmarkId"])
                stored = DB.execute("SELECT user_id,page,landmark_id,updated_ms,counter,node,deleted,seq FROM positions "
                                    "WHERE user_id = ?", (user,)).fetchone()
                outcome = "applied"
                write = True
                if stored is not None:
                    have = (stored[3], stored[4], stored[5].encode())
                    have_content = (stored[1], -(1 << 63) if stored[2] is None else stored[2])
                    if incoming < have:
                        outcome, write = "stale", False
                    elif incoming == have:
                        same = bool(stored[6]) == bool(row["deleted"]) and have_content == content
                        if same:
                            write = False
                        elif bool(stored[6]) != bool(row["deleted"]):
                            write = bool(row["deleted"])
                            outcome = "applied" if write else "tie"
                        else:
                            write = content > have_content
                            outcome = "applied" if write else "tie"
                if write:
                    seq += 1
                    DB.execute("INSERT INTO applied (stamp) VALUES (?)", ("%d/%d/%s" % (incoming[0], row["counter"], row["node"]),))
                    DB.execute("INSERT INTO positions VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (user_id) DO UPDATE SET "
                               "page=excluded.page, landmark_id=excluded.landmark_id, updated_ms=excluded.updated_ms, "
                               "counter=excluded.counter, node=excluded.node, deleted=excluded.deleted, seq=excluded.seq",
                               (user, row["page"], row.get("landmarkId"), incoming[0], row["counter"], row["node"],
                                1 if row["deleted"] else 0, seq))
                results.append({"user": user, "outcome": outcome})
            DB.execute("COMMIT")
            LOCK.notify_all()
        self.answer(200, {"results": results, "cursor": "%s:%d" % (DBID, last_seq())})


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
threading.Thread(target=server.serve_forever, daemon=True).start()


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
time.sleep(300)
os._exit(0)
