"""SessionKeeper's Python client: the sessions a local `sessionkeeper run` keeps alive, used from Python.

    import sessionkeeper
    s = sessionkeeper.Session("wiki")               # a requests.Session carrying the site's session
    r = s.get("https://wiki.example.com/api/me")
    sessionkeeper.cookies("wiki", url="https://wiki.example.com/")   # the Cookie header value
    sessionkeeper.storage_state("wiki")             # Playwright: browser.new_context(storage_state=...)
    httpx.Client(auth=sessionkeeper.HTTPXAuth("wiki"))

The daemon is reached over its Unix socket, found as the CLI finds it (`socket=`, `$SESSIONKEEPER_SOCKET`,
config.yaml). Every failure is a `SessionKeeperError` saying what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ._client import (Client, CookiesEvent, Duration, Event, EventStream, LoggedOutRule, SiteDetail, SiteStatus,
                      StateEvent)
from ._requests import Session
from .errors import (AccessDeniedError, ConfigError, DaemonError, DaemonNotRunningError, NoSessionError,
                     RequestRefusedError, SessionKeeperError, SiteNotFoundError, UntrustedServerError, WaitTimeoutError)

if TYPE_CHECKING:
    from ._httpx import HTTPXAuth

__version__ = "0.1.0"

__all__ = [
    "AccessDeniedError", "Client", "ConfigError", "CookiesEvent", "DaemonError", "DaemonNotRunningError", "Duration",
    "Event", "EventStream", "HTTPXAuth", "LoggedOutRule", "NoSessionError", "RequestRefusedError", "Session",
    "SessionKeeperError", "SiteDetail", "SiteNotFoundError", "SiteStatus", "StateEvent", "UntrustedServerError",
    "WaitTimeoutError",
    "cookies", "events", "site", "status", "storage_state",
]


def cookies(site: str, url: Optional[str] = None, format: str = "header", *, min_valid: Optional[Duration] = None,
            wait: Optional[Duration] = None, socket: Optional[str] = None) -> Any:
    """The site's cookies in `format` (SPEC section 4: `header`, `json`, `netscape`, `set-cookie`, `playwright`);
    with `url`, exactly those a request to it carries. Text for `header` (no line end), `netscape` and
    `set-cookie`; a list for `json`; a dict for `playwright`. `min_valid` and `wait` as on the socket route."""
    return Client(socket).cookies(site, url, format, min_valid=min_valid, wait=wait)


def storage_state(site: str, url: Optional[str] = None, *, min_valid: Optional[Duration] = None,
                  wait: Optional[Duration] = None, socket: Optional[str] = None) -> Dict[str, Any]:
    """Playwright's storageState for the site's session, localStorage origins included when the session has
    them: `browser.new_context(storage_state=sessionkeeper.storage_state("wiki"))`."""
    return Client(socket).storage_state(site, url, min_valid=min_valid, wait=wait)


def status(*, socket: Optional[str] = None) -> List[SiteStatus]:
    """Every site this user may see, with its state, expiry, last login, next refresh and last error."""
    return Client(socket).status()


def site(name: str, *, socket: Optional[str] = None) -> SiteDetail:
    """One site: its status, its cookies' names (never values), its User-Agent and its logged-out rule."""
    return Client(socket).site(name)


def events(*, socket: Optional[str] = None, timeout: Optional[float] = None) -> EventStream:
    """The daemon's events as they come (`StateEvent`, `CookiesEvent`), for `for event in ...:`; close the stream
    (or use it in a `with` block) to stop."""
    return Client(socket).events(timeout=timeout)


def __getattr__(name: str) -> Any:
    # httpx is optional: HTTPXAuth is imported when first asked for.
    if name == "HTTPXAuth":
        try:
            from ._httpx import HTTPXAuth
        except ImportError as problem:
            raise ImportError(
                f"sessionkeeper.HTTPXAuth needs httpx ({problem}); install it: pip install 'sessionkeeper[httpx]'"
            ) from None
        globals()["HTTPXAuth"] = HTTPXAuth
        return HTTPXAuth
    raise AttributeError(f"module 'sessionkeeper' has no attribute '{name}'")
