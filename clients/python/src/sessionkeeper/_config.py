"""Where the daemon's socket is, found as the `sessionkeeper` CLI finds it (SPEC sections 2 and 9).

The order: the `socket=` argument, then `$SESSIONKEEPER_SOCKET`, then config.yaml's `socket.path`, the config
being `$SESSIONKEEPER_CONFIG`, else `./config.yaml`, else `$XDG_CONFIG_HOME/sessionkeeper/config.yaml`
(`~/.config` when XDG_CONFIG_HOME is unset). Without `socket.path` the socket is
`$XDG_RUNTIME_DIR/sessionkeeper.sock` when XDG_RUNTIME_DIR is set (and absolute), else `sessionkeeper.sock` in
`state_dir` (`.state` by default). Paths in config.yaml are relative to its folder; `~/` is `$HOME`.

Of config.yaml only the two keys `state_dir` and `socket.path` are read, by the small strict reader below (the
standard library has no YAML parser, and the client should need nothing beyond `requests`). It reads the YAML a
person writes for those keys: block or one-line flow mappings, plain, single- and double-quoted scalars and
comments. Anything else in those two keys (anchors, aliases, tags, block scalars, a mapping spread over lines in
flow style) is refused with the file, the line and what to do, never guessed at; the other keys are skipped
unread. `sessionkeeper check` validates the whole file.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Dict, List, Mapping, Optional, Tuple

from .errors import ConfigError

SOCKET_FILE_NAME = "sessionkeeper.sock"
DEFAULT_STATE_DIR = ".state"
# The most the CLI reads of a config file; a larger one is not a config file.
MAXIMUM_CONFIG_BYTES = 1 << 20


def locate_socket(socket: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None) -> str:
    """The daemon's socket path: `socket`, else `$SESSIONKEEPER_SOCKET`, else from config.yaml."""
    return locate_daemon(socket, environ, cwd)[0]


def locate_daemon(socket: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None) -> Tuple[str, Optional[int]]:
    """The daemon's socket path (as `locate_socket`) and the daemon's user: the owner of config.yaml's
    `state_dir`, when a config file is found (None otherwise). A server at the socket is believed when it runs as
    root, as this user, or as that user while it owns the socket file (`_transport.check_server`)."""
    env = os.environ if environ is None else environ
    folder = os.getcwd() if cwd is None else cwd
    named = os.fspath(socket) if socket else env.get("SESSIONKEEPER_SOCKET")
    if named:
        try:
            config: Optional[str] = locate_config(env, folder)
        except ConfigError:
            config = None
        return named, daemon_uid_from_config(config, env) if config else None
    config = locate_config(env, folder)
    return socket_path_from_config(config, env), daemon_uid_from_config(config, env)


def daemon_uid_from_config(path: str, environ: Mapping[str, str]) -> Optional[int]:
    """The owner of the `state_dir` that config.yaml at `path` names; None when it cannot be read."""
    try:
        keys = read_socket_keys(read_config_text(path), path)
    except ConfigError:
        return None
    state_dir = keys.get("state_dir")
    state = resolve_config_path(state_dir[0] if state_dir else DEFAULT_STATE_DIR, os.path.dirname(path), environ.get("HOME"))
    try:
        return os.stat(state).st_uid
    except OSError:
        return None


def owned_by_another(path: str) -> bool:
    """Whether the file at `path` (the link, or the file it leads to) belongs to a user other than this process's."""
    try:
        link = os.lstat(path)
    except OSError:
        return False
    try:
        target_uid = os.stat(path).st_uid
    except OSError:
        target_uid = link.st_uid
    return link.st_uid != os.geteuid() or target_uid != os.geteuid()


def locate_config(environ: Mapping[str, str], cwd: str) -> str:
    """config.yaml as SPEC section 9 orders it; a named file must exist, the fallbacks are taken when they do."""
    home = environ.get("HOME")

    def resolved(path: str) -> str:
        if path.startswith("~/") and home:
            path = home + path[1:]
        return normalize(path if path.startswith("/") else cwd + "/" + path)

    named = environ.get("SESSIONKEEPER_CONFIG")
    if named:
        path = resolved(named)
        if not os.path.lexists(path):
            raise ConfigError(f"$SESSIONKEEPER_CONFIG names {path}, which does not exist")
        return path
    local = resolved("config.yaml")
    tried = [local]
    config_home = environ.get("XDG_CONFIG_HOME")
    if not (config_home and config_home.startswith("/")):
        config_home = os.path.join(home, ".config") if home else None
    if config_home:
        tried.append(os.path.join(config_home, "sessionkeeper", "config.yaml"))
    # The current folder may be anyone's (/tmp, a shared checkout): a config.yaml there that another user owns
    # would choose the socket this client talks to, so it is passed over, as the CLI passes it over.
    ignored = [local] if owned_by_another(local) else []
    for path in tried:
        if os.path.exists(path) and path not in ignored:
            return path
    passed_over = "".join(f"{path} belongs to another user and was ignored; " for path in ignored)
    raise ConfigError(
        "cannot find the daemon's socket: no socket= given, $SESSIONKEEPER_SOCKET is unset, and there is no "
        f"config.yaml (tried {', '.join(tried)}); {passed_over}pass socket=, set SESSIONKEEPER_SOCKET or SESSIONKEEPER_CONFIG")


