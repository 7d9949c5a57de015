"""Loopback HTTP server for the fleet tests: many sites, one path prefix each, and a count of their logins.

Listens on 127.0.0.1, or on the address given as its one argument (the fleet's network-namespace test serves
from a veth address). Prints its port on the first line of stdout, then serves until killed:
  POST /SITE/login    a login: answers 200 with Set-Cookie fleet_SITE=SITE-N-RANDOM (Max-Age one hour) after
                      the site's delay; while the site is parked, waits until it is released
  GET  /SITE/me       200 when the request carries the site's current cookie, 401 otherwise
  POST /park?site=S   the next logins of S wait until /release?site=S
  POST /release?site=S
  GET  /stats         {"logins": {site: count}, "active": {site: count}, "overlaps": [site, ...]}
A login of a site that starts while another login of the same site is in progress is an overlap.
"""
import os
import sys

os.closerange(3, 65536)

import http.server  # noqa: E402
import json  # noqa: E402
import secrets  # noqa: E402
import threading  # noqa: E402
import urllib.parse  # noqa: E402

lock = threading.Lock()
logins = {}
active = {}
overlaps = []
current = {}
parked = {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/stats":
            with lock:
                body = json.dumps({"logins": logins, "active": active, "overlaps": overlaps}).encode()
            return self.answer(200, body, [("Content-Type", "application/json")])
        parts = url.path.strip("/").split("/")
        if len(parts) == 2 and parts[1] == "me":
            site = parts[0]
            cookie = self.headers.get("Cookie") or ""
            with lock:
                expected = current.get(site)
            ok = expected is not None and ("fleet_%s=%s" % (site, expected)) in cookie
            return self.answer(200 if ok else 401, b'{"ok":true}' if ok else b"{}")
        self.answer(404)

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        query = urllib.parse.parse_qs(url.query)
        if url.path in ("/park", "/release"):
            site = query["site"][0]
            with lock:
                if url.path == "/park":
                    parked[site] = threading.Event()
                else:
                    event = parked.pop(site, None)
                    if event:
                        event.set()
            return self.answer(204)
        parts = url.path.strip("/").split("/")
        if len(parts) == 2 and parts[1] == "login":
            site = parts[0]
            with lock:
                if active.get(site, 0) > 0:
                    overlaps.append(site)
                active[site] = active.get(site, 0) + 1
                logins[site] = logins.get(site, 0) + 1
                number = logins[site]
                event = parked.get(site)
            if event:
                event.wait(120)
            value = "%s-%d-%s" % (site, number, secrets.token_hex(6))
            with lock:
                active[site] -= 1
                current[site] = value
            return self.answer(
                200, b'{"ok":true}',
                [("Set-Cookie", "fleet_%s=%s; Max-Age=3600; Path=/; HttpOnly" % (site, value)),
                 ("Content-Type", "application/json")])
        self.answer(404)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer((sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
