#!/usr/bin/env python3
"""HTTP fixture server for CurlTransportTests.

Binds --host (127.0.0.1 by default) on the given port (0 = any), prints the bound port on stdout, serves
until killed.
Options: --tls-cert/--tls-key serve HTTPS; --client-ca makes a client certificate mandatory.

Routes (any method):
  /echo              JSON {method, path, headers: [[name, value]...], body_length, body, proxied, client_cn,
                     server} (server: the address this server is bound to)
  /redirect          302 to /echo (the client must not follow it)
  /cookies           200 with three Set-Cookie headers, in order a, b, a
  /slow?delay=S      sleeps S seconds, then 200
  /slow-body?delay=S 200 with headers at once, body after S seconds
  /big?size=N        N bytes with Content-Length; &chunked=1 sends them chunked instead
  /early-hints       a 103 interim response with a Link header, then the final 200
  /gzip              a gzip-encoded text body
  /status?code=N     answers status N with an empty body
  /http10            answers with an HTTP/1.0 status line
  /drop              closes the connection without answering
  CONNECT            403 (a proxy that refuses tunnels)
  /stats             JSON {connections, requests, aborted}: TCP connections accepted, requests served, and
                     /big answers whose client went away before the body's end
  /trailers          a chunked body in three chunks, then the trailers X-Checksum and Server-Timing
  /die?after=N&length=M  announces M bytes, sends N, then closes the connection
  /held-body         the head at once, the 4-byte body only after a request to /release (at most 30 s)
  /release           lets /held-body send its body
  /upload-hash       reads the request body (Content-Length or chunked; &delay=S sleeps S seconds per 256 KiB
                     read) and answers JSON {length, sha256, content_length, transfer_encoding, method}
"""
import argparse
import gzip
import hashlib
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

