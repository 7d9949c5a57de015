"""Where the socket is: the order of SPEC section 9, config.yaml's two keys, and the CLI's own answer for the same
files (`sessionkeeper status` names the socket it tried when no daemon answers)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

import sessionkeeper
from conftest import program
from sessionkeeper._config import locate_socket, read_socket_keys


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
    with pytest.raises(sessionkeeper.ConfigError, match="does not exist"):
        locate_socket(None, {"SESSIONKEEPER_CONFIG": str(tmp_path / "missing.yaml")}, "/")


READABLE = {
    "block": ("state_dir: st  # the state\nsocket:\n  mode: \"0600\"\n  path: 'it''s.sock'\n  allow_uids:\n    - 1\n",
              {"state_dir": "st", "socket.path": "it's.sock"}),
    "flow": ('socket: {mode: "0660", group: wheel, path: "a\\tb.sock", allow_uids: [1, 2]}\n',
             {"socket.path": "a\tb.sock"}),
    "null values": ("state_dir: ~\nsocket: null\n", {}),
    "other keys skipped": ("defaults:\n  http: {timeout: 30s,\n    user_agent: 'x: y'}\nlog: {level: info}\n"
                           "notify:\n  - command: [a, b]\nstate_dir: s\n", {"state_dir": "s"}),
    "document markers": ("---\nstate_dir: s\n...\nsocket: {path: ignored}\n", {"state_dir": "s"}),
    "quoted key": ('"socket":\n    "path": x.sock # comment\n', {"socket.path": "x.sock"}),
}


@pytest.mark.parametrize("name", sorted(READABLE))
def test_reader_reads_the_two_keys(name):
    text, expected = READABLE[name]
    assert {k: v for k, (v, _) in read_socket_keys(text, "c.yaml").items()} == expected


REFUSED = {
    "anchor": ("socket:\n  path: &p x.sock\n", 2, "anchors"),
    "alias": ("state_dir: *dir\n", 1, "anchors"),
    "block scalar": ("state_dir: |\n  x\n", 1, "block scalars"),
    "duplicate": ("state_dir: a\nstate_dir: b\n", 2, "duplicate key 'state_dir'"),
    "duplicate child": ("socket:\n  path: a\n  path: b\n", 3, "duplicate key 'socket.path'"),
    "tab": ("socket:\n\tpath: a\n", 2, "tab"),
    "list at top": ("- a\n", 1, "key: value"),
    "multi-line flow": ("socket: {path: a,\n  mode: '0600'}\n", 1, "must end on its line"),
    "socket as text": ("socket: /run/sk.sock\n", 1, "expected a mapping"),
    "empty path": ("socket: {path: ''}\n", 1, "socket.path is empty"),
    "unterminated": ("state_dir: \"abc\n", 1, "does not end"),
    "bad escape": ('state_dir: "a\\qb"\n', 1, "unknown escape"),
    "merge key": ("<<: {state_dir: x}\n", 1, "merge key"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_reader_refuses_what_it_cannot_read_surely(name):
    text, line, words = REFUSED[name]
    with pytest.raises(sessionkeeper.ConfigError) as raised:
        read_socket_keys(text, "/etc/sk/config.yaml")
    assert str(raised.value).startswith(f"/etc/sk/config.yaml:{line}: ")
    assert words in str(raised.value)
    assert "SESSIONKEEPER_SOCKET" in str(raised.value)


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
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "SESSIONKEEPER_CONFIG": config}
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
