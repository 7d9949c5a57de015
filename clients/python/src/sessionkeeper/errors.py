"""The exceptions of the client: each says what went wrong and what to do, and none holds a cookie value.

Every one is a `SessionKeeperError`. The daemon's own words (its JSON `error.message`, which names sites,
parameters and states, never a value) are kept in `message`, its machine-readable code in `code`.
"""

from __future__ import annotations

from typing import Optional


class SessionKeeperError(Exception):
    """Anything the client could not do. `site` is the site concerned (when one is), `status` the daemon's HTTP
    status (when it answered), `code` its error code (`unknown_site`, `no_session`, `timeout`...)."""

    def __init__(self, text: str, *, site: Optional[str] = None, status: Optional[int] = None,
                 code: Optional[str] = None, message: Optional[str] = None) -> None:
        super().__init__(text)
        self.site = site
        self.status = status
        self.code = code
        self.message = message


class ConfigError(SessionKeeperError):
    """The socket could not be located: no `socket=`, no `$SESSIONKEEPER_SOCKET`, and config.yaml missing or
    unreadable for `state_dir` / `socket.path`."""


class DaemonNotRunningError(SessionKeeperError):
    """Nothing listens on the socket (no socket file, or a stale one): start the daemon with `sessionkeeper run`."""


class UntrustedServerError(SessionKeeperError):
    """What listens at the socket runs as a user the client does not believe: neither root, this user, nor the
    daemon's user (the owner of config.yaml's `state_dir`, when that user owns the socket file). `uid` is the
    server's. Nothing was sent to it; check the socket path, and who runs there."""

    def __init__(self, text: str, *, uid: int) -> None:
        super().__init__(text)
        self.uid = uid


class DaemonError(SessionKeeperError):
    """The daemon was reached but the exchange failed: no answer within the timeout, a broken answer, the
    socket refused to this user, or a status the client does not expect."""


class SiteNotFoundError(SessionKeeperError):
    """404: the daemon has no such site, or this user may not read it (the daemon does not tell the two apart)."""


class AccessDeniedError(SessionKeeperError):
    """403: this user may not do that to the site (a reader asking what only a manager may)."""


class NoSessionError(SessionKeeperError):
    """503: the daemon has no session fit to serve (none yet, the last login failed, the site needs attention);
    its `message` says why."""


class WaitTimeoutError(NoSessionError):
    """504: the `wait` ran out before a login finished."""


class RequestRefusedError(SessionKeeperError):
    """400 or 409: the daemon refused the request (a bad parameter; a disabled site; a report for a site without
    a `check`; a login that cannot start)."""
