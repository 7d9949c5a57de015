"""Helpers for SessionKeeper plugins written in Python (standard library only).

A plugin reads one JSON object on stdin and prints one JSON object on stdout (docs/PLUGINS.md). This
module does both ends and the error path, so a plugin is a function from a ``Request`` to an answer:

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
    import sessionkeeper_plugin as sk

    def main(request):
        token = request.option("token", required=True)
        return sk.answer(headers={"Authorization": "Bearer " + token})

    if __name__ == "__main__":
        sk.run(main)

What it guarantees:
- the answer is exactly one JSON object on stdout, carrying ``"protocol": 1``;
- ``sk.fail("...")`` and every unexpected exception become ``{"error": "..."}`` with exit status 0,
  so the step fails with that one sentence; an unexpected exception is reported by its type and
  message with every secret of the request masked, and never with a traceback (whose frames may
  hold secrets);
- ``request.log("...")`` writes one line to stderr (the daemon's log) with every credential, cookie
  value, variable and ``with`` value masked, so a message can name what it did without leaking what
  it used. ``with`` values are masked because templates may have put a credential into any of them;
  ``run(main, public_options=("url",))`` names the options whose values are safe to show.
"""
import json
import re
import sys
from datetime import datetime, timezone

#: The version of the stdin/stdout protocol this module speaks (docs/PLUGINS.md, "Versions").
PROTOCOL = 1

#: What a masked value is replaced with, as SessionKeeper's own masking does.
MASK = "•••"

#: Values shorter than this are not masked (a cookie "lang=en" carries no secret, and masking every
#: "en" would make messages unreadable); credentials are masked whatever their length.
MINIMUM_MASKED_LENGTH = 4

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class PluginError(Exception):
    """A failure to report as the answer's ``error``: the message is shown to the user as it is, so it
    must never hold a secret."""


def fail(message):
    """Stops the plugin with ``{"error": message}``."""
    raise PluginError(message)


