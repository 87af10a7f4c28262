"""Run a documentation block as written, with every ``beirx`` command of it executed in this (warm) process.

A shell block runs in a real ``bash``, so its variables, redirections, pipes, ``&&`` and globs behave as a
reader's shell would; but ``beirx`` on its ``PATH`` is a small client that hands its argv, working directory and
environment to this process over a Unix socket, where ``beirx.cli.main(argv)`` runs and its exit code, stdout and
stderr go back. Each command would otherwise start a Python that imports torch and loads its model again (about
70% of the run blocks' time); here the imports and loaded models carry over from one command to the next. A
Python block is executed in this process the same way (its own globals, the block's folder and environment).
"""

from __future__ import annotations

import io
import json
import logging
import os
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

CLIENT = '''\
import json, os, socket, struct, sys
def _recv(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            sys.exit("beirx (docs test client): the test process closed the connection")
        data += chunk
    return data
sock = socket.socket(socket.AF_UNIX)
sock.connect(os.environ["BEIRX_DOCS_SOCKET"])
body = json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
sock.sendall(struct.pack(">I", len(body)) + body)
reply = json.loads(_recv(sock, struct.unpack(">I", _recv(sock, 4))[0]))
sys.stdout.write(reply["stdout"]); sys.stdout.flush()
sys.stderr.write(reply["stderr"]); sys.stderr.flush()
sys.exit(reply["rc"])
'''


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    calls: list[tuple[list[str], int, float]] = field(default_factory=list)
    """Each in-process ``beirx`` call: argv, exit code, seconds."""


def _hub_settings(env: dict[str, str]) -> dict[str, object]:
    """What huggingface_hub would have read from ``env`` had it been imported under it: it reads its cache
    folder and offline mode once, at import, into ``huggingface_hub.constants``."""
    home = env.get("HF_HOME", os.path.join(env.get("HOME", "~"), ".cache", "huggingface"))
    return {"HF_HUB_CACHE": env.get("HF_HUB_CACHE", os.path.join(home, "hub")),
            "HF_HUB_OFFLINE": env.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")}


def _in_process(run, cwd: str, env: dict[str, str], argv0: list[str]) -> tuple[int, str, str]:
    """``run()`` with the given folder, environment and ``sys.argv``, its stdout/stderr captured, and everything
    it changed in the process (environment, folder, root logger, huggingface_hub's settings) put back
    afterwards."""
    from huggingface_hub import constants as hub

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    settings = _hub_settings(env)
    saved_hub = {name: getattr(hub, name) for name in settings}
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.argv = argv0
        for name, value in settings.items():
            setattr(hub, name, value)
        root.handlers = []  # so beirx's logging.basicConfig writes to this command's stderr
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = run()
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # noqa: BLE001 - reported as the command's failure, like an uncaught error
                traceback.print_exc()
                rc = 1
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = saved_handlers, saved_level
        for name, value in saved_hub.items():
            setattr(hub, name, value)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return int(rc or 0), out.getvalue(), err.getvalue()


def _beirx(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[int, str, str]:
    from beirx.cli import main

    return _in_process(lambda: main(argv), cwd, env, ["beirx", *argv])


def run_python(text: str, where: str, cwd: Path, env: dict[str, str]) -> Outcome:
    code = compile(text, where, "exec")
    rc, out, err = _in_process(lambda: exec(code, {"__name__": "__main__"}), str(cwd), env, [where])
    return Outcome(rc, out, err)


def _recv(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the beirx client closed the connection")
        data += chunk
    return data


def run_shell(text: str, cwd: Path, env: dict[str, str], timeout: float) -> Outcome:
    """``bash -e -o pipefail -c TEXT`` in ``cwd``, its ``beirx`` commands served by this process."""
    scratch = Path(tempfile.mkdtemp(prefix="bxdocs-"))  # short: a Unix socket path has at most 107 bytes
    (scratch / "bin").mkdir()
    client = scratch / "bin" / "beirx"
    client.write_text(f"#!{sys.executable} -S\n{CLIENT}", encoding="utf-8")
    client.chmod(0o755)
    path = scratch / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.setblocking(False)
    shell_env = {**env, "PATH": f"{scratch / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}",
                 "BEIRX_DOCS_SOCKET": str(path)}
    calls: list[tuple[list[str], int, float]] = []
    with open(scratch / "out", "w+", encoding="utf-8") as out, open(scratch / "err", "w+", encoding="utf-8") as err:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=shell_env,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(server, selectors.EVENT_READ)
            try:
                while proc.poll() is None:
                    if time.monotonic() > deadline:
                        proc.kill()
                        raise TimeoutError(f"the block did not finish in {timeout} s")
                    if not sel.select(timeout=0.1):
                        continue
                    conn, _ = server.accept()
                    with conn:
                        conn.setblocking(True)
                        request = json.loads(_recv(conn, struct.unpack(">I", _recv(conn, 4))[0]))
                        start = time.perf_counter()
                        rc, stdout, stderr = _beirx(request["argv"], request["cwd"], request["env"])
                        calls.append((request["argv"], rc, time.perf_counter() - start))
                        body = json.dumps({"rc": rc, "stdout": stdout, "stderr": stderr}).encode()
                        conn.sendall(struct.pack(">I", len(body)) + body)
            finally:
                server.close()
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return Outcome(proc.returncode, out.read(), err.read(), calls)
