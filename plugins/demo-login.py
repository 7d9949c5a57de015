#!/usr/bin/env python3
"""SessionKeeper plugin: log in to the bundled demo site and return the session cookies.

Protocol (SPEC section 5): one JSON object on stdin, one on stdout, messages on stderr (they go to
the daemon's log, redacted). Used as a whole login (`login: {plugin: demo-login.py}`) with
`pass_credentials: true`; also works as a step plugin, returning its cookies to the flow.

stdin:  {"site", "step", "with": {"base_url", "username"}, "vars", "cookies", "last_response",
         "credentials": {"username", "password"}}
stdout: {"cookies": [json cookie objects], "vars": {"user": ...}, "error": null}
"""
import html.parser
import http.cookiejar
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone


class _CSRFField(html.parser.HTMLParser):
    """Finds <input name="csrf" value="..."> inside <form id="login">."""

    def __init__(self):
        super().__init__()
        self.in_form = False
        self.token = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.in_form = attrs.get("id") == "login"
        elif tag == "input" and self.in_form and attrs.get("name") == "csrf":
            self.token = attrs.get("value")

    def handle_endtag(self, tag):
        if tag == "form":
            self.in_form = False


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _rfc3339(timestamp):
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fail(message):
    json.dump({"error": message}, sys.stdout)
    sys.stdout.write("\n")
    return 0


def main():
    request = json.load(sys.stdin)
    options = request.get("with") or {}
    credentials = request.get("credentials") or {}
    base_url = options.get("base_url")
    username = options.get("username") or credentials.get("username")
    password = credentials.get("password")
    if not base_url:
        return _fail("with.base_url is missing")
    if not username or password is None:
        return _fail("credentials are missing (set pass_credentials: true)")

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    try:
        with opener.open(urllib.parse.urljoin(base_url, "/login"), timeout=20) as page:
            parser = _CSRFField()
            parser.feed(page.read().decode("utf-8", "replace"))
        if not parser.token:
            return _fail("the login page has no csrf field")
        form = urllib.parse.urlencode({"username": username, "password": password, "csrf": parser.token})
        submit = urllib.request.Request(
            urllib.parse.urljoin(base_url, "/login"), data=form.encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            opener.open(submit, timeout=20)
            return _fail("the login was refused (no redirect after submitting the form)")
        except urllib.error.HTTPError as answer:
            if answer.code != 303:
                return _fail(f"the login answered {answer.code}, expected 303")
    except (urllib.error.URLError, OSError) as problem:
        return _fail(f"cannot reach the site: {problem}")

    cookies = [
        {
            "name": cookie.name,
            "value": cookie.value,
            "domain": cookie.domain.lstrip("."),
            "host_only": not cookie.domain_specified,
            "path": cookie.path,
            "expires": _rfc3339(cookie.expires),
            "secure": cookie.secure,
            "http_only": cookie.has_nonstandard_attr("HttpOnly"),
            "same_site": None,
            "created": now,
            "last_access": now,
        }
        for cookie in jar
    ]
    if not any(cookie["name"] == "demo_session" for cookie in cookies):
        return _fail("the site did not set demo_session")
    print(f"demo-login: logged in as {username}, {len(cookies)} cookies", file=sys.stderr)
    json.dump({"cookies": cookies, "vars": {"user": username}, "error": None}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
