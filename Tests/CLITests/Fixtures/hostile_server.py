"""Loopback HTTP server for the CLI's hostile-input tests.

Prints its port on the first line of stdout, then serves until killed:
  GET  /count           the number of requests served so far (this one not counted)
  GET  /down...         503 with a short body (a site that is down)
  GET  /huge-header     200 with one Set-Cookie header of 200 KB
  GET  /login           200, a session cookie, a cookie for another domain (refused) and an HTML body
  POST /login           303 to /home with the login cookie
  GET  /home            200 with a body echoing nothing secret
  anything else         404
"""
import os

# Close descriptors inherited from the test runner (other tests' pipe ends).
os.closerange(3, 65536)

import http.server  # noqa: E402
import threading  # noqa: E402

served = 0
lock = threading.Lock()

SESSION = "Sess10nValue_9f8e7d6c5b4a"
REMEMBER = "Rememb3rValue_0a1b2c3d4e"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def count(self):
        global served
        with lock:
            served += 1

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/count":
            with lock:
                number = served
            return self.reply(200, str(number).encode())
        self.count()
        if self.path.startswith("/down"):
            return self.reply(503, b"Service Unavailable: maintenance", [("Content-Type", "text/plain")])
        if self.path == "/huge-header":
            return self.reply(200, b"ok", [("Set-Cookie", "big=" + "x" * 200_000)])
        if self.path == "/login":
            return self.reply(
                200,
                b"<html><body><form id='login'><input name='csrf' value='tok'></form></body></html>",
                [
                    ("Content-Type", "text/html"),
                    ("Set-Cookie", "remember=" + REMEMBER + "; Path=/; Max-Age=3600"),
                    ("Set-Cookie", "tracker=abcdef123456; Domain=other.example; Path=/"),
                ],
            )
        if self.path == "/home":
            return self.reply(200, b"welcome home", [("Content-Type", "text/plain")])
        return self.reply(404, b"not found")

    def do_POST(self):
        self.count()
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path == "/login":
            return self.reply(
                303, b"", [("Location", "/home"), ("Set-Cookie", "session=" + SESSION + "; Path=/; Max-Age=3600; HttpOnly")]
            )
        return self.reply(404, b"not found")


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
