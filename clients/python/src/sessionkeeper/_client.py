"""The daemon's socket API (SPEC section 8) as Python calls: `Client`, the typed answers, and the logged-out rule."""

from __future__ import annotations

import datetime
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from . import _config, _transport
from .errors import (AccessDeniedError, DaemonError, NoSessionError, RequestRefusedError, SessionKeeperError,
                     SiteNotFoundError, WaitTimeoutError)

logger = logging.getLogger("sessionkeeper")

#: A duration for the daemon: seconds (int or float), a `datetime.timedelta`, or the config syntax (`"30s"`).
Duration = Union[int, float, datetime.timedelta, str]

#: How long one exchange with the daemon may take, on top of any `wait` it is asked to spend.
DEFAULT_TIMEOUT = 30.0


def duration_text(value: Optional[Duration]) -> Optional[str]:
    """A duration in the daemon's syntax (`1500ms`); strings pass as written (the daemon checks them)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    seconds = value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return f"{int(round(seconds * 1000))}ms"


def duration_seconds(value: Optional[Duration]) -> float:
    """A duration in seconds, for the client's own timeouts (the config syntax understood as the daemon does)."""
    if value is None:
        return 0.0
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, (int, float)):
        return float(value)
    total = 0.0
    rest = value.strip()
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    for number, unit in re.findall(r"([0-9.]+)([a-z]+)", rest):
        if unit not in units:
            raise ValueError(f"'{value}' is not a duration (like 500ms, 30s, 10m, 1h)")
        total += float(number) * units[unit]
    if not rest or re.sub(r"[0-9.]+[a-z]+", "", rest):
        raise ValueError(f"'{value}' is not a duration (like 500ms, 30s, 10m, 1h)")
    return total


