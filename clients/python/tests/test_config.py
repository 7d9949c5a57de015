"""Where the socket is: the order of SPEC section 9, taken from `sessionkeeper config --json`, and the same socket
as the CLI's other commands (`sessionkeeper status` names the socket it tried when no daemon answers)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

import sessionkeeper
from conftest import program
from conftest import BUILD
from sessionkeeper._config import locate_socket


def write(path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_socket_argument_then_environment_then_config(tmp_path):
    config = write(tmp_path / "config.yaml", "socket: {path: from-config.sock}\n")
    env = {"SESSIONKEEPER_SOCKET": "/run/env.sock", "SESSIONKEEPER_CONFIG": config}
    assert locate_socket("/run/arg.sock", env, str(tmp_path)) == "/run/arg.sock"
    assert locate_socket(None, env, str(tmp_path)) == "/run/env.sock"
    del env["SESSIONKEEPER_SOCKET"]
    assert locate_socket(None, env, "/") == str(tmp_path / "from-config.sock")


def test_config_file_order(tmp_path):
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    write(home / ".config" / "sessionkeeper" / "config.yaml", "state_dir: /var/lib/sk\n")
    env = {"HOME": str(home)}
    assert locate_socket(None, env, str(work)) == "/var/lib/sk/sessionkeeper.sock"
    write(tmp_path / "xdg" / "sessionkeeper" / "config.yaml", "state_dir: xdg-state\n")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    assert locate_socket(None, env, str(work)) == str(tmp_path / "xdg" / "sessionkeeper" / "xdg-state" / "sessionkeeper.sock")
    write(work / "config.yaml", "socket:\n  path: here.sock\n")
    assert locate_socket(None, env, str(work)) == str(work / "here.sock")
    env["SESSIONKEEPER_CONFIG"] = "sub/../named.yaml"
    write(work / "named.yaml", "socket: {path: '~/named.sock'}\n")
    assert locate_socket(None, env, str(work)) == str(home / "named.sock")


def test_default_socket_is_in_the_runtime_folder_else_the_state_folder(tmp_path):
    config = write(tmp_path / "config.yaml", "# nothing but a comment\n")
    env = {"SESSIONKEEPER_CONFIG": config}
    assert locate_socket(None, env, "/") == str(tmp_path / ".state" / "sessionkeeper.sock")
    env["XDG_RUNTIME_DIR"] = "/run/user/1000"
    assert locate_socket(None, env, "/") == "/run/user/1000/sessionkeeper.sock"
    env["XDG_RUNTIME_DIR"] = "relative/ignored"
    assert locate_socket(None, env, "/") == str(tmp_path / ".state" / "sessionkeeper.sock")


def test_no_config_says_what_was_tried(tmp_path):
    with pytest.raises(sessionkeeper.ConfigError) as raised:
        locate_socket(None, {"HOME": str(tmp_path)}, str(tmp_path))
    text = str(raised.value)
    assert str(tmp_path / "config.yaml") in text and ".config/sessionkeeper/config.yaml" in text
    assert "SESSIONKEEPER_SOCKET" in text
    with pytest.raises(sessionkeeper.ConfigError, match="no such file"):
        locate_socket(None, {"SESSIONKEEPER_CONFIG": str(tmp_path / "missing.yaml")}, "/")


def test_a_config_the_cli_cannot_read_is_refused_in_its_words(tmp_path):
    config = write(tmp_path / "config.yaml", "socket: /run/sk.sock\n")
    with pytest.raises(sessionkeeper.ConfigError) as raised:
        locate_socket(None, {"SESSIONKEEPER_CONFIG": config}, "/")
    assert str(raised.value).startswith(f"{config}:1:") and "SESSIONKEEPER_SOCKET" in str(raised.value)


def test_without_the_cli_on_the_path_only_a_named_socket_is_found(tmp_path):
    config = write(tmp_path / "config.yaml", "state_dir: s\n")
    env = {"PATH": str(tmp_path), "SESSIONKEEPER_CONFIG": config}
    with pytest.raises(sessionkeeper.ConfigError, match="cannot find the 'sessionkeeper' program on the PATH"):
        locate_socket(None, env, "/")
    env["SESSIONKEEPER_SOCKET"] = "/run/env.sock"
    assert locate_socket(None, env, "/") == "/run/env.sock"


SAME_AS_CLI = [
    "sites_dir: sites\n",
    "state_dir: var/state\n",
    "state_dir: ../up/./state//x\n",
    "socket: {path: run/../sk.sock, mode: \"0600\"}\n",
    "socket:\n  path: \"/tmp/quoted dir/sk.sock\"\n",
    "state_dir: '~/kept'\nsocket:\n  mode: \"0600\"\n",
    "---\nstate_dir: s # comment\nvault: {key: {file: s/master.key}}\n",
]


@pytest.mark.parametrize("text", SAME_AS_CLI)
@pytest.mark.parametrize("runtime", [None, "/run/user/4242"])
def test_same_socket_as_the_cli(tmp_path, text, runtime):
    """The CLI's `status` with no daemon says which socket it tried; the client must find the same one."""
    config = write(tmp_path / "conf" / "config.yaml", text)
    env = {"PATH": f"{BUILD}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "SESSIONKEEPER_CONFIG": config}
    if runtime:
        env["XDG_RUNTIME_DIR"] = runtime
    result = subprocess.run([program("sessionkeeper"), "status"], cwd=str(tmp_path), env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    tried = re.search(r"cannot connect to (.+?): ", result.stderr)
    assert tried, result.stderr
    assert locate_socket(None, env, str(tmp_path)) == tried.group(1)
    with pytest.raises(sessionkeeper.DaemonNotRunningError) as raised:
        sessionkeeper.status(socket=locate_socket(None, env, str(tmp_path)))
    assert f"cannot connect to {tried.group(1)}: " in str(raised.value)


def test_module_functions_use_the_environment(world, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SESSIONKEEPER_CONFIG", world.config)
    monkeypatch.delenv("SESSIONKEEPER_SOCKET", raising=False)
    assert [s.name for s in sessionkeeper.status()] == ["demo"]
    monkeypatch.setenv("SESSIONKEEPER_SOCKET", os.path.join(str(tmp_path), "nothing.sock"))
    with pytest.raises(sessionkeeper.DaemonNotRunningError):
        sessionkeeper.status()
