"""The pure parts: the logged-out rule as the daemon hands it out, the merged Cookie header, what of a URL the
daemon is told, durations."""

from __future__ import annotations

import datetime

import pytest

from sessionkeeper import LoggedOutRule, SiteDetail
from sessionkeeper._client import cookie_url, duration_seconds, duration_text
from sessionkeeper._keeper import merged_cookie_header


def detail(egress=None) -> SiteDetail:
    data = {"name": "wiki", "state": "valid", "cookies": ["sid"], "user_agent": "UA/1"}
    if egress is not None:
        data["egress"] = egress
    return SiteDetail.from_json(data)


PAGE = "https://wiki.example.com/api/pages?id=7"


def test_without_a_rule_a_401_is_logged_out():
    rule = detail().logged_out
    assert rule.judge(401, PAGE, body=b"") == "status"
    assert rule.judge(403, PAGE, "https://wiki.example.com/login", b"Please sign in") is None
    assert detail().retry == "idempotent"


def test_a_rule_is_any_one_of_its_parts():
    rule = detail({"logged_out": {"status": [401, 419], "url_matches": "/login", "body_contains": "Please sign in"},
                   "retry": "always"}).logged_out
    assert rule.judge(419, PAGE) == "status"
    assert rule.judge(302, PAGE, "/login?next=/") == "location"
    assert rule.judge(200, "https://wiki.example.com/login?next=/") == "url"
    assert rule.judge(200, PAGE, body=b"<p>Please sign in</p>") == "body"
    assert rule.judge(200, PAGE, body=b"Welcome") is None
    assert rule.judge(200, PAGE) is None, "an unread body is not judged"


def test_a_rule_without_status_does_not_count_401():
    rule = detail({"logged_out": {"url_matches": "/signin"}}).logged_out
    assert rule.judge(401, PAGE) is None
    assert rule.judge(303, "http://x/home", "http://x/signin") == "location"


def test_the_default_rule_knows_the_login_page_and_the_check():
    # What the daemon hands out for a site with no egress.logged_out (SPEC section 10's default).
    rule = detail({"logged_out": {"status": [401], "url_matches": None, "body_contains": None,
                                  "login_paths": ["/accounts/login/"],
                                  "check": {"method": "GET", "path": "/api/me", "status": [200],
                                            "follows_redirects": False}}}).logged_out
    page = "https://app.example.com/private/"
    assert rule.judge(302, page, "/accounts/login/?next=/private/") == "login_redirect"
    assert rule.judge(302, page, "https://other.example.com/accounts/login/") is None, "another origin"
    assert rule.judge(302, page, "https://app.example.com/home/") is None
    assert rule.judge(200, "https://app.example.com/accounts/login/") is None, "the login page itself"
    assert rule.judge(403, "https://app.example.com/api/me") == "check"
    assert rule.judge(200, "https://app.example.com/api/me") is None
    assert rule.judge(403, "https://app.example.com/api/me", method="POST") is None, "not the check's request"
    assert rule.judge(403, page) is None, "not the check's URL"


def test_a_regex_python_cannot_read_judges_no_url(caplog):
    rule = LoggedOutRule.from_json({"status": [401], "url_matches": "(?<name"})
    assert rule.url_matches is None and rule.judge(401, PAGE) == "status"
    assert "url_matches" in caplog.text


@pytest.mark.parametrize("retry, method, replays", [
    ("idempotent", "GET", True), ("idempotent", "DELETE", True), ("idempotent", "POST", False),
    ("always", "POST", True), ("never", "GET", False), ("bogus", "PATCH", False),
])
def test_retry(retry, method, replays):
    assert detail({"retry": retry}).replays(method) is replays


def test_merged_cookie_header():
    assert merged_cookie_header("sid=new", None) == "sid=new"
    assert merged_cookie_header("sid=new; a=1", "sid=old; mine=2") == "sid=new; a=1; mine=2"
    assert merged_cookie_header("", "mine=2") == "mine=2"
    assert merged_cookie_header("", None) == ""


def test_the_daemon_is_told_no_query_fragment_or_password():
    assert cookie_url("https://user:pw@Wiki.example.com:8443/a/b?token=x#frag") == "https://wiki.example.com:8443/a/b"
    assert cookie_url("http://[::1]:80/") == "http://[::1]:80/"
    assert cookie_url("http://example.com") == "http://example.com/"


def test_durations():
    assert duration_text(1.5) == "1500ms" and duration_text(datetime.timedelta(minutes=2)) == "120000ms"
    assert duration_text("10m") == "10m" and duration_text(None) is None
    assert duration_seconds("1m30s") == 90 and duration_seconds("250ms") == 0.25
    with pytest.raises(ValueError):
        duration_seconds("soon")
    with pytest.raises(ValueError):
        duration_text(-1)
