#!/usr/bin/env python3
"""A fake of the daemon's socket API (SPEC section 8) on a Unix socket, with canned answers, for the
client commands' tests (cookie, status, refresh, exec).

Usage: fake_socket_api.py SOCKET_PATH LOG_PATH [EVENT_DELAY_SECONDS]

Every request line is appended to LOG_PATH. Sites:
  demo       valid; cookies demo_session (value rotates when the cookies event is sent) and theme
  nosession  failed: its cookies answer 503 no_session; a refresh with wait says its login was refused
  slow       failed, backing off (2 failures, a refresh planned); its cookies and refresh with wait answer 504 timeout
  forbidden  403 on everything
  busy       503 too_many on everything (a connection cap)
  other      404 unknown site
GET /v1/events streams, EVENT_DELAY_SECONDS (default 1) after it opens, a state event and a cookies
event for demo (after rotating demo_session's value), then comments once a second.
"""
import json
import os
import signal
import socketserver
import sys
import threading
import time
import urllib.parse

SOCKET, LOG = sys.argv[1], sys.argv[2]
EVENT_DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
LOCK = threading.Lock()
STATE = {"session": "fake-session-value-1"}
EXPIRES = "2099-01-01T00:00:00Z"

SITES = {
    "demo": {"name": "demo", "state": "valid", "expires_at": EXPIRES, "last_login": "2026-11-24T01:00:00Z",
             "next_refresh": "2098-12-31T23:50:00Z", "last_error": None,
             "next_run": {"kind": "check", "at": "2098-12-31T23:40:00Z"}, "failures": 0, "retry_at": None,
             "attention": None,
             "learned": {"idle_timeout": {"alive_s": 15, "dead_s": 20.5, "observations": 6},
                         "lifetime": {"alive_s": 88, "dead_s": None, "observations": 7}, "relearned": 0}},
    "nosession": {"name": "nosession", "state": "failed", "expires_at": None, "last_login": None,
                  "next_refresh": "2026-11-24T03:00:00Z", "last_error": "expected status 303, found status 200",
                  "next_run": None, "failures": 1, "retry_at": None,
                  "attention": {"reason": "credentials-refused", "what_to_do": "fix the credentials in nosession.yaml"},
                  "learned": None},
    "slow": {"name": "slow", "state": "failed", "expires_at": None, "last_login": None,
             "next_refresh": "2099-01-01T00:00:00Z", "last_error": "plugin failed",
             "next_run": {"kind": "refresh", "at": "2099-01-01T00:00:00Z"}, "failures": 2,
             "retry_at": "2099-01-01T00:00:00Z", "attention": None,
             "listen_error": "cannot listen on 127.0.0.1:8080: address already in use"},
}


def demo_cookies():
    return [
        {"name": "demo_session", "value": STATE["session"], "domain": "127.0.0.1", "host_only": True,
         "path": "/", "expires": EXPIRES, "secure": False, "http_only": True, "same_site": "lax",
         "created": "2026-11-24T01:00:00.000000Z", "last_access": "2026-11-24T01:00:00.000000Z"},
        {"name": "theme", "value": "dark", "domain": "127.0.0.1", "host_only": True,
         "path": "/app", "expires": None, "secure": False, "http_only": False, "same_site": None,
         "created": "2026-11-24T01:00:00.000000Z", "last_access": "2026-11-24T01:00:00.000000Z"},
    ]


def error(status, code, message):
    return status, "application/json", json.dumps({"error": {"code": code, "message": message}})


