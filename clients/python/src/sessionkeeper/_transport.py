"""HTTP/1.1 over the daemon's Unix socket with the standard library: `http.client` with its connect replaced.

Connections are kept alive and reused, a few per socket path and process: a `Session` asks the daemon once per
request it sends, and a new connection costs a connect and the daemon's peer-credential look-up each time. A
connection the daemon closed while idle (it closes them after 60 s) is noticed on reuse and the request sent once
more on a new one. After a fork the child starts with no connections (the parent's are the parent's).
"""

from __future__ import annotations

import errno
import http.client
import os
import socket as _socket
import struct
import threading
from typing import Dict, List, Optional, Tuple

from .errors import DaemonError, DaemonNotRunningError, SessionKeeperError, UntrustedServerError

# Idle connections kept per socket path; more than this are closed after their answer.
POOL_SIZE = 4
# The most of an answer that is read (the daemon's answers are small; a cookie jar is kilobytes).
MAXIMUM_ANSWER_BYTES = 16 << 20


class ConnectFailed(OSError):
    """connect(2) on the socket failed: nothing listens there."""


def check_server(sock: _socket.socket, path: str, daemon_uid: Optional[int]) -> None:
    """Raises UntrustedServerError unless the process listening at `path` (SO_PEERCRED of the connected socket)
    runs as root, as this user, or as `daemon_uid` (the daemon's user as config.yaml says) while that user owns the
    socket file: any user's program may hold a socket path the daemon left free, and would read every request."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i")))
    me = os.geteuid()
    if uid in (0, me):
        return
    try:
        owner: Optional[int] = os.stat(path).st_uid
    except OSError:
        owner = None
    if daemon_uid is not None and uid == daemon_uid and owner == daemon_uid:
        return
    believed = ["root", f"you (uid {me})"]
    if daemon_uid is not None:
        believed.append(f"the daemon's user (uid {daemon_uid}, the owner of state_dir"
                        + ("" if owner == daemon_uid else ", who does not own the socket file") + ")")
    raise UntrustedServerError(
        f"the server on {path} runs as uid {uid}, which is neither {', '.join(believed[:-1])} nor {believed[-1]}; "
        "refusing to talk to it (another user's program may hold the socket path)", uid=uid)


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection to `localhost` whose connect opens the Unix socket at `path` and checks whose server
    listens there (`check_server`) before anything is sent."""

    def __init__(self, path: str, timeout: Optional[float], daemon_uid: Optional[int] = None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path
        self.daemon_uid = daemon_uid

    def connect(self) -> None:
        # sockaddr_un.sun_path holds 108 bytes on Linux, the terminating NUL included.
        if len(os.fsencode(self.socket_path)) > 107:
            raise ConnectFailed(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as problem:
            sock.close()
            raise ConnectFailed(problem.errno, problem.strerror) from None
        try:
            check_server(sock, self.socket_path, self.daemon_uid)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Answer:
    """A complete answer of the daemon."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class Transport:
    """Requests to one socket path, over pooled keep-alive connections."""

    def __init__(self, path: str, daemon_uid: Optional[int] = None) -> None:
        self.path = path
        self.daemon_uid = daemon_uid
        self._idle: List[UnixHTTPConnection] = []
        self._lock = threading.Lock()

    def request(self, method: str, target: str, body: Optional[bytes] = None,
                headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = 30.0) -> Answer:
        """Sends one request and reads its whole answer. Raises DaemonNotRunningError when nothing listens and
        DaemonError when the exchange fails."""
        for attempt in (0, 1):
            connection, reused = self._take(timeout)
            try:
                connection.request(method, target, body=body, headers=headers or {})
                response = connection.getresponse()
                data = response.read(MAXIMUM_ANSWER_BYTES + 1)
            except ConnectFailed as problem:
                connection.close()
                raise self.not_running(problem) from None
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as problem:
                connection.close()
                # A kept connection the daemon closed while it was idle: once more on a new one.
                if reused and attempt == 0:
                    continue
                raise DaemonError(f"the daemon at {self.path} closed the connection ({_reason(problem)})") from None
            except _socket.timeout:
                connection.close()
                raise DaemonError(
                    f"the daemon at {self.path} did not answer within {timeout:g} s") from None
            except (OSError, http.client.HTTPException) as problem:
                connection.close()
                raise DaemonError(f"the exchange with the daemon at {self.path} failed ({_reason(problem)})") from None
            if len(data) > MAXIMUM_ANSWER_BYTES:
                connection.close()
                raise DaemonError(f"the daemon at {self.path} answered more than {MAXIMUM_ANSWER_BYTES} bytes")
            if response.will_close:
                connection.close()
            else:
                self._give_back(connection)
            return Answer(response.status, response.headers, data)
        raise AssertionError("unreachable")

    def open_stream(self, method: str, target: str, timeout: Optional[float]) -> Tuple[UnixHTTPConnection, http.client.HTTPResponse]:
        """A request on a connection of its own, whose answer is read by the caller as it comes (events)."""
        connection = UnixHTTPConnection(self.path, timeout, self.daemon_uid)
        try:
            connection.request(method, target)
            return connection, connection.getresponse()
        except ConnectFailed as problem:
            connection.close()
            raise self.not_running(problem) from None
        except _socket.timeout:
            connection.close()
            raise DaemonError(f"the daemon at {self.path} did not answer within {timeout:g} s") from None
        except (OSError, http.client.HTTPException) as problem:
            connection.close()
            raise DaemonError(f"the exchange with the daemon at {self.path} failed ({_reason(problem)})") from None

    def not_running(self, problem: OSError) -> SessionKeeperError:
        """Says why nothing answers, in the CLI's words, and what to do: DaemonNotRunningError, or DaemonError when
        the socket is there but this user may not open it."""
        if problem.errno in (errno.EACCES, errno.EPERM):
            return DaemonError(
                f"cannot connect to {self.path}: permission denied; the socket's mode and group "
                "(socket.mode, socket.group in config.yaml) decide who may connect")
        reason = _CONNECT_REASONS.get(problem.errno or 0) or _reason(problem)
        return DaemonNotRunningError(
            f"no daemon answers: cannot connect to {self.path}: {reason}; start it with `sessionkeeper run` "
            "(or name its socket with socket= or SESSIONKEEPER_SOCKET)")

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self, timeout: Optional[float]) -> Tuple[UnixHTTPConnection, bool]:
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            return UnixHTTPConnection(self.path, timeout, self.daemon_uid), False
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection, True

    def _give_back(self, connection: UnixHTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < POOL_SIZE:
                self._idle.append(connection)
                return
        connection.close()


_CONNECT_REASONS = {
    errno.ENOENT: "no such socket",
    errno.ECONNREFUSED: "nothing listens on it",
    errno.ENOTSOCK: "it is not a socket",
    errno.ENAMETOOLONG: "the path is too long for a Unix socket (at most 107 bytes)",
    errno.ENOTDIR: "a part of the path is not a folder",
}


def _reason(problem: BaseException) -> str:
    if isinstance(problem, OSError) and problem.strerror:
        return problem.strerror
    return type(problem).__name__ if not str(problem) else f"{type(problem).__name__}: {problem}"


_transports: Dict[Tuple[str, Optional[int]], Transport] = {}
_transports_lock = threading.Lock()


def transport_for(path: str, daemon_uid: Optional[int] = None) -> Transport:
    """The process's one Transport for the socket at `path` (and the daemon's user it believes there)."""
    with _transports_lock:
        transport = _transports.get((path, daemon_uid))
        if transport is None:
            transport = _transports[(path, daemon_uid)] = Transport(path, daemon_uid)
        return transport


def _forget_after_fork() -> None:
    global _transports_lock
    _transports_lock = threading.Lock()
    for transport in _transports.values():
        transport._lock = threading.Lock()
        # The parent's sockets stay open for the parent; the child drops its references without a close that
        # would say nothing to the daemon anyway (the descriptor is shared).
        transport._idle = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
