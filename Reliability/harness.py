"""Shared setup of the end-to-end reliability scripts (issue 14): the release binaries of this worktree, the
demo site, a daemon folder with N copies of the demo site's login, a client for the daemon's Unix socket, the
daemon's JSON log, and its resources from /proc.

Python 3 standard library only, as Benchmarks/run-daemon. Nothing here prints a cookie value or a password:
cookie headers are only ever handed to the demo site to ask whether the session they carry is valid.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PASSWORD = "reliability-Passw0rd"
# The release binaries as `scripts/install` builds them (scripts/build-release); RELIABILITY_BUILD=debug uses the
# debug ones that `swift build --build-tests` (the test command) has already built, so CI builds nothing more.
DEBUG = os.environ.get("RELIABILITY_BUILD") == "debug"
# The debug build takes the flags scripts/run and scripts/test build .build with (scripts/lib/build-flags.sh), so
# that it reuses their objects instead of compiling everything again with debug information.
DEBUG_BUILD = ["bash", "-c", 'source "$0" && exec swift build "${SWIFT_BUILD_FLAGS[@]}" "$@"',
               os.path.join(ROOT, "scripts", "lib", "build-flags.sh")]
BUILD = DEBUG_BUILD if DEBUG else [os.path.join(ROOT, "scripts", "build-release")]


def binaries():
    """The folder of this worktree's binaries (release, or debug with RELIABILITY_BUILD=debug), built first unless
    RELIABILITY_SKIP_BUILD=1; RELIABILITY_BIN_DIR names the folder outright and builds nothing (scripts/test, whose
    fuzz build holds SwiftPM's lock on .build meanwhile, so even `swift build --show-bin-path` would wait)."""
    path = os.environ.get("RELIABILITY_BIN_DIR")
    if not path:
        if os.environ.get("RELIABILITY_SKIP_BUILD") != "1":
            for product in ("sessionkeeper", "demo-site"):
                result = subprocess.run([*BUILD, "--product", product] if DEBUG else [*BUILD, product], cwd=ROOT,
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    raise SystemExit(f"building {product} failed:\n{(result.stdout + result.stderr)[-4000:]}")
        path = subprocess.run([*BUILD, "--show-bin-path"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip().splitlines()[-1]
    for product in ("sessionkeeper", "demo-site"):
        if not os.access(os.path.join(path, product), os.X_OK):
            how = (f"swift build --product {product} with the flags of scripts/lib/build-flags.sh" if DEBUG
                   else f"scripts/build-release {product}")
            raise SystemExit(f"{path}/{product} is missing: run {how}")
    return path


def wait_for(condition, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class SessionChecker:
    """Asks the demo site (GET /api/me) whether a Cookie header carries a valid session; one connection, so one
    checker per thread."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def session(self, cookie_header):
        """(valid, expires_at epoch or None) for the session in `cookie_header`."""
        for attempt in range(2):
            try:
                if self.connection is None:
                    self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                self.connection.request("GET", "/api/me", headers={"Cookie": cookie_header})
                response = self.connection.getresponse()
                body = response.read()
                if response.status == 200:
                    return True, parse_time(json.loads(body)["expires_at"])
                return False, None
            except (OSError, http.client.HTTPException):
                self.connection = None
                if attempt:
                    raise
        return False, None


class DemoSite:
    """The release demo site on a free loopback port."""

    def __init__(self, bin_path, work, session_max_age):
        port_file = os.path.join(work, "demo.port")
        self.log = open(os.path.join(work, "demo-site.log"), "wb")
        self.process = subprocess.Popen(
            [os.path.join(bin_path, "demo-site"), "--port", "0", "--port-file", port_file,
             "--session-max-age", str(session_max_age)],
            env={"PATH": "/usr/bin:/bin", "DEMO_PASSWORD": PASSWORD}, stdout=self.log, stderr=self.log)
        if not wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0, 30):
            raise SystemExit("demo-site did not start")
        with open(port_file) as file:
            self.port = int(file.read().strip())

    def checker(self):
        return SessionChecker(self.port)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def site_yaml(port, before_expiry="3s", check=None):
    """The demo site's form login (as Benchmarks/run-daemon), refreshed `before_expiry` before its session ends."""
    text = f"""base_url: http://127.0.0.1:{port}
credentials: {{username: alice, password: {{env: DEMO_PASSWORD}}}}
login:
  steps:
    - name: login page
      get: /login
      extract: {{csrf: {{xpath: "//form[@id='login']//input[@name='csrf']/@value"}}}}
    - name: submit
      post: /login
      form: {{username: "{{{{ credentials.username }}}}", password: "{{{{ credentials.password }}}}", csrf: "{{{{ csrf }}}}"}}
      follow_redirects: false
      expect: {{status: 303, cookie: demo_session}}
refresh: {{before_expiry: {before_expiry}, retry: {{initial: 1s, max: 5s, max_failures_per_day: 1000}}}}
cookies: {{essential: [demo_session]}}
"""
    if check:
        text += f"check: {{get: /api/me, expect: {{status: 200}}, every: {check}}}\n"
    return text


def write_atomically(path, data):
    """Writes a file under a hidden name and renames it into place, so a folder watcher sees it whole."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.part")
    with open(temporary, "wb") as file:
        file.write(data if isinstance(data, bytes) else data.encode())
    os.rename(temporary, path)


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)


class SocketClient:
    """One keep-alive connection to the daemon's socket, reconnecting after an error."""

    def __init__(self, path, timeout=30):
        self.path = path
        self.timeout = timeout
        self.connection = None

    def request(self, method, target):
        """(status, body text); raises OSError or HTTPException when the daemon does not answer."""
        if self.connection is None:
            self.connection = UnixConnection(self.path, self.timeout)
        try:
            self.connection.request(method, target)
            response = self.connection.getresponse()
            return response.status, response.read().decode(errors="replace")
        except Exception:
            self.close()
            raise

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Workspace:
    """A daemon folder: config.yaml (JSON log), `sites/` with `count` copies of the demo login, `state/`."""

    def __init__(self, bin_path, prefix, demo_port, count, before_expiry="3s", check=None, scheduler=None,
                 work=None):
        self.bin_path = bin_path
        self.folder = work or tempfile.mkdtemp(prefix=prefix)
        self.sites_dir = os.path.join(self.folder, "sites")
        self.state_dir = os.path.join(self.folder, "state")
        self.socket_path = os.path.join(self.state_dir, "sk.sock")
        self.config_path = os.path.join(self.folder, "config.yaml")
        os.makedirs(self.sites_dir, exist_ok=True)
        scheduler = scheduler or "{max_concurrent_logins: 8, per_host_interval: 0s, jitter: 0}"
        with open(self.config_path, "w") as config:
            config.write(f"sites_dir: sites\nplugins_dir: plugins\nstate_dir: state\n"
                         f"vault: {{key: {{file: state/master.key}}}}\nsocket: {{path: state/sk.sock}}\n"
                         f"scheduler: {scheduler}\nlog: {{level: info, format: json}}\n")
        self.names = [f"site-{index:03d}" for index in range(count)]
        text = site_yaml(demo_port, before_expiry, check)
        for name in self.names:
            with open(os.path.join(self.sites_dir, name + ".yaml"), "w") as site:
                site.write(text)
        self.daemon = None
        self.log_path = None
        self.incarnation = 0

    def env(self):
        return {"PATH": "/usr/bin:/bin", "HOME": self.folder, "DEMO_PASSWORD": PASSWORD}

    def start(self, preexec_fn=None, extra_env=None):
        """Starts `sessionkeeper run`, its log in daemon-N.log (one file per start)."""
        self.incarnation += 1
        self.log_path = os.path.join(self.folder, f"daemon-{self.incarnation:04d}.log")
        log = open(self.log_path, "wb")
        env = self.env()
        env.update(extra_env or {})
        # Started through a link of another name: on a shared machine, someone's `pkill -f "sessionkeeper run"`
        # for their own daemon stopped this one twice in the middle of a soak.
        program = os.path.join(self.folder, "sessionkeeper-under-test")
        if not os.path.lexists(program):
            os.symlink(os.path.join(self.bin_path, "sessionkeeper"), program)
        self.daemon = subprocess.Popen([program, "run", "--config", self.config_path],
                                       cwd=self.folder, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                       preexec_fn=preexec_fn)
        log.close()
        return self.daemon

    def health(self, timeout=2):
        try:
            status, _ = SocketClient(self.socket_path, timeout).request("GET", "/v1/health")
            return status == 200
        except (OSError, http.client.HTTPException):
            return False

    def wait_ready(self, timeout=30):
        """Whether the daemon logged "daemon ready" and its socket answers /v1/health within `timeout`."""
        def ready():
            if self.daemon.poll() is not None:
                return True
            return any(line.get("message") == "daemon ready" for line in self.log()) and self.health()
        return wait_for(ready, timeout, 0.05) and self.daemon.poll() is None

    def kill(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(timeout=30)

    def stop(self, timeout=60):
        """SIGTERM; its exit status, or None when it had to be killed."""
        if self.daemon is None or self.daemon.poll() is not None:
            return self.daemon.returncode if self.daemon else None
        self.daemon.send_signal(signal.SIGTERM)
        try:
            return self.daemon.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def log(self, path=None):
        """The JSON log lines of the current start (or of `path`); lines that are not JSON come as {"text": ...}."""
        lines = []
        try:
            with open(path or self.log_path, errors="replace") as file:
                for line in file:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        lines.append(json.loads(line))
                    except ValueError:
                        lines.append({"text": line})
        except FileNotFoundError:
            pass
        return lines

    def logins(self, path=None):
        """Every finished or failed login of a start: (site, start time epoch, outcome)."""
        runs = []
        for line in self.log(path):
            if line.get("run") == "login" and "site" in line:
                ended = parse_time(line["time"])
                runs.append((line["site"], ended - int(line.get("ms", "0")) / 1000, line.get("outcome")))
        return runs

    def cookie_header(self, site, min_valid="1s", wait="30s", client=None):
        """(status, Cookie header text) the daemon serves for `site`."""
        client = client or SocketClient(self.socket_path)
        return client.request("GET", f"/v1/sites/{site}/cookies?min_valid={min_valid}&wait={wait}")

    def stored_cookie_header(self, site):
        """The Cookie header of the session stored in the vault, read by the CLI with no daemon running:
        (exit status, header text, stderr)."""
        result = subprocess.run([os.path.join(self.bin_path, "sessionkeeper"), "cookie", site, "--config", self.config_path],
                                cwd=self.folder, env=self.env(), capture_output=True, text=True, timeout=60)
        return result.returncode, result.stdout.strip(), result.stderr.strip()

    def temporary_files(self, live_pid=None):
        """Temporary files (`NAME.tmp-PID-RANDOM`, Platform.DurableFile) anywhere under the folder whose writer is
        not `live_pid`."""
        left = []
        for folder, _, files in os.walk(self.folder):
            for name in files:
                if ".tmp-" not in name:
                    continue
                pid = name.split(".tmp-", 1)[1].split("-", 1)[0]
                if live_pid is not None and pid == str(live_pid):
                    continue
                left.append(os.path.relpath(os.path.join(folder, name), self.folder))
        return left

    def cleanup(self):
        self.stop()
        subprocess.run(["rm", "-rf", self.folder])


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def resources(pid):
    """Open fds, threads and VmRSS (KiB) of a process."""
    return {"fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": proc_status(pid, "Threads"),
            "rss_kib": proc_status(pid, "VmRSS")}


def mean(values):
    return sum(values) / len(values) if values else 0.0