def parse_time(text: Optional[str]) -> Optional[datetime.datetime]:
    """An RFC 3339 time of the daemon (UTC, `Z`) as an aware datetime; None stays None."""
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def cookie_url(url: str) -> str:
    """What the daemon needs of a request's URL to choose its cookies: scheme, host, port and path. The query,
    the fragment and any user:password are left out, so they never reach the daemon's socket or its logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path or "/", "", ""))


@dataclass(frozen=True)
class SiteStatus:
    """One site as `GET /v1/sites` shows it."""

    name: str
    #: `valid`, `logging-in`, `refreshing`, `waiting-for-person`, `failed`, `needs-attention` or `disabled`.
    state: str
    expires_at: Optional[datetime.datetime]
    last_login: Optional[datetime.datetime]
    next_refresh: Optional[datetime.datetime]
    last_error: Optional[str]

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SiteStatus":
        return cls(
            name=str(data.get("name", "")), state=str(data.get("state", "")),
            expires_at=parse_time(data.get("expires_at")), last_login=parse_time(data.get("last_login")),
            next_refresh=parse_time(data.get("next_refresh")), last_error=data.get("last_error"))


@dataclass(frozen=True)
class CheckShape:
    """The site's `check` as the daemon hands it out for the default logged-out rule: its method, its URL's path and
    query, and the statuses it accepts (none listed: any below 400)."""

    method: str
    path: str
    status: FrozenSet[int] = frozenset()
    follows_redirects: bool = True

    def accepts(self, status: int) -> bool:
        return status < 400 if not self.status else status in self.status

    @classmethod
    def from_json(cls, data: Any) -> Optional["CheckShape"]:
        if not isinstance(data, dict) or not isinstance(data.get("method"), str) or not isinstance(data.get("path"), str):
            return None
        raw = data.get("status")
        statuses = frozenset(s for s in raw if isinstance(s, int)) if isinstance(raw, list) else frozenset()
        return cls(method=data["method"], path=data["path"], status=statuses,
                   follows_redirects=data.get("follows_redirects") is not False)


def _path(url: str, with_query: bool) -> str:
    parts = urlsplit(url)
    path = parts.path or "/"
    return path + "?" + parts.query if with_query and parts.query else path


def _same_origin(one: str, other: str) -> bool:
    a, b = urlsplit(one), urlsplit(other)
    return (a.scheme.lower(), a.hostname, a.port) == (b.scheme.lower(), b.hostname, b.port)


def _inspectable(content_encoding: Sequence[str]) -> bool:
    """Whether a body is the text the site wrote: no Content-Encoding but `identity` (the daemon passes a coded body
    on as it is and cannot read it, so neither does the client, though its library may have decoded it)."""
    return all(part.strip().lower() == "identity" for value in content_encoding for part in value.split(","))


#: How much of a body `body_contains` looks at: the daemon's limit (SiteConfig's `LoggedOutRule.bodyPrefixLimit`).
BODY_PREFIX_LIMIT = 64 * 1024


@dataclass(frozen=True)
class LoggedOutRule:
    """How a logged-out answer looks (a site's `egress.logged_out`, SPEC section 10): any one of a status in
    `status`, a URL matching `url_matches`, a body containing `body_contains`. Without the site saying, the daemon's
    default: a 401, a redirect to the login page (`login_paths`), or the check's own request answered with a status
    the check does not accept (`check`).

    `judge` is the daemon's judge (`Egress.LoggedOutJudge`) in Python: both give every verdict of the shared cases in
    `Tests/EgressTests/Fixtures/logged-out-answers.json`. One difference remains: `url_matches` is read as a Python
    regular expression here and as an ICU one by the daemon; the two agree on the common syntax."""

    status: FrozenSet[int] = frozenset({401})
    url_matches: Optional["re.Pattern[str]"] = None
    body_contains: Optional[bytes] = None
    login_paths: FrozenSet[str] = frozenset()
    check: Optional[CheckShape] = None

    @classmethod
    def from_json(cls, data: Any) -> "LoggedOutRule":
        if not isinstance(data, dict):
            return cls()
        raw_status = data.get("status")
        if isinstance(raw_status, int):
            raw_status = [raw_status]
        statuses = frozenset(s for s in raw_status if isinstance(s, int)) if isinstance(raw_status, list) else frozenset()
        pattern = None
        if isinstance(data.get("url_matches"), str):
            try:
                pattern = re.compile(data["url_matches"])
            except re.error as problem:
                logger.warning("egress.logged_out.url_matches is not a Python regular expression (%s); "
                               "URLs are not judged by it", problem)
        body = data["body_contains"].encode("utf-8") if isinstance(data.get("body_contains"), str) else None
        raw_paths = data.get("login_paths")
        login_paths = frozenset(p for p in raw_paths if isinstance(p, str)) if isinstance(raw_paths, list) else frozenset()
        return cls(status=statuses, url_matches=pattern, body_contains=body or None, login_paths=login_paths,
                   check=CheckShape.from_json(data.get("check")))

    def judge(self, status: int, url: str, location: Optional[str] = None, body: Optional[bytes] = None,
              method: str = "GET", content_encoding: Sequence[str] = ()) -> Optional[str]:
        """Why one answer is logged out, as the daemon names it (`status`, `login_redirect`, `check`, `url`,
        `location`, `body`), or None when it is not. `url`: the URL that answered; `method`: its request's;
        `location`: the answer's Location header (only a redirect's counts, resolved against `url`); `body`: its
        bytes (None: not read, so not judged; only the first BODY_PREFIX_LIMIT are looked at); `content_encoding`:
        its Content-Encoding values (a coded body is not looked at)."""
        if status in self.status:
            return "status"
        redirect = 300 <= status < 400
        target = urljoin(url, location) if redirect and location else None
        if self.login_paths and target is not None and _same_origin(target, url) and _path(target, False) in self.login_paths:
            return "login_redirect"
        check = self.check
        if (check is not None and method == check.method and not check.accepts(status)
                and not (check.follows_redirects and redirect) and _path(url, True) == check.path):
            return "check"
        if self.url_matches is not None:
            if self.url_matches.search(url):
                return "url"
            if target is not None and self.url_matches.search(target):
                return "location"
        if (self.body_contains is not None and body is not None and _inspectable(content_encoding)
                and self.body_contains in body[:BODY_PREFIX_LIMIT]):
            return "body"
        return None


#: After a logged-out answer, which requests are sent once more (SPEC section 10's `egress.retry`).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass(frozen=True)
class SiteDetail:
    """One site as `GET /v1/sites/NAME` shows it: its status, its cookies' names, the User-Agent its session was
    made with, and how a logged-out answer looks."""

    status: SiteStatus
    cookie_names: Tuple[str, ...]
    user_agent: Optional[str]
    logged_out: LoggedOutRule = field(default_factory=LoggedOutRule)
    #: `idempotent` (the default), `never` or `always`.
    retry: str = "idempotent"

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SiteDetail":
        egress = data.get("egress")
        if not isinstance(egress, dict):
            egress = {}
        retry = egress.get("retry")
        user_agent = data.get("user_agent")
        return cls(
            status=SiteStatus.from_json(data),
            cookie_names=tuple(str(n) for n in data.get("cookies") or ()),
            user_agent=user_agent if isinstance(user_agent, str) and user_agent else None,
            logged_out=LoggedOutRule.from_json(egress["logged_out"]) if "logged_out" in egress else LoggedOutRule(),
            retry=retry if retry in ("idempotent", "never", "always") else "idempotent")

    def replays(self, method: str) -> bool:
        """Whether a request with `method` is sent once more after a logged-out answer."""
        if self.retry == "never":
            return False
        return self.retry == "always" or method.upper() in IDEMPOTENT_METHODS


@dataclass(frozen=True)
class Event:
    """One Server-Sent Event of `GET /v1/events` of a kind this client does not know: `kind` and its JSON."""

    id: Optional[str]
    kind: str
    site: str
    time: Optional[datetime.datetime]
    data: Dict[str, Any]


@dataclass(frozen=True)
class StateEvent(Event):
    """A site changed state (`from_state` to `to_state`)."""

    from_state: str = ""
    to_state: str = ""


@dataclass(frozen=True)
class CookiesEvent(Event):
    """A site's cookies changed: their names and the essential cookies' expiry (never a value)."""

    names: Tuple[str, ...] = ()
    expires_at: Optional[datetime.datetime] = None


class EventStream:
    """The events of `GET /v1/events`, as they come: iterate over it; `close()` (or a `with` block) ends it."""

    def __init__(self, connection: Any, response: Any) -> None:
        self._connection = connection
        self._response = response

    def __iter__(self) -> Iterator[Event]:
        event_id: Optional[str] = None
        kind = "message"
        data: List[str] = []
        try:
            while True:
                raw = self._response.readline(1 << 20)
                if not raw:
                    return
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    if data:
                        yield _event(event_id, kind, "\n".join(data))
                    event_id, kind, data = None, "message", []
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "id":
                    event_id = value
                elif name == "event":
                    kind = value
                elif name == "data":
                    data.append(value)
        except (OSError, ValueError) as problem:
            if self._connection.sock is None:
                return
            raise DaemonError(f"the event stream broke ({type(problem).__name__})") from None
        finally:
            self.close()

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def _event(event_id: Optional[str], kind: str, text: str) -> Event:
    try:
        data = json.loads(text)
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    site = str(data.get("site", ""))
    when = parse_time(data.get("time"))
    if kind == "state":
        return StateEvent(event_id, kind, site, when, data, from_state=str(data.get("from", "")),
                          to_state=str(data.get("to", "")))
    if kind == "cookies":
        return CookiesEvent(event_id, kind, site, when, data, names=tuple(str(n) for n in data.get("names") or ()),
                            expires_at=parse_time(data.get("expires_at")))
    return Event(event_id, kind, site, when, data)


class Client:
    """The daemon, reached over its socket (found as the CLI finds it unless `socket` is given). Every call is
    one request; connections are kept and reused. `timeout` bounds an exchange, any `wait` comes on top."""

    def __init__(self, socket: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.socket_path, daemon_uid = _config.locate_daemon(socket)
        self.timeout = timeout
        self._transport = _transport.transport_for(self.socket_path, daemon_uid)

    # MARK: the routes

    def health(self) -> Dict[str, Any]:
        """`GET /v1/health`: `{"status": "ok", "version": ..., "uptime_s": ...}`."""
        return self._json("GET", "/v1/health")

    def status(self) -> List[SiteStatus]:
        """Every site this user may see, as `sessionkeeper status` lists them."""
        return [SiteStatus.from_json(s) for s in self._json("GET", "/v1/sites").get("sites", [])]

    def site(self, site: str) -> SiteDetail:
        """One site: status, cookie names, User-Agent, logged-out rule."""
        return SiteDetail.from_json(self._json("GET", _site_path(site), site=site))

    def cookies(self, site: str, url: Optional[str] = None, format: str = "header", *,
                min_valid: Optional[Duration] = None, wait: Optional[Duration] = None) -> Any:
        """The site's cookies in `format` (`header`, `json`, `netscape`, `set-cookie`, `playwright`); with `url`,
        those a request to it carries. `header`, `netscape` and `set-cookie` are text (the header without its
        line end); `json` a list and `playwright` a dict. `min_valid`: only a session valid that much longer
        counts (else a login starts); `wait`: wait that long for a login to finish when no such session exists."""
        query = [("format", None if format == "header" else format), ("url", cookie_url(url) if url else None),
                 ("min_valid", duration_text(min_valid)), ("wait", duration_text(wait))]
        answer = self._call("GET", _site_path(site, "/cookies"), query, site=site, wait=wait)
        text = answer.body.decode("utf-8")
        if format in ("json", "playwright"):
            return json.loads(text)
        return text[:-1] if format == "header" and text.endswith("\n") else text

    def storage_state(self, site: str, url: Optional[str] = None, *, min_valid: Optional[Duration] = None,
                      wait: Optional[Duration] = None) -> Dict[str, Any]:
        """Playwright's storageState (`{"cookies": [...], "origins": [...]}`, localStorage included when the
        session has it) for `browser.new_context(storage_state=...)`."""
        state: Dict[str, Any] = self.cookies(site, url, "playwright", min_valid=min_valid, wait=wait)
        return state

    def report(self, site: str, status: Optional[int] = None) -> str:
        """Tells the daemon the served session failed (an answer `status`): it runs the site's check now and logs
        in if that says logged out. Returns `checking`, or `ignored` when another report came just before."""
        answer = self._json("POST", _site_path(site, "/report"), [("status", str(status) if status else None)], site=site)
        return str(answer.get("status", ""))

    def refresh(self, site: str, wait: Optional[Duration] = None) -> Optional[SiteStatus]:
        """Asks for a login now; with `wait`, returns the site's status once it ended."""
        answer = self._json("POST", _site_path(site, "/refresh"), [("wait", duration_text(wait))], site=site, wait=wait)
        return SiteStatus.from_json(answer) if wait is not None else None

    def set_cookie(self, site: str, url: str, values: Sequence[str]) -> Tuple[int, int]:
        """Hands back the Set-Cookie header values an answer from `url` carried; returns (accepted, rejected).
        Needs a user that may manage the site (AccessDeniedError otherwise)."""
        body = "".join(v.replace("\r", " ").replace("\n", " ") + "\n" for v in values).encode("utf-8")
        answer = self._json("POST", _site_path(site, "/set-cookie"), [("url", cookie_url(url))], site=site, body=body)
        return int(answer.get("accepted", 0)), int(answer.get("rejected", 0))

    def events(self, timeout: Optional[float] = None) -> EventStream:
        """The Server-Sent Events of `GET /v1/events`: one per site state or cookie change. `timeout`: the longest
        silence before a DaemonError (the daemon sends a heartbeat every 15 s; None waits for ever)."""
        connection, response = self._transport.open_stream("GET", "/v1/events", timeout=timeout)
        if response.status != 200:
            body = response.read(64 * 1024)
            connection.close()
            raise _answer_error(response.status, body, None)
        return EventStream(connection, response)

    def renewed_cookie(self, site: str, url: str, failed: str, wait: Duration,
                       min_valid: Optional[Duration] = None) -> Optional[str]:
        """After `report`: the Cookie header for `url` of a session other than `failed`, waiting up to `wait`;
        None when the daemon still serves `failed` then (its check found the session alive). The daemon serves
        the reported session until its check has spoken, so this asks again, a little later each time, until the
        header changes; once the check said logged out, the request waits for the login on the daemon's side."""
        deadline = time.monotonic() + duration_seconds(wait)
        pause = 0.01
        while True:
            remaining = deadline - time.monotonic()
            header: str = self.cookies(site, url, min_valid=min_valid, wait=max(remaining, 0.001))
            if header != failed:
                return header
            if remaining <= 0:
                return None
            time.sleep(min(pause, max(remaining, 0)))
            pause = min(pause * 1.5, 0.25)

    def close(self) -> None:
        """Closes the kept connections to this socket (they are shared by every Client of the process)."""
        self._transport.close()

    # MARK: the exchange

    def _json(self, method: str, path: str, query: Sequence[Tuple[str, Optional[str]]] = (), *,
              site: Optional[str] = None, wait: Optional[Duration] = None, body: Optional[bytes] = None) -> Dict[str, Any]:
        answer = self._call(method, path, query, site=site, wait=wait, body=body)
        try:
            data: Dict[str, Any] = json.loads(answer.body)
        except ValueError:
            raise DaemonError(f"the daemon's answer to {method} {path} is not JSON", site=site) from None
        if not isinstance(data, dict):
            raise DaemonError(f"the daemon's answer to {method} {path} is not a JSON object", site=site)
        return data

    def _call(self, method: str, path: str, query: Sequence[Tuple[str, Optional[str]]], *, site: Optional[str],
              wait: Optional[Duration] = None, body: Optional[bytes] = None) -> _transport.Answer:
        pairs = [f"{name}={quote(value, safe='')}" for name, value in query if value is not None]
        target = path + ("?" + "&".join(pairs) if pairs else "")
        headers = {"Content-Type": "text/plain; charset=utf-8"} if body is not None else None
        answer = self._transport.request(method, target, body=body, headers=headers,
                                         timeout=self.timeout + duration_seconds(wait))
        if 200 <= answer.status < 300:
            return answer
        raise _answer_error(answer.status, answer.body, site)


