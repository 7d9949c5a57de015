"""Loopback HTTP server for the jar interoperability tests.

Prints its port on the first line of stdout, then serves until killed:
  GET /set...  answers with the Set-Cookie headers given as repeated `c` query parameters
  GET anything else  answers with the request's Cookie header as the body (empty when none)
"""
import os

# Close every descriptor inherited from the test runner (other tests' pipe ends): holding them would keep
# those pipes open and make their readers wait for this server to exit.
os.closerange(3, 65536)

import http.server  # noqa: E402
import urllib.parse  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        body = b""
        self.send_response(200)
        if url.path.startswith("/set"):
            for value in urllib.parse.parse_qs(url.query).get("c", []):
                self.send_header("Set-Cookie", value)
        else:
            body = (self.headers.get("Cookie") or "").encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