class Request:
    """The JSON object SessionKeeper wrote on stdin, with accessors that check types."""

    def __init__(self, document, public_options=()):
        if not isinstance(document, dict):
            fail("stdin is not a JSON object")
        self.document = document
        self.protocol = document.get("protocol", PROTOCOL)
        self.site = document.get("site") or ""
        self.step = document.get("step") or ""
        self.base_url = document.get("base_url")
        self.options = document.get("with") or {}
        self.vars = document.get("vars") or {}
        self.cookies = document.get("cookies") or []
        self.last_response = document.get("last_response")
        self.credentials = document.get("credentials") or {}
        #: The site's transport settings (proxy, resolve, ca_file, client_cert, insecure); empty from an older engine.
        self.http = document.get("http") or {}
        self._secrets = set()
        for value in self.credentials.values():
            if isinstance(value, str) and value:
                self._secrets.add(value)
        for value in list(self.vars.values()) + [c.get("value") for c in self.cookies if isinstance(c, dict)]:
            self._add_value(value)
        for name, value in self.options.items():
            if name not in public_options:
                self._add_nested(value)

    def _add_value(self, value):
        if isinstance(value, str) and len(value) >= MINIMUM_MASKED_LENGTH:
            self._secrets.add(value)

    def _add_nested(self, value):
        if isinstance(value, dict):
            for item in value.values():
                self._add_nested(item)
        elif isinstance(value, list):
            for item in value:
                self._add_nested(item)
        else:
            self._add_value(value)

    def add_secret(self, value):
        """Masks ``value``, whatever its length, in every later ``log`` line and error (a token the plugin
        obtained)."""
        if isinstance(value, str) and value:
            self._secrets.add(value)

    def add_value(self, value):
        """Masks ``value`` from ``MINIMUM_MASKED_LENGTH`` characters up, as cookie values are masked (a
        cookie ``seen=1`` carries no secret, and masking every "1" would garble the log)."""
        self._add_value(value)

    def mask(self, text):
        """``text`` with every known secret replaced by ``MASK``, longest first."""
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return text

    def log(self, message):
        """One line on stderr for the daemon's log, secrets masked."""
        line = self.mask(str(message)).replace("\r", " ").replace("\n", " ")
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def option(self, name, default=None, required=False, kind=None):
        """``with.NAME``; ``kind`` (str, dict, list, bool, int) is checked when given."""
        value = self.options.get(name)
        if value is None:
            if required:
                fail(f"with.{name} is missing")
            return default
        if kind is not None and not (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
            fail(f"with.{name} must be {_kind_name(kind)}")
        return value

    def duration(self, name, default):
        """``with.NAME`` as seconds: a number of seconds or a duration such as ``500ms``, ``30s``, ``2m``."""
        value = self.options.get(name)
        if value is None:
            return default
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
        match = _DURATION.match(value) if isinstance(value, str) else None
        if not match or float(match.group(1)) <= 0:
            fail(f"with.{name} must be a duration such as 30s or 2m")
        return float(match.group(1)) * _UNITS[match.group(2)]

    def credential(self, name):
        """``credentials.NAME`` (the step needs ``pass_credentials: true``)."""
        if name not in self.credentials:
            fail(f"credential '{name}' was not passed (set pass_credentials: true on the step)")
        return self.credentials[name]


def _kind_name(kind):
    return {str: "a string", dict: "a mapping", list: "a list", bool: "true or false", int: "a whole number"}.get(kind, kind.__name__)


def rfc3339(moment, fractional=False):
    """A datetime, or seconds since 1970, as RFC 3339 UTC text (the json cookie format's times)."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if fractional else "%Y-%m-%dT%H:%M:%SZ")


def cookie(name, value, domain, path="/", expires=None, host_only=True, secure=False, http_only=False, same_site=None):
    """One cookie in SessionKeeper's ``json`` cookie format. ``domain`` without a leading dot (one is
    dropped, and then the cookie is a domain cookie); ``expires`` a datetime, seconds since 1970, or
    None for a session cookie; ``same_site`` "strict", "lax", "none" or None."""
    if domain.startswith("."):
        domain, host_only = domain[1:], False
    now = rfc3339(datetime.now(timezone.utc), fractional=True)
    return {
        "name": name,
        "value": value,
        "domain": domain,
        "host_only": bool(host_only),
        "path": path or "/",
        "expires": rfc3339(expires),
        "secure": bool(secure),
        "http_only": bool(http_only),
        "same_site": same_site.lower() if same_site else None,
        "created": now,
        "last_access": now,
    }


def answer(vars=None, cookies=None, set_cookie=None, headers=None, user_agent=None, origins=None):
    """An answer object with only the keys given (every key of the protocol is optional)."""
    document = {"protocol": PROTOCOL}
    for key, value in (("vars", vars), ("cookies", cookies), ("set_cookie", set_cookie), ("headers", headers),
                       ("user_agent", user_agent), ("origins", origins)):
        if value is not None:
            document[key] = value
    return document


def _write(document):
    sys.stdout.write(json.dumps(document, ensure_ascii=False))
    sys.stdout.write("\n")
    sys.stdout.flush()


def run(handler, public_options=(), stdin=None):
    """Reads the request, calls ``handler(request)``, writes its answer (a dict, or None for an empty
    answer) or the error, and exits with status 0. ``public_options``: names of ``with`` options whose
    values ``log`` and errors may show (a URL, a selector); every other value is masked."""
    request = None
    try:
        text = (stdin or sys.stdin).read()
        try:
            document = json.loads(text)
        except ValueError:
            fail("stdin is not JSON")
        request = Request(document, public_options)
        if request.protocol != PROTOCOL:
            fail(f"SessionKeeper speaks plugin protocol {request.protocol}; this plugin speaks protocol {PROTOCOL}")
        result = handler(request)
        if result is None:
            result = {}
        if not isinstance(result, dict):
            fail("the plugin's handler returned no mapping")
        result.setdefault("protocol", PROTOCOL)
        _write(result)
    except PluginError as error:
        message = str(error)
        _write({"protocol": PROTOCOL, "error": request.mask(message) if request else message})
    except Exception as error:  # noqa: BLE001 - every failure must still be one JSON answer
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        _write({"protocol": PROTOCOL, "error": "unexpected " + (request.mask(detail) if request else type(error).__name__)})
    sys.exit(0)
