"""The exceptions: what they say, which class they are, and that none of them holds a cookie value or a secret."""

from __future__ import annotations

import logging
import os
import socket
import threading

import pytest

import sessionkeeper
from conftest import PASSWORD, World

BROKEN_SITE = """\
base_url: BASE_URL
credentials: {username: alice, password: "wrong-password-never-shown"}
login:
  steps:
    - get: /login
      extract: {csrf: {xpath: "//form[@id='login']//input[@name='csrf']/@value"}}
    - post: /login
      form: {username: "{{ credentials.username }}", password: "{{ credentials.password }}", csrf: "{{ csrf }}"}
      follow_redirects: false
      expect: {status: 303, cookie: demo_session}
cookies: {essential: [demo_session]}
"""


def test_daemon_stopped_says_start_it(world):
    session = sessionkeeper.Session("demo", socket=world.socket)
    assert session.get(world.url("/api/me")).status_code == 200
    world.stop_daemon()
    for call in (lambda: session.get(world.url("/api/me")), lambda: sessionkeeper.cookies("demo", socket=world.socket),
                 lambda: sessionkeeper.status(socket=world.socket)):
        with pytest.raises(sessionkeeper.DaemonNotRunningError) as raised:
            call()
        assert "start it with `sessionkeeper run`" in str(raised.value)
        assert world.socket in str(raised.value)
        assert isinstance(raised.value, sessionkeeper.SessionKeeperError)


def test_no_socket_file_and_a_stale_one(tmp_path):
    missing = str(tmp_path / "none.sock")
    with pytest.raises(sessionkeeper.DaemonNotRunningError, match="start it with `sessionkeeper run`"):
        sessionkeeper.status(socket=missing)
    stale = str(tmp_path / "stale.sock")
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(stale)
    left.close()
    with pytest.raises(sessionkeeper.DaemonNotRunningError, match="start it with `sessionkeeper run`"):
        sessionkeeper.cookies("demo", socket=stale)


def test_a_daemon_that_does_not_answer_times_out(tmp_path):
    path = str(tmp_path / "mute.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    thread.start()
    try:
        with pytest.raises(sessionkeeper.DaemonError, match=r"did not answer within 0\.5 s"):
            sessionkeeper.Client(path, timeout=0.5).status()
    finally:
        thread.join(5)
        for connection in accepted:
            connection.close()
        server.close()


def test_unknown_site(world):
    with pytest.raises(sessionkeeper.SiteNotFoundError) as raised:
        sessionkeeper.Session("nosuchsite", socket=world.socket).get(world.url("/api/me"))
    assert "nosuchsite" in str(raised.value) and "sessionkeeper status" in str(raised.value)
    assert raised.value.status == 404 and raised.value.site == "nosuchsite"
    with pytest.raises(sessionkeeper.SiteNotFoundError):
        sessionkeeper.cookies("nosuchsite", socket=world.socket)
    with pytest.raises(sessionkeeper.SiteNotFoundError):
        sessionkeeper.storage_state("Not/A Name", socket=world.socket)


def test_no_secret_or_cookie_value_in_any_exception_or_log(caplog):
    secrets = [PASSWORD, "wrong-password-never-shown", "query-secret-token"]
    problems = []
    with caplog.at_level(logging.DEBUG, logger="sessionkeeper"), World(extra_sites={"broken": BROKEN_SITE}) as world:
        value = sessionkeeper.cookies("demo", format="json", socket=world.socket)[0]["value"]
        secrets.append(value)
        session = sessionkeeper.Session("demo", socket=world.socket)
        url = world.url("/api/me?token=query-secret-token")
        calls = [
            lambda: sessionkeeper.cookies("broken", socket=world.socket),
            lambda: sessionkeeper.cookies("broken", wait="1s", socket=world.socket),
            lambda: sessionkeeper.cookies("demo", format="nonsense", socket=world.socket),
            lambda: sessionkeeper.cookies("demo", min_valid="forever", socket=world.socket),
            lambda: sessionkeeper.cookies("demo", url="ftp://x/?token=query-secret-token", socket=world.socket),
            lambda: sessionkeeper.Client(world.socket).set_cookie("nosuch", url, ["demo_session=" + value]),
            lambda: sessionkeeper.Client(world.socket).report("broken", 401),
            lambda: sessionkeeper.Session("broken", socket=world.socket, wait=1).get(url),
            lambda: sessionkeeper.Session("nosuch", socket=world.socket).get(url, cookies={"demo_session": value}),
        ]
        for call in calls:
            with pytest.raises(sessionkeeper.SessionKeeperError) as raised:
                call()
            problems.append(raised.value)
        world.revoke_all()
        world.stop_daemon()
        with pytest.raises(sessionkeeper.DaemonNotRunningError) as raised:
            session.get(url, headers={"Cookie": "demo_session=" + value})
        problems.append(raised.value)
    kinds = {type(p).__name__ for p in problems}
    assert {"NoSessionError", "RequestRefusedError", "SiteNotFoundError", "DaemonNotRunningError"} <= kinds
    texts = [text for p in problems for text in (str(p), repr(p), p.message or "", str(p.args))]
    texts += [record.getMessage() for record in caplog.records]
    leaked = [i for i, text in enumerate(texts) if any(secret in text for secret in secrets)]
    assert leaked == [], "a secret or cookie value appears in an exception or log text"
