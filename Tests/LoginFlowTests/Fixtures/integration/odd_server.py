#!/usr/bin/env python3
"""A small HTTP(S) server for SessionKeeper's integration tests: the odd cases the demo site does not have.

Listens on 127.0.0.1, port 0 (the system picks one) and prints the port on its first line of output.
With --cert/--key it serves HTTPS with that certificate. Routes are documented in the handler below.
Every request is answered from the request alone (no state), so tests can run in any order.
"""
import argparse
import json
import os
import signal
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE = """<!DOCTYPE html>
<html><head><title>Odd page</title></head>
<body>
<form id="login" method="post" action="/echo">
  <input type="hidden" name="nonce" value="n-123">
  <input type="text" name="user" value="">
  <input type="checkbox" name="remember" value="yes" checked>
  <input type="submit" name="go" value="Sign in">
</form>
<p id="count">3</p>
<p class="motd">Hello &amp; welcome</p>
</body></html>
"""

FEED = """<?xml version="1.0"?>
<feed><entry id="e1"><title>First</title></entry><entry id="e2"><title>Second</title></entry></feed>
"""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # quiet: tests read stdout only for the port
        pass

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8", "replace") if length else ""

    def send(self, status, body=b"", content_type="text/plain; charset=utf-8", headers=()):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if status not in (204, 304):
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(body)

    def host_port(self):
        host = self.headers.get("Host", "")
        return host.rsplit(":", 1)[1] if ":" in host else str(self.server.server_address[1])

    def handle_any(self):
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        scheme = "https" if isinstance(self.connection, ssl.SSLSocket) else "http"
        port = self.host_port()

        if path == "/accounts/login/":
            # A refused sign-in shaped like django-allauth's: a long head, a nav, the message in an errorlist
            # halfway down. A POST's `echo` field is put into the message (an app that repeats what was typed).
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "django_login_refused.html")) as page:
                text = page.read()
            echo = parse_qs(self.body()).get("echo", [""])[0] if self.command == "POST" else ""
            self.send(200, text.replace("{echo}", f" ({echo})" if echo else ""), "text/html; charset=utf-8")
        elif path == "/api/refused":
            # A JSON API's refusal: the message in errors[0].detail.
            self.send(400, json.dumps({"errors": [{"code": "invalid", "detail": "Invalid credentials given."}]}),
                      "application/json")
        elif path == "/page":
            # HTML with a form (for xpath and form_from), a header and a cookie to extract.
            self.send(200, PAGE, "text/html; charset=utf-8",
                      [("X-Request-Id", "rid-42"), ("Set-Cookie", "pagecookie=pc-value; Path=/")])
        elif path == "/data.json":
            self.send(200, json.dumps({"user": {"name": "alice", "id": 7}, "ok": True, "list": [1, 2],
                                       "a/b": "slash", "m~n": "tilde"}), "application/json")
        elif path == "/feed.xml":
            self.send(200, FEED, "application/xml")
        elif path == "/start-url":
            # A redirect whose final URL carries values to extract with `url: {query: ...}`.
            self.send(302, headers=[("Location", "/final?code=abc123&state=xyz")])
        elif path == "/final":
            self.send(200, "final page")
        elif path == "/echo":
            # Echoes the request as JSON: method, path, query, body, content type, some headers by name, and
            # every header under "headers" (lower-case names).
            headers = {name.lower(): value for name, value in self.headers.items()}
            self.send(200, json.dumps({"method": self.command, "path": path, "query": url.query,
                                       "body": self.body(), "content_type": headers.get("content-type"),
                                       "authorization": headers.get("authorization"),
                                       "cookie": headers.get("cookie"), "host": headers.get("host"),
                                       "headers": headers}),
                      "application/json")
        elif path.startswith("/redirect/"):
            # /redirect/CODE answers CODE with Location /echo (or ?to=URL); the request body is read and dropped.
            self.body()
            code = int(path.rsplit("/", 1)[1])
            target = query.get("to", ["/echo"])[0]
            self.send(code, "moved", headers=[("Location", target), ("Set-Cookie", f"hop{code}=seen; Path=/")])
        elif path == "/cross":
            # A 307 to the other host name on the same port: Authorization must not follow.
            self.body()
            self.send(307, headers=[("Location", f"{scheme}://other.test:{port}/echo")])
        elif path == "/third-party":
            # main.test sets its own cookie, then sends the client through other.test, which sets one too.
            self.send(302, headers=[("Set-Cookie", "own=1; Path=/"),
                                    ("Location", f"{scheme}://other.test:{port}/set-other")])
        elif path == "/set-other":
            self.send(302, headers=[("Set-Cookie", "tp=1; Path=/"),
                                    ("Location", f"{scheme}://main.test:{port}/echo")])
        elif path == "/big":
            # 9 MiB: past the transport's default 8 MiB body cap.
            self.send(200, b"x" * (9 * 1024 * 1024), "application/octet-stream")
        elif path == "/slow":
            time.sleep(float(query.get("seconds", ["5"])[0]))
            self.send(200, "slow answer")
        elif path.startswith("/status/"):
            self.send(int(path.rsplit("/", 1)[1]), "status page")
        else:
            self.send(404, "no such route")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any


def stop_on_signals():
    """A test runner may start us with SIGTERM blocked or ignored (its own signal mask is inherited):
    unblock it and exit cleanly on it, so the test that started us can stop us."""
    signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
    for number in signals:
        signal.signal(number, lambda *_: sys.exit(0))


def main():
    stop_on_signals()
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert")
    parser.add_argument("--key")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
