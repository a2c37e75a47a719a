#!/usr/bin/env python3
"""An HTTP proxy that loses and repeats requests, for the LandmarkCatalogClient fuzz test; 127.0.0.1 only.

Usage: flaky_proxy.py --upstream PORT [--seed N] [--drop-request P] [--drop-answer P] [--duplicate P]
Prints the port it listens on as the first line of stdout; serves until stdin closes or 300 s pass.

Each request, at random (seeded): dropped before it reaches the server (the connection closed unanswered),
forwarded and its answer dropped (the server acted, the client never hears), forwarded twice with the
second answer returned (a POST: the server sees a duplicate), or forwarded as it is. An upstream that
cannot be reached (restarting) is answered 503 with Retry-After: 0, as nginx in front of serve would.
GET /__proxy?drop-request=P&drop-answer=P&duplicate=P changes the rates; GET /__proxy/log answers
{"dropRequest": n, "dropAnswer": n, "duplicate": n, "forwarded": n}.
"""
import argparse
import os
import http.client
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

parser = argparse.ArgumentParser()
parser.add_argument("--upstream", type=int, required=True)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--drop-request", type=float, default=0)
parser.add_argument("--drop-answer", type=float, default=0)
parser.add_argument("--duplicate", type=float, default=0)
args = parser.parse_args()

LOCK = threading.Lock()
RNG = random.Random(args.seed)
RATES = {"drop-request": args.drop_request, "drop-answer": args.drop_answer, "duplicate": args.duplicate}
COUNTS = {"dropRequest": 0, "dropAnswer": 0, "duplicate": 0, "forwarded": 0}


def choose(method):
    with LOCK:
        r = RNG.random()
        if r < RATES["drop-request"]:
            return "dropRequest"
        r -= RATES["drop-request"]
        if r < RATES["drop-answer"]:
            return "dropAnswer"
        r -= RATES["drop-answer"]
        if method == "POST" and r < RATES["duplicate"]:
            return "duplicate"
        return "forwarded"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, headers, body):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status != 304:
            self.wfile.write(body)

    def forward(self, method, body):
        c = http.client.HTTPConnection("127.0.0.1", args.upstream, timeout=90)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "host")}
        c.request(method, self.path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheaders(), data

    def handle_any(self, method):
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else None
        if url.path == "/__proxy":
            with LOCK:
                for k, v in parse_qs(url.query).items():
                    RATES[k] = float(v[0])
            return self.reply(200, [], b"{}")
        if url.path == "/__proxy/log":
            with LOCK:
                return self.reply(200, [], json.dumps(COUNTS).encode())
        what = choose(method)
        with LOCK:
            COUNTS[what] += 1
        if what == "dropRequest":
            self.close_connection = True
            return
        try:
            status, headers, data = self.forward(method, body)
            if what == "duplicate":
                status, headers, data = self.forward(method, body)
        except (OSError, http.client.HTTPException):
            error = {"error": {"status": 503, "code": "unavailable", "message": "upstream unreachable"}}
            return self.reply(503, [("Retry-After", "0"), ("Content-Type", "application/json")], json.dumps(error).encode())
        if what == "dropAnswer":
            self.close_connection = True
            return
        self.reply(status, headers, data)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
time.sleep(300)
