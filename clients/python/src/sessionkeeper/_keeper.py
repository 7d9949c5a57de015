"""What `Session` and `HTTPXAuth` share: the session the daemon serves for a URL, the judgement of a logged-out
answer, the wait for a fresh session, and the hand-back of Set-Cookie values."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

from ._client import Client, Duration, SiteDetail
from .errors import AccessDeniedError, SessionKeeperError

logger = logging.getLogger("sessionkeeper")

#: The longest a site's description (User-Agent, logged-out rule) is used without asking the daemon again, while the
#: cookies it serves stay the same. The User-Agent belongs to a session, so new cookies mean asking at once; the
#: rule changes with the site file, which the daemon itself takes up to 2 s to notice.
DETAIL_MAX_AGE = 1.0


@dataclass(frozen=True)
class Served:
    """What a request to one URL carries: the daemon's Cookie header for it and the site as the daemon describes
    it then (its User-Agent and logged-out rule)."""

    cookie: str
    detail: SiteDetail


class SiteKeeper:
    """One site's session as a client library uses it, read from the daemon for every request."""

    def __init__(self, site: str, client: Client, wait: Duration, min_valid: Optional[Duration]) -> None:
        self.site = site
        self.client = client
        self.wait = wait
        self.min_valid = min_valid
        # Cleared by the daemon's 403 to a hand-back: this user reads the site and may not manage it.
        self.hands_back = True
        # The last description read: (the Cookie header served with it, the description, when it was read).
        self._detail: Optional[Tuple[str, SiteDetail, float]] = None

    def served(self, url: str) -> Served:
        """The cookies for a request to `url` as the daemon serves them now (waiting up to `wait` for a login when
        it has no session fit to serve), and the site's description: read again when the cookies differ from the
        last ones served, or after DETAIL_MAX_AGE."""
        cookie: str = self.client.cookies(self.site, url, min_valid=self.min_valid, wait=self.wait)
        return Served(cookie, self._described(cookie))

    def _described(self, cookie: str) -> SiteDetail:
        now = time.monotonic()
        last = self._detail
        if last is not None and last[0] == cookie and now - last[2] < DETAIL_MAX_AGE:
            return last[1]
        detail = self.client.site(self.site)
        self._detail = (cookie, detail, now)
        return detail

    def is_logged_out(self, served: Served, status: int, url: str, location: Optional[str], body: Optional[bytes],
                      method: str, content_encoding: Sequence[str]) -> bool:
        """Whether one answer (see `LoggedOutRule.judge`) is logged out by the site's rule as the daemon hands it
        out; the reason is logged (a name, never a value)."""
        reason = served.detail.logged_out.judge(status, url, location, body, method, content_encoding)
        if reason is not None:
            logger.debug("site %s: a logged-out answer (%s, status %d)", self.site, reason, status)
        return reason is not None

    def renewed(self, url: str, failed: Served, status: int) -> Optional[Served]:
        """After a logged-out answer to a request to `url` carrying `failed`: reports it and waits for a session
        that is not `failed`. None when the daemon keeps serving `failed` (its check found the session alive)."""
        try:
            self.client.report(self.site, status)
        except SessionKeeperError as problem:
            # A site without a check cannot be judged by the daemon: ask for the login the answer calls for.
            if problem.code != "no_check":
                raise
            if self.client.cookies(self.site, url) == failed.cookie:
                self.client.refresh(self.site, wait=self.wait)
        cookie = self.client.renewed_cookie(self.site, url, failed.cookie, self.wait, self.min_valid)
        if cookie is None:
            return None
        return Served(cookie, self._described(cookie))

    def report(self, status: int) -> None:
        """Reports a logged-out answer to a request that is not sent again; a failure to report is logged, never
        raised (the caller has the site's answer)."""
        try:
            self.client.report(self.site, status)
        except SessionKeeperError as problem:
            logger.warning("site %s: a logged-out answer could not be reported (%s)", self.site, problem)

    def hand_back(self, url: str, values: Sequence[str]) -> None:
        """Gives the daemon the Set-Cookie values an answer from `url` carried, when this user may manage the site;
        never fails the caller's request."""
        if not values or not self.hands_back:
            return
        try:
            self.client.set_cookie(self.site, url, values)
        except AccessDeniedError:
            self.hands_back = False
        except SessionKeeperError as problem:
            logger.warning("site %s: the Set-Cookie values of an answer could not be handed back (%s)",
                           self.site, type(problem).__name__)


def merged_cookie_header(served: str, own: Optional[str]) -> str:
    """The daemon's cookies, then the request's own (its library's jar, an explicit header) whose names the
    daemon does not serve: for a name it serves, the daemon's value wins."""
    if not own:
        return served
    names = set(_names(served))
    kept: List[str] = [part for part in _parts(own) if part.split("=", 1)[0].strip() not in names]
    return "; ".join(([served] if served else []) + kept)


def _parts(header: str) -> Iterable[str]:
    return (part.strip() for part in header.split(";") if part.strip())


def _names(header: str) -> Iterable[str]:
    return (part.split("=", 1)[0].strip() for part in _parts(header))
