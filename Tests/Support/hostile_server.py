#!/usr/bin/env python3
"""A misbehaving HTTP server for the HTTP client tests (Python 3 standard library only), on 127.0.0.1 only.

Usage: hostile_server.py [--tls PEM]
Prints the port it listens on as the first line of stdout, then serves until stdin closes (or 120 s pass).
With --tls, it speaks HTTPS with the certificate and key in PEM (a self-signed one, for verification tests).

Paths (N, CODE, S are decimal numbers; "pattern" is the byte i % 251 at offset i):
  /file               a JSON body with ETag "<sha256 hex>" and a Last-Modified in 2020; If-None-Match with
                      that ETag, or If-Modified-Since equal to that date, gets 304 Not Modified.
  /gzip-file          the same body with Content-Encoding: gzip (when Accept-Encoding allows it).
  /stream/N           N bytes of pattern without Content-Length, then the connection closes.
  /chunked/N          N bytes of pattern in 4096-byte chunks (Transfer-Encoding: chunked).
  /bomb               Content-Encoding: gzip; a stream of about 512 KiB that decodes to 512 MiB of zeros,
                      compressed as it is sent.
  /drip               Content-Length 1000000, then one byte every 0.5 s (until the client goes or 120 s pass).
  /reset              Content-Length 100000, 1000 bytes, then a TCP reset (SO_LINGER 0).
  /reset-first/N      the first N requests are reset before any response; later ones get /file.
  /redirect-file      302 to file:///etc/passwd.
  /redirect/N         302 to /redirect/N-1; /redirect/0 is /file.
  /loop               302 to /loop, forever.
  /status/CODE        that status with a short body; ?retry-after=V adds Retry-After: V.
  /retry-date/S       the first request gets 503 with Retry-After: <Date + S s> as an HTTP-date; later ones /file.
  /not-modified       304 Not Modified, whatever the request.
  /last-modified-now  200 with Last-Modified equal to Date (a weak validator, RFC 9110 8.8.2.2).
  /flaky/N            the first N requests get 500; later ones /file.
  /log                JSON: every request so far as {"path", "ifNoneMatch", "ifModifiedSince", "acceptEncoding",
                      "userAgent", "accept"}.
Redirects carry a short body, as real servers' do. Requests are counted per path (query included).
"""
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
import zlib
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

FILE_BODY = json.dumps({"format": "landmark-catalog-snapshot", "version": 1,
                        "landmarks": [{"id": i, "name": "Landmark %d" % i} for i in range(500)]}).encode()
FILE_ETAG = '"%s"' % hashlib.sha256(FILE_BODY).hexdigest()
FILE_DATE = "Wed, 01 Jan 2020 00:00:00 GMT"
PATTERN = bytes(i % 251 for i in range(251 * 64))  # a whole number of periods, so it repeats seamlessly
LOG = []
COUNTS = {}
LOCK = threading.Lock()


