"""`pip install ./clients/python` into a fresh virtualenv: it installs, needs nothing beyond requests, ships
py.typed, and without httpx says how to get HTTPXAuth."""

from __future__ import annotations

import json
import os
import sys

from conftest import HERE, run_to_end

PACKAGE = os.path.dirname(HERE)
# requests and what requests needs, and what a new virtualenv holds already.
ALLOWED = {"sessionkeeper", "requests", "urllib3", "idna", "charset-normalizer", "certifi", "pip", "setuptools", "wheel"}


def _build_leftovers() -> set:
    """What a setuptools build leaves in the folder it builds in."""
    found = {name for name in ("build", "dist") if os.path.exists(os.path.join(PACKAGE, name))}
    return found | {name for name in os.listdir(os.path.join(PACKAGE, "src")) if name.endswith(".egg-info")}


def test_installs_into_a_fresh_virtualenv_with_requests_only(tmp_path):
    venv = tmp_path / "venv"
    made = run_to_end([sys.executable, "-m", "venv", str(venv)], 120)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    before = _build_leftovers()
    installed = run_to_end([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", PACKAGE], 600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    # The build ran on a copy: nothing was written into the checkout (issue 40).
    assert _build_leftovers() == before, f"the install wrote {sorted(_build_leftovers() - before)} into {PACKAGE}"
    listed = run_to_end([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"], 120)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "sessionkeeper" in names and "requests" in names
    assert names <= ALLOWED, f"more than requests was installed: {sorted(names - ALLOWED)}"
    probe = """
import importlib.resources, sessionkeeper
assert importlib.resources.files("sessionkeeper").joinpath("py.typed").is_file()
assert issubclass(sessionkeeper.Session, __import__("requests").Session)
try:
    sessionkeeper.HTTPXAuth
except ImportError as problem:
    print(problem)
"""
    ran = run_to_end([python, "-c", probe], 60, cwd=str(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert "pip install 'sessionkeeper[httpx]'" in ran.stdout
