"""The real parts the tests run against: the demo site (`.build/debug/demo-site`) and a daemon
(`.build/debug/sessionkeeper run`) logged into it, each in a private temporary folder, both stopped afterwards.

Every child is started in a process group of its own with PR_SET_PDEATHSIG, so one left behind by a test that
failed, or by a pytest that was killed, is ended with it; SIGTERM to pytest runs the fixtures' teardown."""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Dict, Iterator, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("SESSIONKEEPER_BUILD_DIR") or os.path.join(ROOT, ".build", "debug")
PASSWORD = "client-Passw0rd-never-shown"
# The client asks `sessionkeeper config --json` where the socket is: the build's CLI is the one on the PATH.
os.environ["PATH"] = BUILD + os.pathsep + os.environ.get("PATH", os.defpath)


def _die_with_parent() -> None:
    # PR_SET_PDEATHSIG (1): the child gets SIGTERM when the test process ends, however it ends.
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


def start(arguments: List[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(arguments, preexec_fn=_die_with_parent, start_new_session=True, **kwargs)


def stop(process: Optional[subprocess.Popen]) -> None:
    """SIGTERM, then SIGKILL after 10 s, to the process group."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        process.wait()


def run_to_end(arguments: List[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """`subprocess.run` with the output captured as text, whose process group is killed when `timeout` runs out."""
    process = start(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return subprocess.CompletedProcess(arguments, process.returncode, out, err)


def program(name: str) -> str:
    path = os.path.join(BUILD, name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: build it with `swift build --build-tests` (or set SESSIONKEEPER_BUILD_DIR)")
    return path


def wait_for(condition, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class World:
    """The demo site on a free port and a daemon keeping its `demo` site (plus any `extra_sites`) logged in."""

    def __init__(self, extra_sites: Optional[Dict[str, str]] = None, site_options: str = "",
                 socket_group: Optional[str] = None) -> None:
        self.work = tempfile.mkdtemp(prefix="sk-py-")
        self.env = {"PATH": "/usr/bin:/bin", "HOME": self.work, "DEMO_PASSWORD": PASSWORD, "LANG": "C.UTF-8"}
        # With socket_group, the socket is in a folder of its own, open to that group (0660), and the folder above
        # it may be passed through by anyone.
        self.socket_group = socket_group
        self.socket = os.path.join(self.work, "run" if socket_group else "state", "sk.sock")
        self.config = os.path.join(self.work, "config.yaml")
        self.extra_sites = extra_sites or {}
        self.site_options = site_options
        self.demo: Optional[subprocess.Popen] = None
        self.daemon: Optional[subprocess.Popen] = None
        self.port = 0

    def __enter__(self) -> "World":
        try:
            self.start_demo()
            self.write_config()
            self.start_daemon()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def close(self) -> None:
        stop(self.daemon)
        stop(self.demo)
        shutil.rmtree(self.work, ignore_errors=True)

    def start_demo(self) -> None:
        port_file = os.path.join(self.work, "port")
        self.demo = start([program("demo-site"), "--port", "0", "--port-file", port_file], env=self.env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0, 30, "the demo site's port")
        with open(port_file) as handle:
            self.port = int(handle.read().strip())

    def write_config(self) -> None:
        os.makedirs(os.path.join(self.work, "sites"))
        if self.socket_group:
            os.chmod(self.work, 0o711)
        with open(self.config, "w") as config:
            group = f', mode: "0660", group: {self.socket_group}' if self.socket_group else ""
            config.write(f"sites_dir: sites\nplugins_dir: {ROOT}/plugins\nstate_dir: state\n"
                         f"socket: {{path: {self.socket}{group}}}\n"
                         "vault: {key: {file: state/master.key}}\nscheduler: {per_host_interval: 0s}\n")
        with open(os.path.join(ROOT, "sites", "demo.yaml")) as handle:
            demo = handle.read().replace("http://127.0.0.1:8480", self.base_url) + self.site_options
        sites = {"demo": demo, **{name: text.replace("BASE_URL", self.base_url) for name, text in self.extra_sites.items()}}
        for name, text in sites.items():
            with open(os.path.join(self.work, "sites", f"{name}.yaml"), "w") as out:
                out.write(text)

    def start_daemon(self, until_valid: bool = True) -> None:
        """`sessionkeeper run`; with `until_valid`, returns once the demo site's session is served, else once the
        socket answers."""
        log = open(os.path.join(self.work, "daemon.log"), "ab")
        self.daemon = start([program("sessionkeeper"), "run", "--config", self.config], cwd=self.work, env=self.env,
                            stdout=log, stderr=log)
        log.close()
        if not until_valid:
            wait_for(lambda: self.daemon_get("/v1/health") or self._daemon_died(), 60, "the daemon's socket")
            return
        wait_for(lambda: self.site_state("demo") == "valid" or self._daemon_died(), 60, "the daemon's demo session")
        self._daemon_died()

    def stop_daemon(self) -> None:
        stop(self.daemon)
        self.daemon = None

    def _daemon_died(self) -> bool:
        if self.daemon is not None and self.daemon.poll() is not None:
            with open(os.path.join(self.work, "daemon.log"), errors="replace") as handle:
                raise AssertionError(f"the daemon ended ({self.daemon.returncode}):\n{handle.read()[-3000:]}")
        return False

    def daemon_get(self, path: str) -> Optional[dict]:
        """A JSON answer of the daemon, asked with http.client alone (the client under test is not used to set up);
        None while nothing listens."""
        connection = http.client.HTTPConnection("localhost", timeout=10)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.socket)
        except OSError:
            sock.close()
            return None
        connection.sock = sock
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return json.loads(response.read()) if response.status == 200 else None
        finally:
            connection.close()

    def socket_requests(self, route: str) -> int:
        """How many requests to `route` (as /metrics names it) the daemon answered with 200."""
        connection = http.client.HTTPConnection("localhost", timeout=10)
        connection.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.sock.connect(self.socket)
            connection.request("GET", "/metrics")
            text = connection.getresponse().read().decode()
        finally:
            connection.close()
        line = f'sessionkeeper_socket_requests_total{{route="{route}",status="200"}} '
        return sum(int(float(l[len(line):])) for l in text.splitlines() if l.startswith(line))

    def site_state(self, name: str) -> Optional[str]:
        answer = self.daemon_get(f"/v1/sites/{name}")
        return answer.get("state") if answer else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def demo_call(self, method: str, path: str, headers: Optional[Dict[str, str]] = None) -> "tuple[int, bytes]":
        """A request to the demo site with http.client alone."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.request(method, path, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def stats(self) -> dict:
        status, body = self.demo_call("GET", "/_control/stats")
        assert status == 200
        return json.loads(body)

    def revoke_all(self) -> None:
        status, _ = self.demo_call("POST", "/_control/revoke-all")
        assert status == 200


@pytest.fixture
def world() -> Iterator[World]:
    with World() as running:
        yield running


def _terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


# SIGTERM (a CI runner's stop) becomes a KeyboardInterrupt, so pytest runs every fixture's teardown.
signal.signal(signal.SIGTERM, _terminate_as_interrupt)
