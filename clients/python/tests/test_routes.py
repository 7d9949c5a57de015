"""Every request the client can make names one of the daemon's routes: its method, path pattern and query
parameters, as `docs/socket-routes.json` describes the table (written from Sources/SocketRoutes by the Swift tests,
which fail when the file and the table differ). The client's requests go over a real Unix socket to a server that
records each one and answers what the route would."""

from __future__ import annotations

import json
import os
import re
import socketserver
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Dict, Iterator, List, Tuple
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest

from sessionkeeper import Client

from conftest import ROOT

TABLE_FILE = os.path.join(ROOT, "docs", "socket-routes.json")


def load_routes() -> List[Dict[str, Any]]:
    with open(TABLE_FILE, encoding="utf-8") as file:
        routes: List[Dict[str, Any]] = json.load(file)["routes"]
    return routes


def pattern_regex(pattern: str) -> "re.Pattern[str]":
    """A route's pattern as the server matches it: `{name}` one non-empty segment, a last `/**` any rest."""
    regex = ""
    for part in pattern.split("/")[1:]:
        if part == "**":
            regex += "(?:/.*)?"
        elif part == "{name}":
            regex += "/(?P<name>[^/]+)"
        else:
            regex += "/" + re.escape(part)
    return re.compile(regex)


class Recorded:
    """(method, path, query pairs) of each request the server received."""

    def __init__(self) -> None:
        self.requests: List[Tuple[str, str, List[Tuple[str, str]]]] = []


@pytest.fixture
def daemon() -> Iterator[Tuple[str, Recorded]]:
    """A server on a Unix socket that records each request and answers as the route's daemon would (JSON, the
    cookies' text, or an event stream that ends at once)."""
    recorded = Recorded()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def address_string(self) -> str:
            return "socket"

        def handle_any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            parts = urlsplit(self.path)
            query = parse_qsl(parts.query, keep_blank_values=True)
            recorded.requests.append((self.command, parts.path, query))
            content_type, body = "application/json", json.dumps({
                "status": "checking", "sites": [], "name": "demo", "state": "valid", "accepted": 1, "rejected": 0,
            }).encode()
            if parts.path.endswith("/cookies"):
                given = dict(query).get("format", "header")
                content_type = "text/plain"
                body = {"json": b"[]", "playwright": b'{"cookies": [], "origins": []}'}.get(given, b"sid=fresh\n")
            if parts.path == "/v1/events":
                content_type, body = "text/event-stream", b": subscribed\n\n"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = handle_any

        def log_message(self, *_: object) -> None:
            pass

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    folder = tempfile.mkdtemp(prefix="sk-routes-")
    path = os.path.join(folder, "daemon.sock")
    server = Server(path, Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield path, recorded
    finally:
        server.shutdown()
        server.server_close()
        os.unlink(path)
        os.rmdir(folder)


#: Each public method of Client, called with every argument that changes its request.
CALLS = {
    "health": lambda c: c.health(),
    "status": lambda c: c.status(),
    "site": lambda c: c.site("demo"),
    "cookies": lambda c: [c.cookies("demo"), c.cookies("demo", "https://a.example/p?q=1", "json", min_valid=600, wait="2s")],
    "storage_state": lambda c: c.storage_state("demo", "https://a.example/", min_valid="10m", wait=1.5),
    "report": lambda c: [c.report("demo"), c.report("demo", 401)],
    "refresh": lambda c: [c.refresh("demo"), c.refresh("demo", wait=3)],
    "set_cookie": lambda c: c.set_cookie("demo", "https://a.example/x?y=1", ["sid=1; Path=/"]),
    "events": lambda c: list(c.events(timeout=5)),
    "renewed_cookie": lambda c: c.renewed_cookie("demo", "https://a.example/", "sid=stale", wait=1),
}


def test_every_method_of_the_client_is_called_here():
    public = {name for name in dir(Client) if not name.startswith("_") and callable(getattr(Client, name))}
    assert public - {"close"} == set(CALLS), "a new Client method needs its call in CALLS"


@pytest.mark.parametrize("method", sorted(CALLS))
def test_each_request_names_a_route_with_its_parameters(daemon, method):
    path, recorded = daemon
    client = Client(socket=path)
    try:
        CALLS[method](client)
    finally:
        client.close()
    assert recorded.requests, f"Client.{method} sent no request"
    routes = load_routes()
    for verb, target, query in recorded.requests:
        matched = [route for route in routes if pattern_regex(route["pattern"]).fullmatch(target)]
        assert matched, f"Client.{method}: {verb} {target} is no route of {TABLE_FILE}"
        route = matched[0]
        assert verb in route["methods"], f"Client.{method}: {route['pattern']} takes {route['methods']}, not {verb}"
        names = [name for name, _ in query]
        unknown = set(names) - set(route["parameters"])
        assert not unknown, f"Client.{method}: {route['pattern']} takes no parameter {sorted(unknown)}"
        assert len(names) == len(set(names)), f"Client.{method}: a parameter given twice in {target}"
        site = pattern_regex(route["pattern"]).fullmatch(target).groupdict().get("name")  # type: ignore[union-attr]
        if site is not None:
            assert unquote(site) == "demo"

