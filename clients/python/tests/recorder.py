"""A loopback HTTP server that records the headers of every request and answers what each test sets: the other
web server of some tests (cookies are not bound to a port, so the demo site's reach it too)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple


class Recorder:
    """`answers[path] = (status, headers, body)`; `requests` holds (method, path, headers) of each request."""

    def __init__(self) -> None:
        self.requests: List[Tuple[str, str, Dict[str, str]]] = []
        self.answers: Dict[str, Tuple[int, List[Tuple[str, str]], bytes]] = {}
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                recorder.requests.append((self.command, self.path, {k: v for k, v in self.headers.items()}))
                status, headers, body = recorder.answers.get(path, (200, [], b"ok"))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = handle_any

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def last(self, path: Optional[str] = None) -> Dict[str, str]:
        matching = [headers for _, p, headers in self.requests if path is None or p.split("?", 1)[0] == path]
        assert matching, f"no request to {path}"
        return matching[-1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
