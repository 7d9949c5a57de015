"""A user that may read the site but not manage it (a site's `access`): its Session works, and the hand-back the
daemon refuses it (403: set-cookie is a manager's) stops silently without failing a request. Run as uid nobody
through setpriv."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from conftest import World, run_to_end

NOBODY = 65534

READER = """
import json, sys, sessionkeeper
base = sys.argv[1]
s = sessionkeeper.Session("demo")
result = {"me": s.get(base + "/api/me").status_code, "rotate": s.get(base + "/api/rotate").status_code}
result["hands_back"] = s.keeper.hands_back
result["me_after"] = s.get(base + "/api/me").status_code
result["sites"] = [site.name for site in sessionkeeper.status()]
try:
    sessionkeeper.cookies("private")
except sessionkeeper.SessionKeeperError as problem:
    result["private"] = [type(problem).__name__, str(problem)]
print(json.dumps(result))
"""


def test_a_reader_uses_the_session_and_a_refused_hand_back_stays_silent():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run a client as another user")
    private = {"private": "base_url: BASE_URL\nlogin: manual\n"}
    with World(extra_sites=private, site_options=f"\naccess:\n  uids: [{NOBODY}]\n", socket_group="nogroup") as world:
        logins = world.stats()["logins"]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "SESSIONKEEPER_SOCKET": world.socket}
        ran = run_to_end(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                          sys.executable, "-c", READER, world.base_url], 120, env=env, cwd="/")
        assert ran.returncode == 0, ran.stderr[-3000:]
        result = json.loads(ran.stdout)
        assert result["sites"] == ["demo"], "a site the reader may not read is not listed"
        # A site the reader may not read is, to it, a site that does not exist (SPEC section 8).
        kind, text = result["private"]
        assert kind == "SiteNotFoundError" and "private" in text

        outsider = run_to_end(["setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", sys.executable, "-c",
                               "import sessionkeeper; sessionkeeper.status()"], 120, env=env, cwd="/")
        assert outsider.returncode == 1
        assert "DaemonError: cannot connect to" in outsider.stderr and "permission denied" in outsider.stderr
        assert (result["me"], result["rotate"], result["me_after"]) == (200, 200, 200)
        # set-cookie is a manager's: the daemon refuses the reader's hand-back (403), so it serves the replaced
        # cookie, whose 401 brings one login.
        assert result["hands_back"] is False
        assert world.stats()["logins"] == logins + 1
