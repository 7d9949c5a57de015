"""Loopback HTTP server whose sessions die as a real app's do, for the learned-lifetime tests and benchmark.

Sessions are cookies without Max-Age or Expires; the server ends one after `idle` seconds without use or `lifetime`
seconds after its login (0: never), set per site and changeable at any time. Its clock is the test's: set by
/_control/clock, or the real one until then. Prints its port on the first line of stdout, then serves until killed:
  POST /SITE/login          a login: 200 with Set-Cookie s_SITE=TOKEN (a session cookie)
  GET  /SITE/me             200 when the cookie's session lives (a use: its idle time starts again), 401 otherwise
  GET  /SITE/ping           as /me, but 204 (a keepalive)
  POST /_control/site?name=S&idle=N&lifetime=N   the site's timeouts (seconds, 0: none), for live sessions too
  POST /_control/clock?now=EPOCH                 the server's time from now on
  GET  /_control/alive?site=S  {"alive": bool} for the request's cookie, without using the session
  GET  /_control/stats?site=S  {"logins": n, "checks": n, "deaths": n}
Benchmarks/run-learning imports it and serves from its own process (``start``), reading the sessions directly.
"""
import http.server
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse

lock = threading.Lock()
clock = [None]
timeouts = {}  # site -> (idle, lifetime)
sessions = {}  # token -> [site, created, last_use]
stats = {}  # site -> {"logins", "checks", "deaths"}
events = {}  # site -> [(time, "login" | "alive" | "dead")], for the benchmark's timeline


def now():
    return clock[0] if clock[0] is not None else time.time()


def counter(site):
    return stats.setdefault(site, {"logins": 0, "checks": 0, "deaths": 0})


def session_of(site, cookie_header):
    """The live session the Cookie header names for `site`, or None (a dead one is forgotten and counted)."""
    prefix = "s_%s=" % site
    for part in (cookie_header or "").split(";"):
        part = part.strip()
        if part.startswith(prefix):
            token = part[len(prefix):]
            entry = sessions.get(token)
            if entry is None or entry[0] != site:
                return None
            idle, lifetime = timeouts.get(site, (0, 0))
            t = now()
            if (idle and t - entry[2] >= idle) or (lifetime and t - entry[1] >= lifetime):
                del sessions[token]
                counter(site)["deaths"] += 1
                return None
            return entry
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def json(self, value):
        self.answer(200, json.dumps(value).encode(), [("Content-Type", "application/json")])

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        parts = url.path.strip("/").split("/")
        with lock:
            if url.path == "/_control/alive":
                return self.json({"alive": session_of(query["site"], self.headers.get("Cookie")) is not None})
            if url.path == "/_control/stats":
                return self.json(counter(query["site"]))
            if len(parts) == 2 and parts[1] in ("me", "ping"):
                site = parts[0]
                counter(site)["checks"] += 1
                entry = session_of(site, self.headers.get("Cookie"))
                events.setdefault(site, []).append((now(), "alive" if entry else "dead"))
                if entry is None:
                    return self.answer(401, b'{"error":"logged out"}')
                entry[2] = now()
                if parts[1] == "ping":
                    return self.answer(204)
                return self.answer(200, b'{"user":"alice"}', [("Content-Type", "application/json")])
        self.answer(404)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = url.path.strip("/").split("/")
        with lock:
            if url.path == "/_control/site":
                timeouts[query["name"]] = (float(query.get("idle", 0)), float(query.get("lifetime", 0)))
                return self.answer(204)
            if url.path == "/_control/clock":
                clock[0] = float(query["now"])
                return self.answer(204)
            if len(parts) == 2 and parts[1] == "login":
                site = parts[0]
                token = secrets.token_hex(16)
                t = now()
                sessions[token] = [site, t, t]
                counter(site)["logins"] += 1
                events.setdefault(site, []).append((t, "login"))
                return self.answer(200, b"welcome", [("Set-Cookie", "s_%s=%s; Path=/; HttpOnly" % (site, token))])
        self.answer(404)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


def start(address="127.0.0.1"):
    """Serves on a free port in a background thread; returns the server (its port: server.server_address[1])."""
    server = Server((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def alive(site, cookie_header):
    """Whether the session the Cookie header names for `site` lives now, without using it."""
    with lock:
        return session_of(site, cookie_header) is not None


if __name__ == "__main__":
    os.closerange(3, 65536)
    server = Server((sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
