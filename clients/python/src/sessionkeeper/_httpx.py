"""`sessionkeeper.HTTPXAuth`: the daemon's session for `httpx.Client` and `httpx.AsyncClient`."""

from __future__ import annotations

from typing import AsyncGenerator, Generator, Optional

import anyio.to_thread
import httpx

from ._client import DEFAULT_TIMEOUT, Client, Duration
from ._keeper import Served, SiteKeeper, merged_cookie_header


class HTTPXAuth(httpx.Auth):
    """An `httpx.Auth` for the daemon's site `site`: `httpx.Client(auth=HTTPXAuth("wiki"))`, or
    `httpx.AsyncClient(auth=...)`.

    As `sessionkeeper.Session` does for requests: each request carries the Cookie header and User-Agent the daemon
    serves for its URL, read as it leaves; a logged-out answer (the site's `egress.logged_out`, else a 401) is
    reported, a new session awaited (`wait`) and the request sent once more when `egress.retry` allows; Set-Cookie
    values the site answers are handed back when this user may manage the site. The async flow asks the daemon
    from a worker thread, so the event loop never blocks on it.

    httpx follows redirects outside an Auth: with `follow_redirects=True` the hops after the first carry the
    client's own cookies, not the daemon's. Each hop of the chain is still judged (a redirect to the login page, the
    URL it ends at); Set-Cookie values of every hop are handed back.
    """

    def __init__(self, site: str, *, socket: Optional[str] = None, wait: Duration = 30.0,
                 min_valid: Optional[Duration] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.site = site
        self.keeper = SiteKeeper(site, Client(socket, timeout), wait, min_valid)

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        url = str(request.url)
        own_cookie = request.headers.get("Cookie")
        served = self.keeper.served(url)
        _attach(request, served, own_cookie)
        replays = served.detail.replays(request.method)
        if replays:
            request.read()
        response = yield request
        self._hand_back(response)
        body = response.read() if served.detail.logged_out.body_contains is not None else None
        if not _logged_out(self.keeper, served, response, body):
            return
        if not replays:
            self.keeper.report(response.status_code)
            return
        renewed = self.keeper.renewed(url, served, response.status_code)
        if renewed is None:
            return
        _attach(request, renewed, own_cookie)
        response = yield request
        self._hand_back(response)

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        url = str(request.url)
        own_cookie = request.headers.get("Cookie")
        served = await anyio.to_thread.run_sync(self.keeper.served, url)
        _attach(request, served, own_cookie)
        replays = served.detail.replays(request.method)
        if replays:
            await request.aread()
        response = yield request
        await anyio.to_thread.run_sync(self._hand_back, response)
        body = await response.aread() if served.detail.logged_out.body_contains is not None else None
        if not _logged_out(self.keeper, served, response, body):
            return
        if not replays:
            await anyio.to_thread.run_sync(self.keeper.report, response.status_code)
            return
        renewed = await anyio.to_thread.run_sync(self.keeper.renewed, url, served, response.status_code)
        if renewed is None:
            return
        _attach(request, renewed, own_cookie)
        response = yield request
        await anyio.to_thread.run_sync(self._hand_back, response)

    def _hand_back(self, response: httpx.Response) -> None:
        for answer in [*response.history, response]:
            self.keeper.hand_back(str(answer.url), answer.headers.get_list("set-cookie"))


def _attach(request: httpx.Request, served: Served, own_cookie: Optional[str]) -> None:
    header = merged_cookie_header(served.cookie, own_cookie)
    if header:
        request.headers["Cookie"] = header
    elif "Cookie" in request.headers:
        del request.headers["Cookie"]
    if served.detail.user_agent:
        request.headers["User-Agent"] = served.detail.user_agent


def _logged_out(keeper: SiteKeeper, served: Served, response: httpx.Response, body: Optional[bytes]) -> bool:
    """Whether the answer, or a redirect httpx followed on the way to it, is logged out, each hop judged as the
    daemon judges one answer (only the last one's body is read)."""
    return any(keeper.is_logged_out(served, hop.status_code, str(hop.url), hop.headers.get("Location"),
                                    body if hop is response else None, hop.request.method,
                                    hop.headers.get_list("Content-Encoding"))
               for hop in [*response.history, response])
