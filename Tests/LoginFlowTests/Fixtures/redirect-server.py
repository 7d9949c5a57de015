#!/usr/bin/python3
# A loopback server for redirect-rule tests: prints its port, then serves
#   /start307  -> 307 /echo            (sets hop1 cookie)
#   /start302  -> 302 /echo            (sets hop1 cookie)
#   /start303  -> 303 /echo            (sets hop1 cookie)
#   /cross     -> 307 http://other.test:PORT/echo   (sets hop1 cookie on this host)
#   /echo      -> 200 JSON: method, host, authorization, cookie, body
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        port = self.server.server_address[1]
        path = self.path.split("?")[0]
        targets = {"/start307": (307, "/echo"), "/start302": (302, "/echo"), "/start303": (303, "/echo"),
                   "/cross": (307, "http://other.test:%d/echo" % port)}
        if path in targets:
            status, location = targets[path]
            self.send_response(status)
            self.send_header("Location", location)
            self.send_header("Set-Cookie", "hop1=first-hop-value; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/echo":
            data = json.dumps({
                "method": self.command, "host": self.headers.get("Host"),
                "authorization": self.headers.get("Authorization"), "cookie": self.headers.get("Cookie"),
                "body": body,
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_PUT = answer


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