class Handler(socketserver.StreamRequestHandler):
    def send(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def answer(self, status, content_type, body, chunked=False):
        reasons = {200: "OK", 202: "Accepted", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
                   503: "Service Unavailable", 504: "Gateway Timeout"}
        data = body.encode()
        head = "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n" % (status, reasons.get(status, "X"), content_type)
        if chunked:
            middle = len(data) // 2
            self.send((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
            for piece in (data[:middle], data[middle:]):
                if piece:
                    self.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.send(b"0\r\n\r\n")
        else:
            self.send((head + "Content-Length: %d\r\n\r\n" % len(data)).encode() + data)

    def handle(self):
        request = self.rfile.readline(65537).decode().rstrip("\r\n")
        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
            pass
        with LOCK, open(LOG, "a") as log:
            log.write(request + "\n")
        method, target, _ = request.split(" ", 2)
        parsed = urllib.parse.urlsplit(target)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        parts = [urllib.parse.unquote(p) for p in parsed.path.split("/") if p]
        if parsed.path == "/v1/events":
            return self.events()
        self.answer(*self.route(method, parts, query), chunked=query.get("format") == "json")

    def route(self, method, parts, query):
        if parts == ["v1", "health"]:
            return 200, "application/json", json.dumps({"status": "ok", "version": "fake", "uptime_s": 5})
        if parts == ["v1", "sites"]:
            return 200, "application/json", json.dumps({"sites": list(SITES.values()), "failed_files": [
                {"file": "/etc/sessionkeeper/sites/broken.yaml",
                 "errors": ["/etc/sessionkeeper/sites/broken.yaml:3:1: error: unknown key 'chek'"]}]})
        if len(parts) < 3 or parts[:2] != ["v1", "sites"]:
            return error(404, "not_found", "no such route")
        name = parts[2]
        if name == "forbidden":
            return error(403, "forbidden", "uid not allowed for site 'forbidden'")
        if name == "busy":
            return error(503, "too_many", "uid 0 holds 128 connections (the cap per uid); close some first")
        if name not in SITES:
            return error(404, "unknown_site", "no site named '%s'" % name)
        rest = parts[3:]
        if rest == [] and method == "GET":
            site = dict(SITES[name])
            site["cookies"] = [c["name"] for c in demo_cookies()] if name == "demo" else []
            site["user_agent"] = "FakeAgent/1.0" if name == "demo" else None
            return 200, "application/json", json.dumps(site)
        if rest == ["cookies"] and method == "GET":
            if "min_valid" in query and query["min_valid"] == "bogus":
                return error(400, "bad_request", "min_valid: 'bogus' is not a duration")
            if name == "nosession":
                return error(503, "no_session", "no valid session for 'nosession' yet")
            if name == "slow":
                return error(504, "timeout", "no session within %s" % query.get("wait", "0s"))
            cookies = demo_cookies()
            fmt = query.get("format", "header")
            if fmt == "header":
                return 200, "text/plain", "; ".join("%s=%s" % (c["name"], c["value"]) for c in cookies) + "\n"
            if fmt == "json":
                return 200, "application/json", json.dumps(cookies)
            return 200, "text/plain", "format %s\n" % fmt
        if rest == ["refresh"] and method == "POST":
            if "wait" not in query:
                return 202, "application/json", json.dumps({"status": "started"})
            if name == "slow":
                return error(504, "timeout", "the login did not finish within %s" % query["wait"])
            answer = dict(SITES[name])
            if name == "nosession":
                answer["login"] = {"outcome": "credentials-refused", "error": answer["last_error"],
                                   "ended_at": "2026-11-24T02:00:00Z"}
                answer["session_served"] = False
            else:
                answer["login"] = {"outcome": "ok", "error": None, "ended_at": "2026-11-24T02:00:00Z"}
                answer["session_served"] = True
            return 200, "application/json", json.dumps(answer)
        return error(404, "not_found", "no such route")

    def chunk(self, text):
        data = text.encode()
        self.send(b"%x\r\n%s\r\n" % (len(data), data))

    def events(self):
        self.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            self.chunk(": subscribed\n\n")
            time.sleep(EVENT_DELAY)
            with LOCK:
                STATE["session"] = "fake-session-value-2"
            self.chunk('id: 1\nevent: state\ndata: {"site":"demo","time":"2026-11-24T02:00:00Z","from":"refreshing","to":"valid"}\n\n')
            self.chunk('id: 2\nevent: cookies\ndata: {"site":"other","time":"2026-11-24T02:00:00Z","names":["x"],"expires_at":null}\n\n')
            self.chunk('id: 3\nevent: cookies\ndata: {"site":"demo","time":"2026-11-24T02:00:00Z","names":["demo_session","theme"],"expires_at":"%s"}\n\n' % EXPIRES)
            for _ in range(120):
                time.sleep(1)
                self.chunk(": keep-alive\n\n")
        except OSError:
            pass


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if __name__ == "__main__":
    # A test runner may start this with SIGTERM blocked; the test stops it with SIGTERM.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if os.path.exists(SOCKET):
        os.unlink(SOCKET)
    with Server(SOCKET, Handler) as server:
        print("ready", flush=True)  # the test waits for this line
        server.serve_forever()
