"""A login form that behaves like Django's and Trac's: a visitor who already holds a valid session
cookie is redirected away from /login, so a login that starts from the stored session cookie never
sees the form. It also sets a long-lived "remembered device" cookie on the first login.

GET  /login   -> 302 /home when the sid cookie is valid, else the form (csrf hidden field + cookie)
POST /login   -> 303 /home with sid (and device, the first time) when csrf and password match
GET  /home    -> 200 when logged in, else 302 /login
GET  /stats   -> {"posts": N, "posts_with_device": M, "user_agents": [...]} as JSON
Prints its port on the first line of stdout.
"""
import http.server
import json
import secrets
import socketserver
import sys
import urllib.parse

PASSWORD = sys.argv[1] if len(sys.argv) > 1 else "s3cret"
sessions = set()
devices = set()
stats = {"posts": 0, "posts_with_device": 0, "user_agents": []}


def cookies_of(handler):
    jar = {}
    for part in handler.headers.get("Cookie", "").split(";"):
        if "=" in part:
            name, value = part.strip().split("=", 1)
            jar[name] = value
    return jar


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        jar = cookies_of(self)
        if self.path == "/login":
            if jar.get("sid") in sessions:
                return self.reply(302, headers=[("Location", "/home")])
            token = secrets.token_hex(8)
            page = ('<html><body><form id="login" method="post" action="/login">'
                    '<input type="hidden" name="csrf" value="%s">'
                    '<input name="username"><input name="password" type="password"></form></body></html>' % token)
            return self.reply(200, page.encode(), [("Content-Type", "text/html"),
                                                   ("Set-Cookie", "csrf=%s; Path=/" % token)])
        if self.path == "/home":
            if jar.get("sid") in sessions:
                return self.reply(200, b"<html><body>Welcome home</body></html>", [("Content-Type", "text/html")])
            return self.reply(302, headers=[("Location", "/login")])
        if self.path == "/stats":
            return self.reply(200, json.dumps(stats).encode(), [("Content-Type", "application/json")])
        self.reply(404, b"not found")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        fields = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        jar = cookies_of(self)
        if self.path != "/login":
            return self.reply(404, b"not found")
        stats["posts"] += 1
        stats["user_agents"].append(self.headers.get("User-Agent", ""))
        if jar.get("device") in devices:
            stats["posts_with_device"] += 1
        if not fields.get("csrf") or fields.get("csrf") != jar.get("csrf"):
            return self.reply(403, b"CSRF check failed")
        if fields.get("username") != "alice" or fields.get("password") != PASSWORD:
            return self.reply(200, b"<html><body>Invalid password</body></html>", [("Content-Type", "text/html")])
        sid = secrets.token_hex(16)
        sessions.add(sid)
        headers = [("Location", "/home"), ("Set-Cookie", "sid=%s; Path=/; Max-Age=3600; HttpOnly" % sid)]
        if jar.get("device") not in devices:
            device = secrets.token_hex(16)
            devices.add(device)
            headers.append(("Set-Cookie", "device=%s; Path=/; Max-Age=31536000" % device))
        self.reply(303, b"", headers)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
