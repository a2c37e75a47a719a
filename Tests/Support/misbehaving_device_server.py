#!/usr/bin/env python3
"""A device endpoint that misbehaves, for the app client's tests (Python 3 standard library only), on
127.0.0.1 only, bounded in time.

Usage: misbehaving_device_server.py --mode MODE --log FILE
Prints the port it listens on as the first line of stdout, then serves until stdin closes, SIGTERM, or
300 s pass. Tokens are not checked.

Every request to /v1/positions and /v1/landmarks is appended to FILE when it has been read, before it is
answered, as one line: "<unix time> <METHOD> <path?query>". MODE says how they are answered:
  500         500 with an error body (docs/protocol.md §1), GET and POST alike.
  garbage     200 with a body that is not JSON, GET and POST alike.
  hang        never: the request is read and the connection held open, unanswered, until the client goes.
  empty       GET: 200 at once with no rows, cursor "x:1", more false, whatever `wait` asks; POST: the
              outcome "applied" for each row, cursor "x:1".
  stuck-more  GET: 200 with no rows, "more": true and the cursor of `after` ("x:1" without one); POST as
              in empty.
Other paths are 404.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MODES = ("500", "garbage", "hang", "empty", "stuck-more")
parser = argparse.ArgumentParser()
parser.add_argument("--mode", required=True, choices=MODES)
parser.add_argument("--log", required=True)
args = parser.parse_args()

LOCK = threading.Lock()
LOG = open(args.log, "a", buffering=1)
ROUTES = ("/v1/positions", "/v1/landmarks")


def record(method, path):
    with LOCK:
        LOG.write("%.3f %s %s\n" % (time.time(), method, path))
        LOG.flush()


def snapshot(kind, cursor, more):
    return {"format": "landmark-catalog-snapshot", "version": 1, kind: [], "cursor": cursor, "more": more}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except OSError:  # the client went away: expected here
            self.close_connection = True

    def reply(self, status, body, content_type="application/json; charset=utf-8"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response_only(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def answer(self, method):
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if url.path not in ROUTES:
            return self.reply(404, {"error": {"status": 404, "code": "not_found", "message": "no such route"}})
        record(method, self.path)
        mode = args.mode
        if mode == "500":
            return self.reply(500, {"error": {"status": 500, "code": "internal", "message": "misbehaving on purpose"}})
        if mode == "garbage":
            return self.reply(200, b"<html>this is not JSON</html>\n", "text/html")
        if mode == "hang":
            while True:  # held open, unanswered; the thread is a daemon, ended with the process
                time.sleep(3600)
        if method == "POST":
            try:
                rows = json.loads(body).get("positions") or []
            except (ValueError, AttributeError):
                rows = []
            results = [{"user": row.get("user"), "outcome": "applied"} for row in rows if isinstance(row, dict)]
            return self.reply(200, {"results": results, "cursor": "x:1"})
        kind = url.path.rsplit("/", 1)[1]
        if mode == "empty":
            return self.reply(200, snapshot(kind, "x:1", False))
        after = parse_qs(url.query).get("after", ["x:1"])[0]
        return self.reply(200, snapshot(kind, after, True))

    def do_GET(self):
        self.answer("GET")

    def do_POST(self):
        self.answer("POST")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
time.sleep(300)
os._exit(0)
