"""`sessionkeeper.Session` against a real daemon and the demo site.

Cookie values are compared as booleans (`same = a == b; assert same`), so a failing assertion never prints one."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time

import pytest
import requests

import sessionkeeper
from conftest import ROOT, World, wait_for
from recorder import Recorder
from sessionkeeper._keeper import DETAIL_MAX_AGE


@pytest.fixture
def recorder():
    server = Recorder()
    yield server
    server.close()


def test_session_gets_api_me(world):
    with sessionkeeper.Session("demo", socket=world.socket) as session:
        response = session.get(world.url("/api/me"))
    assert response.status_code == 200
    assert response.json()["user"]["name"] == "alice"


def test_every_request_carries_the_served_cookies_and_user_agent(world, recorder):
    session = sessionkeeper.Session("demo", socket=world.socket)
    session.get(recorder.url("/first?token=query-secret"))
    headers = recorder.last("/first")
    served = sessionkeeper.cookies("demo", url=recorder.url("/first"), socket=world.socket)
    detail = sessionkeeper.site("demo", socket=world.socket)
    same_cookie = headers.get("Cookie") == served
    assert same_cookie, "the request does not carry the daemon's Cookie header for its URL"
    assert "demo_session" in detail.cookie_names
    assert detail.user_agent and detail.user_agent.startswith("SessionKeeper/")
    assert headers.get("User-Agent") == detail.user_agent


def test_own_cookies_go_along_and_the_daemons_win_by_name(world, recorder):
    session = sessionkeeper.Session("demo", socket=world.socket)
    session.cookies.set("mine", "1")
    session.get(recorder.url("/own"), cookies={"demo_session": "forged", "extra": "2"})
    sent = dict(part.split("=", 1) for part in recorder.last("/own")["Cookie"].split("; "))
    served = dict(part.split("=", 1) for part in
                  sessionkeeper.cookies("demo", url=recorder.url("/own"), socket=world.socket).split("; "))
    assert sent.get("mine") == "1" and sent.get("extra") == "2"
    daemons_value = sent.get("demo_session") == served["demo_session"]
    assert daemons_value, "the daemon's demo_session must replace the one the request gave"


def test_redirect_hops_each_carry_the_session(world):
    # /account answers 302 to the login page without a session: followed with the session it is the account page.
    session = sessionkeeper.Session("demo", socket=world.socket)
    response = session.get(world.url("/account"))
    assert response.status_code == 200 and "Welcome, alice" in response.text


def test_the_site_description_is_read_again_when_the_cookies_change(world):
    session = sessionkeeper.Session("demo", socket=world.socket)
    cookies_before = world.socket_requests("/v1/sites/{name}/cookies")
    before = world.socket_requests("/v1/sites/{name}")
    started = time.monotonic()
    for _ in range(20):
        assert session.get(world.url("/api/me")).status_code == 200
    elapsed = time.monotonic() - started
    assert world.socket_requests("/v1/sites/{name}/cookies") - cookies_before == 20, "the cookies are read per request"
    reads = world.socket_requests("/v1/sites/{name}") - before
    assert 1 <= reads <= math.ceil(elapsed / DETAIL_MAX_AGE) + 1
    sessionkeeper.Client(world.socket).refresh("demo", wait=30)
    before = world.socket_requests("/v1/sites/{name}")
    assert session.get(world.url("/api/me")).status_code == 200
    assert world.socket_requests("/v1/sites/{name}") - before == 1, "new cookies: the description is read at once"


def test_a_session_started_with_the_daemon_waits_for_the_first_login(world):
    world.stop_daemon()
    shutil.rmtree(os.path.join(world.work, "state"))
    world.start_daemon(until_valid=False)
    response = sessionkeeper.Session("demo", socket=world.socket).get(world.url("/api/me"))
    assert response.status_code == 200


def test_revoked_session_renewed_with_exactly_one_login(world):
    session = sessionkeeper.Session("demo", socket=world.socket)
    assert session.get(world.url("/api/me")).status_code == 200
    before = world.stats()["logins"]
    world.revoke_all()
    status, _ = world.demo_call("GET", "/api/me", {"Cookie": sessionkeeper.cookies("demo", socket=world.socket)})
    assert status == 401, "the demo site must have revoked the served session"

    response = session.get(world.url("/api/me"))
    assert response.status_code == 200
    assert response.json()["user"]["name"] == "alice"
    assert world.stats()["logins"] == before + 1
    assert session.get(world.url("/api/me")).status_code == 200
    assert world.stats()["logins"] == before + 1


def test_a_site_without_check_is_logged_in_again_once(tmp_path):
    with open(os.path.join(ROOT, "sites", "demo.yaml")) as handle:
        demo = handle.read().replace("http://127.0.0.1:8480", "BASE_URL")
    unchecked = re.sub(r"\ncheck:.*?\n(?=\S)", "\n", demo, flags=re.S)
    assert "check:" not in unchecked
    with World(extra_sites={"unchecked": unchecked}) as world:
        wait_for(lambda: world.site_state("unchecked") == "valid", 60, "the unchecked site's session")
        sessions = [sessionkeeper.Session("unchecked", socket=world.socket) for _ in range(3)]
        assert sessions[0].get(world.url("/api/me")).status_code == 200
        logins = world.stats()["logins"]
        world.revoke_all()
        assert [s.get(world.url("/api/me")).status_code for s in sessions] == [200, 200, 200]
        # demo and unchecked both lost their session: demo's is not used here, so one login, unchecked's.
        assert world.stats()["logins"] == logins + 1


def test_rotating_cookie_is_handed_back(world):
    session = sessionkeeper.Session("demo", socket=world.socket)
    before = sessionkeeper.cookies("demo", socket=world.socket)
    logins = world.stats()["logins"]
    for _ in range(3):
        assert session.get(world.url("/api/rotate")).status_code == 200
    after = sessionkeeper.cookies("demo", socket=world.socket)
    changed = before != after
    assert changed, "the daemon still serves the cookie the site replaced"
    status, _ = world.demo_call("GET", "/api/me", {"Cookie": after})
    assert status == 200, "the daemon serves the rotated session"
    assert session.get(world.url("/api/me")).status_code == 200
    assert world.stats()["logins"] == logins, "no login: every rotation was handed back"


def test_a_logged_out_post_is_reported_but_not_sent_again(world, recorder):
    recorder.answers["/form"] = (401, [], b"log in first")
    session = sessionkeeper.Session("demo", socket=world.socket)
    response = session.post(recorder.url("/form"), data={"a": "1"})
    assert response.status_code == 401
    assert [method for method, path, _ in recorder.requests if path == "/form"] == ["POST"]


def test_a_401_the_check_disproves_is_answered_after_the_wait(world, recorder):
    # The daemon's check finds the session alive: the header never changes and the 401 is the caller's answer.
    recorder.answers["/forbidden"] = (401, [], b"no")
    session = sessionkeeper.Session("demo", socket=world.socket, wait=1.5)
    logins = world.stats()["logins"]
    response = session.get(recorder.url("/forbidden"))
    assert response.status_code == 401
    assert len([p for _, p, _ in recorder.requests if p == "/forbidden"]) == 1
    assert world.stats()["logins"] == logins


def test_min_valid_asks_for_a_longer_session(world):
    # The demo session lives an hour: asking for two makes the daemon log in, and waits for it, then fails
    # saying no session is valid that long.
    session = sessionkeeper.Session("demo", socket=world.socket, min_valid="2h", wait=20)
    with pytest.raises(sessionkeeper.NoSessionError) as raised:
        session.get(world.url("/api/me"))
    assert "demo" in str(raised.value)
    short = sessionkeeper.Session("demo", socket=world.socket, min_valid="10m")
    assert short.get(world.url("/api/me")).status_code == 200


def test_set_cookie_of_another_host_is_refused_by_the_daemon_and_the_request_still_succeeds(world, recorder, caplog):
    recorder.answers["/sets"] = (200, [("Set-Cookie", "other=1; Domain=example.org; Path=/")], b"ok")
    session = sessionkeeper.Session("demo", socket=world.socket)
    with caplog.at_level("WARNING", logger="sessionkeeper"):
        assert session.get(recorder.url("/sets")).status_code == 200
    assert caplog.records == []
    assert "other" not in sessionkeeper.site("demo", socket=world.socket).cookie_names


def test_a_kept_connection_survives_a_daemon_restart(world):
    session = sessionkeeper.Session("demo", socket=world.socket)
    assert session.get(world.url("/api/me")).status_code == 200
    world.stop_daemon()
    world.start_daemon()
    assert session.get(world.url("/api/me")).status_code == 200


def test_status_site_and_formats(world):
    sites = sessionkeeper.status(socket=world.socket)
    assert [(s.name, s.state) for s in sites] == [("demo", "valid")]
    assert sites[0].expires_at is not None and sites[0].expires_at.tzinfo is not None
    as_json = sessionkeeper.cookies("demo", format="json", socket=world.socket)
    assert "demo_session" in [c["name"] for c in as_json]
    netscape = sessionkeeper.cookies("demo", format="netscape", socket=world.socket)
    assert "\tdemo_session\t" in netscape
    header = sessionkeeper.cookies("demo", url=world.url("/api/me?x=1"), socket=world.socket)
    assert "demo_session=" in header and not header.endswith("\n")
    assert sessionkeeper.cookies("demo", url="http://elsewhere.example/", socket=world.socket) == ""
    json.dumps(sessionkeeper.storage_state("demo", socket=world.socket))


def test_events_are_typed(world):
    client = sessionkeeper.Client(world.socket)
    with sessionkeeper.events(socket=world.socket, timeout=30) as stream:
        client.refresh("demo")
        seen = []
        for event in stream:
            seen.append(event)
            if isinstance(event, sessionkeeper.CookiesEvent):
                break
    states = [(e.from_state, e.to_state) for e in seen if isinstance(e, sessionkeeper.StateEvent)]
    assert ("valid", "refreshing") in states
    cookies_event = seen[-1]
    assert cookies_event.site == "demo" and "demo_session" in cookies_event.names
    assert cookies_event.expires_at is not None and cookies_event.time is not None


def test_the_sites_egress_rule_from_the_daemon_judges_a_redirect_to_the_login_page(tmp_path):
    # /account answers a logged-out client with a redirect to /login: no 401 ever reaches the client, so only the
    # site's egress.logged_out rule, handed out by GET /v1/sites/NAME, tells the Session to renew.
    with open(os.path.join(ROOT, "sites", "demo.yaml")) as handle:
        demo = handle.read().replace("http://127.0.0.1:8480", "BASE_URL")
    marked = demo + '\negress:\n  logged_out: {url_matches: "/login\\\\?next="}\n'
    with World(extra_sites={"marked": marked}) as world:
        wait_for(lambda: world.site_state("marked") == "valid", 60, "the marked site's session")
        detail = world.daemon_get("/v1/sites/marked")
        assert detail is not None
        assert detail["egress"]["logged_out"]["url_matches"] == "/login\\?next="
        session = sessionkeeper.Session("marked", socket=world.socket)
        assert "alice" in session.get(world.url("/account")).text
        logins = world.stats()["logins"]
        world.revoke_all()

        response = session.get(world.url("/account"))
        assert response.status_code == 200
        assert "alice" in response.text and 'id="login"' not in response.text
        assert world.stats()["logins"] == logins + 1
        # Without the rule the daemon's default (SPEC section 10) says the same: the redirect goes to the page the
        # demo site's login flow fetches first (/login), so its Session renews too and gets the account page.
        plain = sessionkeeper.Session("demo", socket=world.socket, wait=1.0)
        assert world.daemon_get("/v1/sites/demo")["egress"]["logged_out"]["login_paths"] == ["/login"]
        account = plain.get(world.url("/account")).text
        assert "alice" in account and 'id="login"' not in account
