"""A site for the egress route's tests, on 127.0.0.1, printing its port first.

POST /login sets a new session cookie `sid` (a random value) of the account `tester`; every other path needs a
live `sid`, or answers 401. POST /_revoke ends every session; POST /_rotate_every_answer makes every answer to a
live session replace its `sid` by a new one of the same account (the old one ends). The paths:
  /echo           any method: JSON of the method, the raw target, the header fields and the body's length and sha256
  /big?size=N     N bytes (a repeating pattern) with Content-Length, its sha256 in X-Body-Sha256
  /upload         reads the body (Content-Length or chunked) as it comes; JSON of its length and sha256
  /set-cookie     200 with Set-Cookie `extra=...` and hop-by-hop fields the proxy must drop
  /redirect       302 to /echo?from=redirect on this site; /redirect-away 302 to another origin
  /always-401     401 whatever the session (no session needed)
  /me             JSON {"account": NAME} of the session's account
  /switch?to=NAME a new `sid` of the account NAME (the old session stays live): an account switch
  /rotate         a new `sid` of the same account, the old one ended: a rotation
  /hold           reads the body, then answers (JSON of its length) only once POST /_release came
  /_stats         JSON of the logins and the requests by `METHOD path` counted (no session needed)
"""
import hashlib, http.server, json, secrets, sys, threading

lock = threading.Lock()
sessions = {}  # sid -> account
rotate_every_answer = False
released = threading.Event()
logins = 0
requests = {}
PATTERN = bytes(range(256)) * 256  # 64 KiB


def pattern_digest(size):
    digest = hashlib.sha256()
    full, rest = divmod(size, len(PATTERN))
    for _ in range(full):
        digest.update(PATTERN)
    digest.update(PATTERN[:rest])
    return digest.hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def sid(self):
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "sid":
                return value
        return None

    def session(self):
        """The account of the request's live session, or None."""
        with lock:
            return sessions.get(self.sid())

    def new_sid(self, account, ending=None):
        value = secrets.token_hex(16)
        with lock:
            sessions[value] = account
            if ending is not None:
                sessions.pop(ending, None)
        self.extra_fields.append(("Set-Cookie", "sid=%s; Path=/; HttpOnly" % value))

    def read_body(self, digest=None):
        count = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    part = self.rfile.read(min(left, 1 << 16))
                    if digest:
                        digest.update(part)
                    count += len(part)
                    left -= len(part)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left:
                part = self.rfile.read(min(left, 1 << 16))
                if not part:
                    break
                if digest:
                    digest.update(part)
                count += len(part)
                left -= len(part)
        return count

    def reply(self, status, body=b"", fields=()):
        self.send_response(status)
        for name, value in list(fields) + self.extra_fields:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def json(self, status, value, fields=()):
        self.reply(status, json.dumps(value).encode(), [("Content-Type", "application/json")] + list(fields))

    def handle_any(self):
        global logins, rotate_every_answer
        self.extra_fields = []
        path = self.path.split("?")[0]
        with lock:
            key = self.command + " " + path
            requests[key] = requests.get(key, 0) + 1
        if path == "/login" and self.command == "POST":
            self.read_body()
            value = secrets.token_hex(16)
            with lock:
                sessions[value] = "tester"
                logins += 1
            return self.reply(200, b"welcome", [("Set-Cookie", "sid=%s; Path=/; HttpOnly" % value)])
        if path == "/_revoke":
            self.read_body()
            with lock:
                sessions.clear()
            return self.json(200, {"revoked": True})
        if path == "/_rotate_every_answer":
            self.read_body()
            with lock:
                rotate_every_answer = True
            return self.json(200, {"rotating": True})
        if path == "/_release":
            self.read_body()
            released.set()
            return self.json(200, {"released": True})
        if path == "/always-401":
            self.read_body()
            return self.json(401, {"error": "this page answers 401 to every session"})
        if path == "/_stats":
            with lock:
                return self.json(200, {"logins": logins, "requests": requests})
        account = self.session()
        if account is None:
            self.read_body()
            return self.json(401, {"error": "log in first"})
        if path == "/switch":
            self.read_body()
            self.new_sid(self.path.split("to=")[1])
            return self.json(200, {"switched": True})
        if path == "/rotate" or rotate_every_answer:
            self.new_sid(account, ending=self.sid())
        if path == "/rotate":
            self.read_body()
            return self.json(200, {"rotated": True})
        if path == "/me":
            self.read_body()
            return self.json(200, {"account": account})
        if path == "/echo":
            digest = hashlib.sha256()
            length = self.read_body(digest)
            fields = [[name, value] for name, value in self.headers.items()]
            return self.json(200, {"method": self.command, "target": self.path, "headers": fields,
                                   "length": length, "sha256": digest.hexdigest()})
        if path == "/hold":
            length = self.read_body()
            released.wait(60)
            return self.json(200, {"length": length})
        if path == "/upload":
            digest = hashlib.sha256()
            length = self.read_body(digest)
            return self.json(200, {"length": length, "sha256": digest.hexdigest()})
        self.read_body()
        if path == "/big":
            size = int(self.path.split("size=")[1])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("X-Body-Sha256", pattern_digest(size))
            self.end_headers()
            left = size
            while left:
                part = PATTERN[:min(left, len(PATTERN))]
                self.wfile.write(part)
                left -= len(part)
            return
        if path == "/set-cookie":
            return self.reply(200, b"cookie set", [
                ("Set-Cookie", "extra=%s; Path=/" % secrets.token_hex(16)),
                ("Keep-Alive", "timeout=5"), ("X-Hop", "1"), ("Connection", "X-Hop"), ("X-Kept", "yes")])
        if path == "/redirect":
            port = self.server.server_address[1]
            return self.reply(302, b"", [("Location", "http://127.0.0.1:%d/echo?from=redirect" % port)])
        if path == "/redirect-close":
            # As Django's runserver answers a logged-out client: an empty 302, and the connection closed after it.
            self.close_connection = True
            return self.reply(302, b"", [("Location", "/accounts/login/?next=/private/"), ("Connection", "close")])
        if path == "/redirect-away":
            return self.reply(302, b"", [("Location", "http://example.invalid/elsewhere")])
        return self.json(404, {"error": "no such path"})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