STATS_LOCK = threading.Lock()
STATS = {"connections": 0, "requests": 0, "aborted": 0}
RELEASED = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fixture"
    sys_version = ""

    def log_message(self, format, *args):
        pass  # keep test output quiet

    def setup(self):
        super().setup()
        with STATS_LOCK:
            STATS["connections"] += 1

    def __getattr__(self, name):
        # Every method token (GET, PURGE, ...) goes to the same dispatcher.
        if name.startswith("do_"):
            return self.dispatch
        raise AttributeError(name)

    def read_body(self):
        if self.path.startswith("/upload-hash"):
            return b""  # read piece by piece by the route itself
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return b"".join(self.read_chunks())
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def read_chunks(self):
        """Yields the pieces of a chunked request body (RFC 9112 section 7.1), then reads its trailer lines."""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return
            remaining = size
            while remaining > 0:
                piece = self.rfile.read(min(remaining, 262144))
                if not piece:
                    raise ConnectionError("the body ended inside a chunk")
                remaining -= len(piece)
                yield piece
            self.rfile.readline()

    def read_pieces(self, delay):
        """Yields the request body in pieces of at most 256 KiB, sleeping `delay` seconds after each."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            pieces = self.read_chunks()
        else:
            def fixed(remaining):
                while remaining > 0:
                    piece = self.rfile.read(min(remaining, 262144))
                    if not piece:
                        raise ConnectionError("the body ended early")
                    remaining -= len(piece)
                    yield piece
            pieces = fixed(int(self.headers.get("Content-Length") or 0))
        for piece in pieces:
            yield piece
            if delay:
                time.sleep(delay)

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if not any(n.lower() == "content-length" for n, _ in headers):
            self.send_header("Content-Length", str(len(body)))  # for HEAD too: what GET would send
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        with STATS_LOCK:
            STATS["requests"] += 1
        target = urlsplit(self.path)
        proxied = target.scheme != ""  # absolute-form request target: we are being used as a proxy
        query = parse_qs(target.query)
        route = target.path
        body = self.read_body()

        if self.command == "CONNECT":
            self.reply(403, b"tunnels are not allowed here")  # a proxy refusing to tunnel
        elif route == "/echo" or proxied:
            client_cn = None
            if isinstance(self.connection, ssl.SSLSocket):
                cert = self.connection.getpeercert()
                if cert:
                    for rdn in cert.get("subject", ()):
                        for key, value in rdn:
                            if key == "commonName":
                                client_cn = value
            payload = {
                "method": self.command,
                "path": self.path,
                "headers": [[k, v] for k, v in self.headers.items()],
                "body_length": len(body),
                "body": body.decode("utf-8", "replace"),
                "proxied": proxied,
                "client_cn": client_cn,
                "server": self.server.server_address[0],
            }
            self.reply(200, json.dumps(payload).encode(), [("Content-Type", "application/json")])
        elif route == "/redirect":
            self.reply(302, b"", [("Location", "/echo")])
        elif route == "/cookies":
            self.reply(200, b"ok", [("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; Path=/"),
                                    ("Set-Cookie", "a=3; Path=/")])
        elif route == "/slow":
            time.sleep(float(query.get("delay", ["2"])[0]))
            self.reply(200, b"slow")
        elif route == "/slow-body":
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.flush()
            time.sleep(float(query.get("delay", ["2"])[0]))
            self.wfile.write(b"late")
        elif route == "/big":
            size = int(query.get("size", ["0"])[0])
            chunk = b"x" * 262144
            self.send_response(200)
            try:
                if query.get("chunked") == ["1"]:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    remaining = size
                    while remaining > 0:
                        piece = chunk[: min(remaining, len(chunk))]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        remaining -= len(piece)
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    remaining = size
                    while remaining > 0:
                        piece = chunk[: min(remaining, len(chunk))]
                        self.wfile.write(piece)
                        remaining -= len(piece)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                with STATS_LOCK:
                    STATS["aborted"] += 1
                self.close_connection = True
        elif route == "/trailers":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Trailer", "X-Checksum, Server-Timing")
            self.end_headers()
            for piece in (b"first,", b"second,", b"third"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\nX-Checksum: sum-123\r\nServer-Timing: total;dur=7\r\n\r\n")
        elif route == "/die":
            after = int(query.get("after", ["1000"])[0])
            self.send_response(200)
            self.send_header("Content-Length", query.get("length", ["1000000"])[0])
            self.end_headers()
            self.wfile.write(b"y" * after)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif route == "/held-body":
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.flush()
            RELEASED.wait(30)
            self.wfile.write(b"late")
        elif route == "/release":
            RELEASED.set()
            self.reply(200, b"released")
        elif route == "/upload-hash":
            digest = hashlib.sha256()
            length = 0
            for piece in self.read_pieces(float(query.get("delay", ["0"])[0])):
                digest.update(piece)
                length += len(piece)
            payload = {
                "length": length,
                "sha256": digest.hexdigest(),
                "content_length": self.headers.get("Content-Length"),
                "transfer_encoding": self.headers.get("Transfer-Encoding"),
                "method": self.command,
            }
            self.reply(200, json.dumps(payload).encode(), [("Content-Type", "application/json")])
        elif route == "/early-hints":
            self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            self.reply(200, b"final", [("X-Final", "yes")])
        elif route == "/gzip":
            text = ("compressible text " * 200).encode()
            self.reply(200, gzip.compress(text), [("Content-Encoding", "gzip"), ("Content-Type", "text/plain")])
        elif route == "/status":
            self.reply(int(query.get("code", ["200"])[0]))
        elif route == "/http10":
            self.protocol_version = "HTTP/1.0"  # answer with an HTTP/1.0 status line, then close
            self.close_connection = True
            self.reply(200, b"old")
        elif route == "/drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif route == "/stats":
            with STATS_LOCK:
                payload = dict(STATS)
            self.reply(200, json.dumps(payload).encode(), [("Content-Type", "application/json")])
        else:
            self.reply(404, b"not found")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the concurrency test opens hundreds of connections at once

    def handle_error(self, request, client_address):
        pass  # refused TLS handshakes and dropped connections are what some tests provoke


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--client-ca")
    args = parser.parse_args()

    # The test process may spawn us with signals blocked or ignored; make SIGTERM work again.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Exit when the test process goes away (our stdin is its pipe), so no server outlives a crashed run.
    threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()

    server = Server((args.host, args.port), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(args.client_ca)
        # Handshake in the handler thread, not in accept(), so one bad client cannot stall the others.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)

        original = Handler.setup

        def tls_setup(self):
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError):
                self.request.close()
                raise
            original(self)

        Handler.setup = tls_setup

    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
