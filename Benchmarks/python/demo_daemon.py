"""What the benchmarks share: the release build, udsload built from its sources, the demo site's login as a site file, the daemon's memory as
the kernel counts it, and (DemoDaemon) the release demo site and a release daemon logged into it, in a private
temporary folder, which the start-up benchmark (Benchmarks/run-startup) runs client commands against."""
import os
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PASSWORD = "startup-Passw0rd"


# udsload's sources: ../shared/tools/udsload beside the repository, or UDSLOAD_DIR.
UDSLOAD_SOURCES = os.environ.get("UDSLOAD_DIR") or os.path.join(ROOT, "..", "shared", "tools", "udsload")


def build_udsload(scratch):
    """udsload built in a copy of its sources under `scratch`; returns the binary's path."""
    if not os.path.isdir(UDSLOAD_SOURCES):
        raise SystemExit("needs ../shared/tools/udsload beside the repository (or UDSLOAD_DIR=its folder)")
    copy = os.path.join(scratch, "udsload")
    shutil.copytree(UDSLOAD_SOURCES, copy)
    subprocess.run(["make", "-s", "-C", copy, "udsload"], check=True)
    return os.path.join(copy, "udsload")


def build_release(*products):
    """Builds `products` with scripts/build-release (the way scripts/install does) and returns their folder."""
    return subprocess.run([os.path.join(ROOT, "scripts", "build-release"), *products], check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()


def build_floor():
    """Benchmarks/Sources/NIOFloor in release mode, as the other benchmark executables are built: SwiftNIO's own
    HTTP/1 pipeline on one event loop answering from a dictionary, with none of the daemon's work."""
    flags = ["-c", "release", "--static-swift-stdlib"]
    subprocess.run(["swift", "build", *flags, "--product", "NIOFloor"], cwd=os.path.dirname(HERE),
                   check=True, stdout=subprocess.DEVNULL)
    folder = subprocess.run(["swift", "build", *flags, "--show-bin-path"], cwd=os.path.dirname(HERE), check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    return os.path.join(folder, "NIOFloor")


def start_floor(binary, work, root, cpu=None):
    """The floor on `work`/floor.sock serving the files under `root` (ROOT/v1/sites/x/cookies answers
    /v1/sites/x/cookies), on CPU `cpu` when given; returns the process and the socket's path."""
    sock = os.path.join(work, "floor.sock")
    pinning = ["taskset", "-c", str(cpu)] if cpu is not None else []
    floor = subprocess.Popen(pinning + [binary, sock, root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(sock):
            return floor, sock
        time.sleep(0.1)
    floor.kill()
    raise SystemExit("the SwiftNIO floor did not start")


def build_go_peer():
    """Benchmarks/go/peer.go built with Debian's golang-go (`apt-get install golang-go`) into Benchmarks/.build."""
    out = os.path.join(os.path.dirname(HERE), ".build", "go-peer")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    env = dict(os.environ, GO111MODULE="off", GOCACHE=os.path.join(os.path.dirname(HERE), ".build", "go-cache"))
    subprocess.run(["go", "build", "-o", out, os.path.join(os.path.dirname(HERE), "go", "peer.go")], check=True, env=env)
    return out


def start_go_peer(binary, work, arguments, cpu=None):
    """The Go peer with GOMAXPROCS=1: `files` on `work`/go.sock (returns that path), or `proxy` on the address
    `arguments` name (returns None); on CPU `cpu` when given. Returns the process and the socket's path."""
    sock = os.path.join(work, "go.sock") if arguments[0] == "files" else None
    command = [binary, arguments[0]] + ([sock] if sock else []) + arguments[1:]
    pinning = ["taskset", "-c", str(cpu)] if cpu is not None else []
    peer = subprocess.Popen(pinning + command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, GOMAXPROCS="1"))
    for _ in range(100):
        if sock is None or os.path.exists(sock):
            return peer, sock
        time.sleep(0.1)
    peer.kill()
    raise SystemExit("the Go peer did not start")


def read_from_disk_next_time(path):
    """Drops `path`'s pages from the page cache, so the next start reads it from disk, as after a reboot or
    after scripts/install. A file just written (by the linker, by cp) sits in the cache in large folios, and
    the kernel maps a whole folio on a fault: the same binary then shows up to 2 MB more resident code."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)


def status_field(pid, name):
    """A number field of /proc/PID/status (`VmRSS`, `RssAnon`, `Threads`...), in its unit; 0 when it is missing."""
    return _field(f"/proc/{pid}/status", name)


def smaps_field(pid, name):
    """A field of /proc/PID/smaps_rollup (`Pss`, `Pss_Anon`, `Pss_File`...) in KiB; 0 when it is missing."""
    return _field(f"/proc/{pid}/smaps_rollup", name)


def _field(path, name):
    with open(path) as lines:
        for line in lines:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def demo_site_yaml(port):
    """The demo site's form login as a site file, against the demo site on `port` (no check, no keepalive)."""
    return f"""base_url: http://127.0.0.1:{port}
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
cookies: {{essential: [demo_session]}}
"""


def start_demo_site(bin_path, folder, password, max_age=3600):
    """Starts the release demo site on a free port (sessions living `max_age` seconds); returns (process, port)."""
    port_file = os.path.join(folder, "demo.port")
    demo = subprocess.Popen([os.path.join(bin_path, "demo-site"), "--port", "0", "--port-file", port_file,
                             "--session-max-age", str(max_age)],
                            env={"PATH": "/usr/bin:/bin", "DEMO_PASSWORD": password},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            with open(port_file) as file:
                return demo, int(file.read().strip())
        time.sleep(0.1)
    demo.terminate()
    raise SystemExit("demo-site did not start")


class DemoDaemon:
    """`with DemoDaemon(bin_path) as world:` starts the demo site on a free port and `sessionkeeper run` on a
    config.yaml of its own, waits until `sessionkeeper cookie demo` answers, and stops both (and removes the
    folder) on exit. `daemon_env` is added to the daemon's environment only (a tracer's LD_PRELOAD);
    `socket_settings` are more keys of config.yaml's `socket:` (`{"max_connections": 4096}`)."""

    def __init__(self, bin_path, daemon_env=None, socket_settings=None):
        self.sk = os.path.join(bin_path, "sessionkeeper")
        self.demo_site = os.path.join(bin_path, "demo-site")
        self.daemon_env = daemon_env or {}
        self.socket_settings = socket_settings or {}
        self.work = tempfile.mkdtemp(prefix="sessionkeeper-demo-")
        self.env = {"PATH": "/usr/bin:/bin", "HOME": self.work, "DEMO_PASSWORD": PASSWORD}
        self.sock = f"{self.work}/state/sk.sock"
        self.port = None
        self.demo = None
        self.daemon = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        work = self.work
        self.demo = subprocess.Popen([self.demo_site, "--port", "0", "--port-file", f"{work}/port"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(f"{work}/port") and os.path.getsize(f"{work}/port") > 0:
                break
            time.sleep(0.1)
        self.port = int(open(f"{work}/port").read().strip())
        os.makedirs(f"{work}/sites")
        with open(f"{work}/config.yaml", "w") as config:
            socket_keys = "".join(f", {key}: {value}" for key, value in self.socket_settings.items())
            config.write(f"sites_dir: sites\nstate_dir: state\nsocket: {{path: {self.sock}{socket_keys}}}\n"
                         "vault: {key: {file: state/master.key}}\n")
        site = open(os.path.join(ROOT, "sites", "demo.yaml")).read()
        with open(f"{work}/sites/demo.yaml", "w") as out:
            out.write(site.replace("http://127.0.0.1:8480", f"http://127.0.0.1:{self.port}"))
        log = open(f"{work}/daemon.log", "wb")
        self.daemon = subprocess.Popen([self.sk, "run", "--config", "config.yaml"], cwd=work,
                                       env=dict(self.env, **self.daemon_env), stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while self.run(["cookie", "demo", "--min-valid", "1s"]).returncode != 0:
            if time.monotonic() > deadline or self.daemon.poll() is not None:
                raise SystemExit(f"the daemon did not serve the demo session; see {work}/daemon.log")
            time.sleep(0.1)

    def run(self, arguments, env=None, stdout=subprocess.PIPE):
        """`sessionkeeper ARGUMENTS` in the folder, with `env` added."""
        return subprocess.run([self.sk, *arguments], cwd=self.work, env=dict(self.env, **(env or {})), stdout=stdout,
                              stderr=subprocess.PIPE)

    def write_jar(self):
        """The demo session as a Netscape cookie file in the folder; returns its path."""
        jar = f"{self.work}/jar.txt"
        with open(jar, "wb") as out:
            subprocess.run([self.sk, "cookie", "demo", "--format", "netscape"], cwd=self.work, env=self.env, stdout=out,
                           check=True)
        return jar

    def __exit__(self, *_):
        for process in (self.daemon, self.demo):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait()
        shutil.rmtree(self.work, ignore_errors=True)
