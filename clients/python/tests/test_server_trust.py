"""Whose server the client believes at the socket (SPEC section 9): root, this user, or the daemon's user (the
owner of config.yaml's `state_dir`, when it owns the socket file). A program of another user that holds the path
gets no request, and the error names its uid. A `./config.yaml` another user owns is not read. The servers run as
uid 1 (`daemon`) through `setpriv`, so these tests need root."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

import sessionkeeper
from conftest import start, stop
from sessionkeeper._config import locate_daemon

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the servers of another user are started through setpriv as root")

# One HTTP answer to every request; each request line is appended to the log (argv[2]).
SERVER = r"""
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(8)
print("ready", flush=True)
while True:
    connection, _ = server.accept()
    data = connection.recv(65536)
    # A client that judges the peer and hangs up sends nothing: only a request is logged and answered.
    if data:
        with open(log, "ab") as handle:
            handle.write(data.split(b"\r\n")[0] + b"\n")
        body = b'{"status":"ok","version":"fake","uptime_s":1}'
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\n\r\n" + body)
        except BrokenPipeError:
            pass
    connection.close()
"""


@pytest.fixture
def server_of_uid_1():
    """A socket served by uid 1 in a folder of /tmp it may write (pytest's own folders are private), and its
    request log."""
    run = tempfile.mkdtemp(prefix="sk-trust-")
    os.chmod(run, 0o777)
    path, log = os.path.join(run, "sk.sock"), os.path.join(run, "requests.log")
    process = start(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "/usr/bin/python3", "-u", "-c", SERVER, path, log],
                    stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready"
        yield path, log
    finally:
        stop(process)
        shutil.rmtree(run, ignore_errors=True)


def test_a_server_of_another_user_is_refused_and_named(server_of_uid_1, monkeypatch, tmp_path):
    path, log = server_of_uid_1
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SESSIONKEEPER_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(sessionkeeper.UntrustedServerError) as raised:
        sessionkeeper.Client(path).health()
    assert raised.value.uid == 1
    assert f"the server on {path} runs as uid 1, which is neither root nor you (uid 0)" in str(raised.value)
    assert not os.path.exists(log) or open(log).read() == "", "a request was sent to it"


def test_the_configured_daemon_user_is_believed(server_of_uid_1, monkeypatch, tmp_path):
    path, log = server_of_uid_1
    state = tmp_path / "state"
    state.mkdir()
    os.chown(state, 1, 1)
    config = tmp_path / "config.yaml"
    config.write_text(f"state_dir: state\nsocket: {{path: {path}}}\n")
    monkeypatch.setenv("SESSIONKEEPER_CONFIG", str(config))
    assert locate_daemon(None) == (path, 1)
    assert sessionkeeper.Client().health()["status"] == "ok"
    assert open(log).read().startswith("GET /v1/health")
    # Another owner of state_dir: the same server is not the daemon's user.
    os.chown(state, 0, 0)
    with pytest.raises(sessionkeeper.UntrustedServerError, match="runs as uid 1"):
        sessionkeeper.Client().health()


def test_a_config_in_the_current_folder_of_another_user_is_ignored(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    planted = work / "config.yaml"
    planted.write_text("socket: {path: /tmp/planted.sock}\n")
    os.chown(planted, 1, 1)
    env = {"HOME": str(tmp_path / "home")}
    with pytest.raises(sessionkeeper.ConfigError) as raised:
        locate_daemon(None, env, str(work))
    assert f"{planted} belongs to another user and was ignored" in str(raised.value)
    os.chown(planted, 0, 0)
    assert locate_daemon(None, env, str(work))[0] == "/tmp/planted.sock"