def pattern(n, size=len(PATTERN) - 251):
    """Yields n bytes of the pattern in blocks of `size` bytes (the last one maybe shorter)."""
    offset = 0
    while offset < n:
        count = min(size, n - offset)
        yield PATTERN[offset % 251:offset % 251 + count]
        offset += count


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle(self):
        try:
            super().handle()
        except OSError:  # the client went away (reset, closed mid-body, TLS refused): expected here
            self.close_connection = True

    def start(self, status, headers=(), length=None, date=None):
        self.send_response_only(status)
        self.send_header("Date", date or formatdate(usegmt=True))
        for name, value in headers:
            self.send_header(name, value)
        if length is None:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def reply(self, status, body=b"", headers=()):
        self.start(status, headers, len(body))
        self.wfile.write(body)

    def reset(self):
        """Closes the connection with a TCP RST instead of a FIN."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        os.close(self.connection.detach())
        self.close_connection = True

    def serve_file(self, gzipped=False):
        etag = FILE_ETAG
        body = FILE_BODY
        headers = [("Content-Type", "application/json"), ("Last-Modified", FILE_DATE)]
        if gzipped and "gzip" in (self.headers.get("Accept-Encoding") or ""):
            etag = etag[:-1] + '-gzip"'
            body = gzip_bytes(FILE_BODY)
            headers.append(("Content-Encoding", "gzip"))
        headers.append(("ETag", etag))
        if self.headers.get("If-None-Match") == etag or self.headers.get("If-Modified-Since") == FILE_DATE:
            self.start(304, [("ETag", etag)], 0)
            return
        self.reply(200, body, headers)

    def do_GET(self):
        with LOCK:
            LOG.append({"path": self.path, "ifNoneMatch": self.headers.get("If-None-Match"),
                        "ifModifiedSince": self.headers.get("If-Modified-Since"),
                        "acceptEncoding": self.headers.get("Accept-Encoding"),
                        "userAgent": self.headers.get("User-Agent"), "accept": self.headers.get("Accept")})
            COUNTS[self.path] = COUNTS.get(self.path, 0) + 1
            count = COUNTS[self.path]
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        name, arg = parts[0], (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None)
        self.route(name, arg, count, parse_qs(url.query))

    def route(self, name, arg, count, query):
        if name == "file":
            return self.serve_file()
        if name == "gzip-file":
            return self.serve_file(gzipped=True)
        if name == "stream" and arg is not None:
            self.start(200, [("Content-Type", "application/octet-stream")])
            for block in pattern(arg):
                self.wfile.write(block)
            return
        if name == "chunked" and arg is not None:
            self.send_response_only(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in pattern(arg, 4096):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            return
        if name == "bomb":
            self.start(200, [("Content-Encoding", "gzip"), ("Content-Type", "application/json")])
            compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip wrapper
            zeros = bytes(1 << 20)
            for _ in range(512):
                out = compressor.compress(zeros)
                if out:
                    self.wfile.write(out)
            self.wfile.write(compressor.flush())
            return
        if name == "drip":
            self.start(200, [("Content-Type", "application/json")], 1000000)
            while True:
                self.wfile.write(b" ")
                time.sleep(0.5)
        if name == "reset":
            self.start(200, [("Content-Type", "application/json")], 100000)
            self.wfile.write(b"x" * 1000)
            time.sleep(0.2)  # let the bytes reach the client before the reset discards what is unsent
            return self.reset()
        if name == "reset-first" and arg is not None:
            return self.reset() if count <= arg else self.serve_file()
        if name == "redirect-file":
            return self.reply(302, b"moved\n", [("Location", "file:///etc/passwd")])
        if name == "redirect" and arg is not None:
            return self.serve_file() if arg == 0 else self.reply(302, b"moved\n", [("Location", "/redirect/%d" % (arg - 1))])
        if name == "loop":
            return self.reply(302, b"moved\n", [("Location", "/loop")])
        if name == "status" and arg is not None:
            headers = [("Retry-After", query["retry-after"][0])] if "retry-after" in query else []
            return self.reply(arg, b"status %d\n" % arg, headers)
        if name == "retry-date" and arg is not None:
            if count > 1:
                return self.serve_file()
            now = int(time.time())
            self.send_response_only(503)
            self.send_header("Date", formatdate(now, usegmt=True))
            self.send_header("Retry-After", formatdate(now + arg, usegmt=True))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if name == "not-modified":
            return self.start(304, [], 0)
        if name == "last-modified-now":
            now = formatdate(usegmt=True)
            self.send_response_only(200)
            self.send_header("Date", now)
            self.send_header("Last-Modified", now)
            self.send_header("Content-Length", str(len(FILE_BODY)))
            self.end_headers()
            return self.wfile.write(FILE_BODY)
        if name == "flaky" and arg is not None:
            return self.reply(500, b"flaky\n") if count <= arg else self.serve_file()
        if name == "log":
            with LOCK:
                body = json.dumps(LOG).encode()
            return self.reply(200, body, [("Content-Type", "application/json")])
        self.reply(404, b"not found\n")


def gzip_bytes(data):
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
if len(sys.argv) == 3 and sys.argv[1] == "--tls":
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()


def watch_stdin():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=watch_stdin, daemon=True).start()
time.sleep(120)
os._exit(0)
