#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the client fuzz test (ClientFuzzTests): it stands between the devices'
sync sessions and a real `catalog serve`, on 127.0.0.1 only, bounded in time.

Usage: fault_proxy.py --seed N [--port N] [--log FILE]
Prints the port it listens on as the first line of stdout, then serves until stdin closes, SIGTERM, or
600 s pass.

While chaos is on, each forwarded request meets one fault, drawn from a random generator seeded by --seed:
  drop-request   the connection is closed before the request reaches the server (nothing written);
  drop-response  the request is forwarded and answered, then the connection is closed without the answer
                 (the device does not know; its retry is a duplicate);
  duplicate      the request is forwarded twice and the second answer given;
  unauthorized   a 401 with WWW-Authenticate, as a server answers a token that has expired;
  pass           forwarded as it is.
With no upstream (the server is down) every connection is closed unanswered.

Control routes, not forwarded:
  POST /__config {"upstream": PORT or null, "chaos": true|false}
  GET  /__stats  {"faults": {name: count}, "forwarded": n}
"""
import argparse
import http.client
import json
import os
import random
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--log", help="append one line per request: time, method, path, fault, status, seconds")
args = parser.parse_args()

LOCK = threading.Lock()
STATE = {"upstream": None, "chaos": False}
RNG = random.Random(args.seed)
STATS = {"faults": {}, "forwarded": 0}
FAULTS = [("drop-request", 0.08), ("drop-response", 0.08), ("duplicate", 0.06), ("unauthorized", 0.05)]
KEPT_HEADERS = ("authorization", "content-type", "if-none-match", "accept")
ANSWERED_HEADERS = ("content-type", "etag", "www-authenticate", "retry-after", "cache-control")


def draw():
    with LOCK:
        if not STATE["chaos"]:
            return "pass", STATE["upstream"]
        r = RNG.random()
        fault = "pass"
        for name, p in FAULTS:
            if r < p:
                fault = name
                break
            r -= p
        STATS["faults"][fault] = STATS["faults"].get(fault, 0) + 1
        return fault, STATE["upstream"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def drop(self):
        self.close_connection = True

    def forward(self, upstream, body):
        connection = http.client.HTTPConnection("127.0.0.1", upstream, timeout=90)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() in KEPT_HEADERS}
            connection.request(self.command, self.path, body=body if self.command == "POST" else None, headers=headers)
            response = connection.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() in ANSWERED_HEADERS]
            with LOCK:
                STATS["forwarded"] += 1
            return response.status, data, kept
        finally:
            connection.close()

    def handle_any(self):
        started = time.time()
        self.outcome = "-"
        try:
            self.handle_inner()
        finally:
            if args.log:
                with LOCK, open(args.log, "a") as log:
                    log.write("%.3f %s %s %s %s %.3f" % (started, self.command, self.path.split("?")[0] + ("?wait" if "wait=" in self.path else ""),
                                                         getattr(self, "fault", "-"), self.outcome, time.time() - started) + " read %.3f\n" % (getattr(self, "read_at", started) - started))

    def handle_inner(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.read_at = time.time()
        if self.path == "/__config" and self.command == "POST":
            config = json.loads(body)
            with LOCK:
                STATE.update({k: config[k] for k in ("upstream", "chaos") if k in config})
            return self.answer(200, b"{}", [("Content-Type", "application/json")])
        if self.path == "/__stats":
            with LOCK:
                data = json.dumps(STATS).encode()
            return self.answer(200, data, [("Content-Type", "application/json")])
        fault, upstream = draw()
        self.fault = fault
        if upstream is None or fault == "drop-request":
            return self.drop()
        if fault == "unauthorized":
            error = b'{"error":{"code":"invalid_token","message":"the token has expired"}}'
            return self.answer(
                401, error,
                [("Content-Type", "application/json"), ("WWW-Authenticate", 'Bearer error="invalid_token"')])
        try:
            status, data, headers = self.forward(upstream, body)
            if fault == "duplicate":
                status, data, headers = self.forward(upstream, body)
        except OSError:
            return self.drop()  # the server went away mid-request: so does the answer
        if fault == "drop-response":
            return self.drop()
        self.outcome = str(status)
        self.answer(status, data, headers)

    do_GET = handle_any
    do_POST = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A device that gave up on a request (its timeout, a cancelled long-poll) closed the connection.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


server = Server(("127.0.0.1", args.port), Handler)
print(server.server_address[1], flush=True)


def stop(*_):
    threading.Thread(target=server.shutdown, daemon=True).start()


signal.signal(signal.SIGTERM, stop)
threading.Thread(target=lambda: (sys.stdin.read(), stop()), daemon=True).start()
threading.Timer(600, stop).start()
server.serve_forever()
os._exit(0)