#: SPEC section 1: what a site's name may be.
SITE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def _site_path(site: str, rest: str = "") -> str:
    if not isinstance(site, str) or not SITE_NAME.fullmatch(site):
        raise SiteNotFoundError(
            f"{site!r} is not a site name: names are 1 to 63 lower-case letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (`sessionkeeper status` lists the sites you may see)", site=str(site))
    return "/v1/sites/" + site + rest


def _answer_error(status: int, body: bytes, site: Optional[str]) -> SessionKeeperError:
    """The daemon's `{"error": {"code", "message"}}` as the exception that says what to do."""
    code: Optional[str] = None
    message: Optional[str] = None
    try:
        error = json.loads(body).get("error", {})
        code = error["code"] if isinstance(error.get("code"), str) else None
        message = error["message"] if isinstance(error.get("message"), str) else None
    except (ValueError, AttributeError):
        pass
    detail = message or code or "no details"
    what = f"site '{site}'" if site else "the request"
    kind: "type[SessionKeeperError]"
    if status == 404 and (site is None or code == "not_found"):
        kind, text = DaemonError, f"the daemon has no such route: {detail}; is it an older version?"
    elif status == 404:
        kind, text = SiteNotFoundError, (f"the daemon has no site '{site}' that this user may read: {detail} "
                                         "(`sessionkeeper status` lists the sites you may see)")
    elif status == 403:
        kind, text = AccessDeniedError, f"the daemon refuses {what} to this user: {detail}"
    elif status == 503:
        kind, text = NoSessionError, f"no valid session for {what}: {detail}"
    elif status == 504:
        kind, text = WaitTimeoutError, f"{what}: the wait ran out before a login finished: {detail}"
    elif status in (400, 409):
        kind, text = RequestRefusedError, f"the daemon refused {what}: {detail}"
    else:
        kind, text = DaemonError, f"the daemon answered {status} for {what}: {detail}"
    return kind(text, site=site, status=status, code=code, message=message)