def socket_path_from_config(path: str, environ: Mapping[str, str]) -> str:
    """The socket that config.yaml at `path` names, or its default."""
    text = read_config_text(path)
    keys = read_socket_keys(text, path)
    folder = os.path.dirname(path)
    home = environ.get("HOME")
    state_dir = keys.get("state_dir")
    state = resolve_config_path(state_dir[0] if state_dir else DEFAULT_STATE_DIR, folder, home)
    socket_path = keys.get("socket.path")
    if socket_path is not None:
        return resolve_config_path(socket_path[0], folder, home)
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and runtime.startswith("/"):
        return os.path.join(runtime, SOCKET_FILE_NAME)
    return os.path.join(state, SOCKET_FILE_NAME)


def read_config_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAXIMUM_CONFIG_BYTES + 1)
    except OSError as problem:
        raise ConfigError(f"{path}: cannot read the config file: {problem.strerror or problem}") from None
    if len(data) > MAXIMUM_CONFIG_BYTES:
        raise ConfigError(f"{path}: the file is larger than 1 MiB, the most a config file may hold")
    if b"\0" in data:
        raise ConfigError(f"{path}: the file contains a NUL byte; it is not a YAML text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise ConfigError(f"{path}: not UTF-8 text (byte {problem.start})") from None


def resolve_config_path(text: str, folder: str, home: Optional[str]) -> str:
    """A config path made absolute as the CLI makes it: `~` under HOME, relative against the config's folder."""
    if (text == "~" or text.startswith("~/")) and home:
        text = home + text[1:]
    return normalize(text if text.startswith("/") else folder + "/" + text)


def normalize(path: str) -> str:
    """`.`, `..` and repeated slashes removed lexically, symbolic links untouched (as the CLI does)."""
    parts: List[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


# MARK: the reader of `state_dir` and `socket.path`

#: Makes the error for a line of the file: fail(line, problem).
Fail = Callable[[int, str], ConfigError]

_WANTED = {"state_dir", "socket"}
_KEY = re.compile(r"""^(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s'"#{}\[\],&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s+(?P<value>.*))?$""")
_UNSUPPORTED_START = "&*!|>%@`"


def read_socket_keys(text: str, path: str) -> Dict[str, Tuple[str, int]]:
    """`state_dir` and `socket.path` of config text, each with its line; a key that is absent, empty of value or
    null is left out (its default applies). Raises ConfigError naming `path` and the line for what it cannot read
    with certainty."""
    found: Dict[str, Tuple[str, int]] = {}
    seen_top: Dict[str, int] = {}
    seen_socket: Dict[str, int] = {}
    current: Optional[str] = None
    socket_indent: Optional[int] = None
    skipping_flow = 0
    started = False

    def fail(line: int, problem: str) -> ConfigError:
        return ConfigError(
            f"{path}:{line}: {problem}; the client reads only state_dir and socket.path, in plain YAML "
            "(or pass socket= / set SESSIONKEEPER_SOCKET)")

    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw).rstrip()
        if skipping_flow:
            skipping_flow += _depth_change(line)
            continue
        if not line.strip():
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise fail(number, "a tab in the indentation")
        if line in ("---", "...") or line.startswith("--- "):
            if line == "..." or started:
                break
            started = True
            continue
        started = True
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0:
            match = _KEY.match(body)
            if not match:
                raise fail(number, "expected a 'key: value' at the top of the file")
            key = _scalar(match.group("key"), number, fail) or ""
            if key in seen_top:
                raise fail(number, f"duplicate key '{key}' (first defined at line {seen_top[key]})")
            seen_top[key] = number
            value = match.group("value")
            current = key if key in _WANTED else None
            socket_indent = None
            if current is None:
                if key == "<<":
                    raise fail(number, "a merge key ('<<') at the top of the file")
                if value and value.lstrip()[:1] in "{[":
                    skipping_flow = _depth_change(value)
                continue
            if key == "state_dir":
                if value is not None:
                    scalar = _scalar(value, number, fail)
                    if scalar is not None:
                        found["state_dir"] = (_non_empty(scalar, "state_dir", number, fail), number)
                continue
            # socket:
            if value is None:
                continue
            if value.startswith("{"):
                for child, child_value in _flow_mapping(value, number, fail):
                    if child in seen_socket:
                        raise fail(number, f"duplicate key 'socket.{child}'")
                    seen_socket[child] = number
                    if child == "path":
                        scalar = _scalar(child_value, number, fail)
                        if scalar is not None:
                            found["socket.path"] = (_non_empty(scalar, "socket.path", number, fail), number)
                current = None
                continue
            if _scalar(value, number, fail) is not None:
                raise fail(number, "socket: expected a mapping (path, mode, group, allow_uids)")
            continue
        if current is None:
            continue
        if current == "state_dir":
            raise fail(number, "state_dir: a value spread over several lines")
        # A line inside `socket:`.
        if socket_indent is None:
            socket_indent = indent
        if indent > socket_indent:
            continue
        if indent < socket_indent:
            raise fail(number, "socket: inconsistent indentation")
        if body.startswith("- "):
            raise fail(number, "socket: expected a mapping (path, mode, group, allow_uids), found a list")
        match = _KEY.match(body)
        if not match:
            raise fail(number, "socket: expected 'key: value'")
        child = _scalar(match.group("key"), number, fail) or ""
        if child in seen_socket:
            raise fail(number, f"duplicate key 'socket.{child}' (first defined at line {seen_socket[child]})")
        seen_socket[child] = number
        value = match.group("value")
        if child == "path" and value is not None:
            scalar = _scalar(value, number, fail)
            if scalar is not None:
                found["socket.path"] = (_non_empty(scalar, "socket.path", number, fail), number)
        elif child == "path":
            raise fail(number, "socket.path: expected the path on the same line")
    return found


def _non_empty(value: str, key: str, line: int, fail: Fail) -> str:
    if not value.strip():
        raise fail(line, f"{key} is empty")
    return value


def _strip_comment(line: str) -> str:
    """The line without a `#` comment (one at the start or after a blank, outside quotes)."""
    quote = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote == '"':
            if char == "\\":
                index += 1
            elif char == '"':
                quote = None
        elif quote == "'":
            if char == "'":
                quote = None
        elif char in "\"'" and (index == 0 or line[index - 1] in " \t:{[,"):
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
        index += 1
    return line


def _depth_change(text: str) -> int:
    """How many flow brackets `text` opens and leaves open (outside quotes)."""
    depth = 0
    quote = None
    escaped = False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif quote == '"' and char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return depth


def _scalar(text: str, line: int, fail: Fail) -> Optional[str]:
    """A one-line scalar's value; None for null (empty, `~`, `null`)."""
    text = text.strip()
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text.startswith('"'):
        if len(text) < 2 or not text.endswith('"') or _unescaped_quote(text[1:-1]):
            raise fail(line, "a double-quoted value that does not end on its line")
        return _double_quoted(text[1:-1], line, fail)
    if text.startswith("'"):
        inner = text[1:-1]
        if len(text) < 2 or not text.endswith("'") or "'" in inner.replace("''", ""):
            raise fail(line, "a single-quoted value that does not end on its line")
        return inner.replace("''", "'")
    if text[0] in _UNSUPPORTED_START:
        raise fail(line, f"a value starting with '{text[0]}' (anchors, aliases, tags and block scalars are not read here)")
    if text[0] in "{[":
        raise fail(line, "a collection where a single value belongs")
    return text


def _unescaped_quote(inner: str) -> bool:
    escaped = False
    for char in inner:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            return True
    return escaped


_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0", " ": " ", "a": "\a",
            "b": "\b", "e": "\x1b", "f": "\f", "v": "\v", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def _double_quoted(inner: str, line: int, fail: Fail) -> str:
    out: List[str] = []
    index = 0
    while index < len(inner):
        char = inner[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        code = inner[index + 1] if index + 1 < len(inner) else ""
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            index += 2
        elif code in _HEX_ESCAPES:
            digits = inner[index + 2: index + 2 + _HEX_ESCAPES[code]]
            if len(digits) != _HEX_ESCAPES[code] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise fail(line, f"a bad \\{code} escape in a double-quoted value")
            out.append(chr(int(digits, 16)))
            index += 2 + len(digits)
        else:
            raise fail(line, f"an unknown escape '\\{code}' in a double-quoted value")
    return "".join(out)


def _flow_mapping(text: str, line: int, fail: Fail) -> List[Tuple[str, str]]:
    """The `key: value` pairs of a one-line flow mapping `{a: 1, b: [2, 3]}` (values as written)."""
    text = text.strip()
    if not text.endswith("}") or _depth_change(text) != 0:
        raise fail(line, "socket: a flow mapping ('{...}') must end on its line")
    parts: List[str] = []
    depth = 0
    quote = None
    current: List[str] = []
    escaped = False
    for char in text[1:-1]:
        if quote:
            if escaped:
                escaped = False
            elif quote == '"' and char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    pairs: List[Tuple[str, str]] = []
    for part in parts:
        if not part.strip():
            continue
        match = _KEY.match(part.strip())
        if not match:
            raise fail(line, f"socket: expected 'key: value' in the flow mapping, found '{part.strip()}'")
        key = _scalar(match.group("key"), line, fail)
        pairs.append((key or "", match.group("value") or ""))
    return pairs
