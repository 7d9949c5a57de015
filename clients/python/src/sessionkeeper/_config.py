"""Where the daemon's socket is and whose server there to believe, as the `sessionkeeper` CLI finds them (SPEC
sections 2 and 9).

The order: the `socket=` argument, then `$SESSIONKEEPER_SOCKET`, then config.yaml's `socket.path`. The client reads
no config file itself: `sessionkeeper config --json` (docs/CLI.md) says which config file the CLI takes (a
`./config.yaml` another user owns is passed over), the socket it names, and the daemon's user (the owner of its
`state_dir`), so the client and every CLI command agree by construction. The CLI is the `sessionkeeper` on the
PATH, which is there wherever a daemon runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, Mapping, Optional, Tuple

from .errors import ConfigError

#: The CLI asked for the config; found on the PATH.
CLI_NAME = "sessionkeeper"
#: How long the CLI may take to answer (it reads one small file).
CLI_TIMEOUT = 30.0
_GIVE_A_SOCKET = "pass socket= or set SESSIONKEEPER_SOCKET"


def locate_socket(socket: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None) -> str:
    """The daemon's socket path: `socket`, else `$SESSIONKEEPER_SOCKET`, else from config.yaml."""
    return locate_daemon(socket, environ, cwd)[0]


def locate_daemon(socket: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None) -> Tuple[str, Optional[int]]:
    """The daemon's socket path (as `locate_socket`) and the daemon's user: the owner of config.yaml's
    `state_dir`, when a config file is found (None otherwise). A server at the socket is believed when it runs as
    root, as this user, or as that user while it owns the socket file (`_transport.check_server`). `environ` and
    `cwd` are what the CLI is run with (this process's by default)."""
    env = os.environ if environ is None else environ
    named = os.fspath(socket) if socket else env.get("SESSIONKEEPER_SOCKET")
    if named:
        try:
            answer = resolved_config(env, cwd)
        except ConfigError:
            return named, None
        return named, answer["daemon_uid"]
    answer = resolved_config(env, cwd)
    return answer["socket"], answer["daemon_uid"]


def resolved_config(environ: Mapping[str, str], cwd: Optional[str]) -> Dict[str, Any]:
    """`sessionkeeper config --json` run with `environ` in `cwd`: `config`, `socket`, `state_dir` and `daemon_uid`
    (None when unknown). The CLI is looked for on `environ`'s PATH, else this process's."""
    search = environ["PATH"] if "PATH" in environ else os.environ.get("PATH", os.defpath)
    program = shutil.which(CLI_NAME, path=search)
    if program is None:
        raise ConfigError(f"cannot find the '{CLI_NAME}' program on the PATH to locate the daemon's socket; {_GIVE_A_SOCKET}")
    try:
        result = subprocess.run([program, "config", "--json"], env=dict(environ), cwd=cwd, capture_output=True, text=True,
                                timeout=CLI_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ConfigError(f"'{program} config --json' failed: {error}; {_GIVE_A_SOCKET}") from error
    if result.returncode != 0:
        said = result.stderr.strip().removeprefix(f"{CLI_NAME}: ")
        raise ConfigError(f"{said or f'{program} config --json exited {result.returncode}'}; {_GIVE_A_SOCKET}")
    try:
        answer = json.loads(result.stdout)
        socket, uid = answer["socket"], answer["daemon_uid"]
        if not isinstance(socket, str) or not (uid is None or isinstance(uid, int)):
            raise ValueError("socket is not text, or daemon_uid not a number")
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"'{program} config --json' answered what is not its JSON ({error}); {_GIVE_A_SOCKET}") from error
    return dict(answer)
