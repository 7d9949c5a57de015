"""`sessionkeeper.Session`: a `requests.Session` that sends the daemon's session with every request."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Union

import requests
from requests.adapters import BaseAdapter

from ._client import DEFAULT_TIMEOUT, Client, Duration
from ._keeper import Served, SiteKeeper, merged_cookie_header


class Session(requests.Session):
    """A `requests.Session` for the daemon's site `site`.

    Every request on the wire (each hop of a redirect too) carries the Cookie header the daemon serves for its URL
    and the User-Agent the session was made with, both read from the daemon as the request leaves, so a renewed
    session is used at once. Cookies of the session's own jar or an explicit `Cookie` header go along unless the
    daemon serves a cookie of the same name.

    An answer the site's `egress.logged_out` rule calls logged out (a 401 when the site says nothing) is reported
    to the daemon, which runs the site's check and logs in again if needed; the request is then sent once more
    with the new session when the site's `egress.retry` allows (GET, HEAD, OPTIONS, PUT, DELETE by default) and its
    body can be sent again. `wait` bounds every wait for a session: for the new one, and for a first one when the
    daemon has none fit to serve (NoSessionError when none comes: the site needs attention, its logins fail). With
    `min_valid`, every request asks for a session valid that much longer and waits for the login that needs.

    Set-Cookie headers the site answers are handed back to the daemon, so a site that rotates cookies on use stays
    in sync; when the daemon says this user only reads the site (403), hand-backs stop silently.

    `socket`: the daemon's socket (default: found as the CLI finds it); `timeout`: the longest exchange with the
    daemon in seconds, any wait on top.
    """

    def __init__(self, site: str, *, socket: Optional[str] = None, wait: Duration = 30.0,
                 min_valid: Optional[Duration] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__()
        self.site = site
        self.keeper = SiteKeeper(site, Client(socket, timeout), wait, min_valid)

    def get_adapter(self, url: str) -> BaseAdapter:
        return _KeptAdapter(super().get_adapter(url), self.keeper)


class _KeptAdapter(BaseAdapter):
    """Wraps the adapter requests chose for a URL: attaches the session before each send, hands back what the
    answer sets, and deals with a logged-out answer."""

    def __init__(self, inner: BaseAdapter, keeper: SiteKeeper) -> None:
        super().__init__()
        self.inner = inner
        self.keeper = keeper

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Union[bool, str] = True, cert: Any = None,
             proxies: Optional[Mapping[str, str]] = None) -> requests.Response:
        kwargs: Dict[str, Any] = dict(timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        url = request.url or ""
        own_cookie = request.headers.get("Cookie")
        served = self.keeper.served(url)
        _attach(request, served, own_cookie)
        response = self.inner.send(request, stream=stream, **kwargs)
        self.keeper.hand_back(url, _set_cookie_values(response))
        rule = served.detail.logged_out
        body = response.content if rule.body_contains is not None and not stream else None
        if not self.keeper.is_logged_out(served, response.status_code, url, response.headers.get("Location"), body,
                                         request.method or "GET", _content_encoding(response)):
            return response
        if not (served.detail.replays(request.method or "GET") and _replayable(request.body)):
            self.keeper.report(response.status_code)
            return response
        renewed = self.keeper.renewed(url, served, response.status_code)
        if renewed is None:
            return response
        if not stream:
            _ = response.content
        response.close()
        again = request.copy()
        _attach(again, renewed, own_cookie)
        response = self.inner.send(again, stream=stream, **kwargs)
        self.keeper.hand_back(url, _set_cookie_values(response))
        return response

    def close(self) -> None:
        self.inner.close()


def _attach(request: requests.PreparedRequest, served: Served, own_cookie: Optional[str]) -> None:
    header = merged_cookie_header(served.cookie, own_cookie)
    if header:
        request.headers["Cookie"] = header
    elif "Cookie" in request.headers:
        del request.headers["Cookie"]
    if served.detail.user_agent:
        request.headers["User-Agent"] = served.detail.user_agent


def _set_cookie_values(response: requests.Response) -> List[str]:
    """Each Set-Cookie header of the answer (from urllib3's header list: requests joins them with commas)."""
    headers = getattr(response.raw, "headers", None)
    getlist = getattr(headers, "getlist", None)
    return list(getlist("Set-Cookie")) if getlist is not None else []


def _content_encoding(response: requests.Response) -> List[str]:
    """The answer's Content-Encoding values as the site sent them (requests decodes the body, the header stays)."""
    headers = getattr(response.raw, "headers", None)
    getlist = getattr(headers, "getlist", None)
    if getlist is not None:
        return list(getlist("Content-Encoding"))
    value = response.headers.get("Content-Encoding")
    return [value] if value else []


def _replayable(body: Any) -> bool:
    return body is None or isinstance(body, (bytes, str))
