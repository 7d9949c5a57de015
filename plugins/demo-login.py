#!/usr/bin/env python3
"""SessionKeeper plugin: log in to the bundled demo site and return the session cookies.

Protocol (docs/PLUGINS.md): one JSON object on stdin, one on stdout, messages on stderr (they go to
the daemon's log, redacted); plugins/lib/sessionkeeper_plugin.py does both ends. Used as a whole login
(`login: {plugin: demo-login.py}`) with `pass_credentials: true`; also works as a step plugin,
returning its cookies to the flow.

stdin:  {"protocol": 1, "site", "base_url", "step", "with": {"base_url"?, "username"?}, "vars", "cookies",
         "last_response", "credentials": {"username", "password"}}
stdout: {"protocol": 1, "cookies": [json cookie objects], "vars": {"user": ...}}
"""
import html.parser
import http.cookiejar
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ written into the plugins folder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
import sessionkeeper_plugin as sk  # noqa: E402


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


def main(request):
    base_url = request.option("base_url", kind=str) or request.base_url
    username = request.option("username", kind=str) or request.credentials.get("username")
    password = request.credentials.get("password")
    if not base_url:
        sk.fail("with.base_url is missing")
    if not username or password is None:
        sk.fail("credentials are missing (set pass_credentials: true)")

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    try:
        with opener.open(urllib.parse.urljoin(base_url, "/login"), timeout=20) as page:
            parser = _CSRFField()
            parser.feed(page.read().decode("utf-8", "replace"))
        if not parser.token:
            sk.fail("the login page has no csrf field")
        form = urllib.parse.urlencode({"username": username, "password": password, "csrf": parser.token})
        submit = urllib.request.Request(
            urllib.parse.urljoin(base_url, "/login"), data=form.encode(), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        try:
            opener.open(submit, timeout=20)
            sk.fail("the login was refused (no redirect after submitting the form)")
        except urllib.error.HTTPError as answer:
            if answer.code != 303:
                sk.fail(f"the login answered {answer.code}, expected 303")
    except (urllib.error.URLError, OSError) as problem:
        sk.fail(f"cannot reach the site: {problem}")

    cookies = [
        sk.cookie(cookie.name, cookie.value, cookie.domain, path=cookie.path, expires=cookie.expires,
                  host_only=not cookie.domain_specified, secure=cookie.secure,
                  http_only=cookie.has_nonstandard_attr("HttpOnly"))
        for cookie in jar
    ]
    if not any(cookie["name"] == "demo_session" for cookie in cookies):
        sk.fail("the site did not set demo_session")
    request.log(f"demo-login: logged in, {len(cookies)} cookies")
    return sk.answer(cookies=cookies, vars={"user": username})


if __name__ == "__main__":
    sk.run(main, public_options=("base_url",))
