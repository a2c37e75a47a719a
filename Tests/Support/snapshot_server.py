#!/usr/bin/env python3
"""A small HTTP server for the sync tests, on 127.0.0.1 only.

Usage: snapshot_server.py DIRECTORY
Prints the port it listens on as the first line of stdout, then serves until stdin closes (or 120 s pass).

Paths:
  /files/NAME           the file DIRECTORY/NAME, with a strong ETag (sha256 of the bytes) and Last-Modified;
                        If-None-Match with that ETag gets 304 Not Modified.
  /flaky/N/NAME         the first N requests get 500, later ones are served like /files/NAME.
  /busy/NAME            the first request gets 429 with Retry-After: 0, later ones like /files/NAME.
  /hang                 never answers (sleeps up to 60 s), for timeouts.
  /hold/NAME            answers like /files/NAME once the file DIRECTORY/release exists (at most 60 s).
  /missing              404.
  /log                  JSON: every request so far as {"path", "ifNoneMatch", "ifModifiedSince"}.
"""
import hashlib
import json
import os
import sys
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = sys.argv[1]
LOG = []
COUNTS = {}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def serve_file(self, name):
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            return self.send_error(404)
        with open(path, "rb") as f:
            body = f.read()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", formatdate(os.path.getmtime(path), usegmt=True))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with LOCK:
            LOG.append({"path": self.path, "ifNoneMatch": self.headers.get("If-None-Match"),
                        "ifModifiedSince": self.headers.get("If-Modified-Since")})
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            count = COUNTS[self.path]
        parts = self.path.strip("/").split("/")
        if parts[0] == "files" and len(parts) == 2:
            return self.serve_file(parts[1])
        if parts[0] == "flaky" and len(parts) == 3:
            if count <= int(parts[1]):
                return self.send_error(500)
            return self.serve_file(parts[2])
        if parts[0] == "busy" and len(parts) == 2:
            if count == 1:
                self.send_response(429)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self.serve_file(parts[1])
        if parts[0] == "hold" and len(parts) == 2:
            until = time.time() + 60
            while not os.path.exists(os.path.join(ROOT, "release")) and time.time() < until:
                time.sleep(0.01)
            return self.serve_file(parts[1])
        if parts[0] == "hang":
            time.sleep(60)
            return
        if parts[0] == "log":
            with LOCK:
                body = json.dumps(LOG).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_error(404)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
time.sleep(120)
os._exit(0)
