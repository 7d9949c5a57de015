"""`sessionkeeper.storage_state` opens a logged-in page in Chromium through Playwright (the virtualenv of the
browser-login plugin, plugins/.venv, which scripts/install-deps --browser makes)."""

from __future__ import annotations

import json
import os

import pytest

import sessionkeeper
from conftest import HERE, ROOT, World, run_to_end, wait_for

PLAYWRIGHT_PYTHON = os.path.join(ROOT, "plugins", ".venv", "bin", "python")


def need_playwright() -> None:
    if os.access(PLAYWRIGHT_PYTHON, os.X_OK) and os.access("/usr/bin/chromium", os.X_OK):
        return
    problem = "plugins/.venv (Playwright) or /usr/bin/chromium is missing: run scripts/install-deps --browser"
    if os.environ.get("CI"):
        pytest.fail(problem)
    pytest.skip(problem)


def open_page(state: dict, url: str, folder, key: "str | None" = None) -> "list[str]":
    """Opens `url` in Chromium with `state`; returns the page's URL, the localStorage value of `key` when given,
    then its text."""
    path = folder / "state.json"
    path.write_text(json.dumps(state))
    path.chmod(0o600)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder), "LANG": "C.UTF-8"}
    result = run_to_end([PLAYWRIGHT_PYTHON, os.path.join(HERE, "open_page.py"), str(path), url, *([key] if key else [])],
                        120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.split("\n", 2 if key else 1)


def test_storage_state_opens_a_logged_in_page_in_chromium(world, tmp_path):
    need_playwright()
    state = sessionkeeper.storage_state("demo", socket=world.socket)
    assert "demo_session" in [c["name"] for c in state["cookies"]]
    assert state["origins"] == []
    final_url, text = open_page(state, world.url("/account"), tmp_path)
    assert final_url == world.url("/account"), "the browser was sent to the login page"
    assert "Welcome, alice" in text


def browser_site() -> str:
    with open(os.path.join(ROOT, "sites", "example-browser.yaml")) as handle:
        text = handle.read()
    text = text.replace("http://127.0.0.1:8480", "BASE_URL").replace("enabled: false", "enabled: true")
    return text[: text.index("\noutputs:")] + "\n"


def test_a_browser_logins_local_storage_and_user_agent_reach_playwright_and_requests(tmp_path):
    need_playwright()
    with World(extra_sites={"app": browser_site()}) as world:
        wait_for(lambda: world.site_state("app") == "valid", 120, "the browser login of site 'app'", interval=0.5)
        state = sessionkeeper.storage_state("app", socket=world.socket)
        origins = {o["origin"]: {i["name"]: i["value"] for i in o["localStorage"]} for o in state["origins"]}
        assert origins == {world.base_url: {"demo_app_user": "alice"}}
        final_url, stored, text = open_page(state, world.url("/app/home"), tmp_path, "demo_app_user")
        assert final_url == world.url("/app/home") and "Signed in to the app as alice" in text
        assert stored == "alice"

        detail = sessionkeeper.site("app", socket=world.socket)
        assert detail.user_agent and "Chrome" in detail.user_agent
        session = sessionkeeper.Session("app", socket=world.socket)
        response = session.get(world.url("/app/home"), allow_redirects=False)
        assert response.status_code == 200
        assert response.request.headers["User-Agent"] == detail.user_agent
