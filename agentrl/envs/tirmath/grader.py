"""The math-verify grader process: ``python -m agentrl.envs.tirmath.grader``, driven over pipes.

math-verify's own timeout uses ``signal.alarm`` (main thread only) and sympy can hang on hostile
input, so comparisons run in a helper process with a deadline that is killed and replaced on
expiry. The helper is started as this module, in a fresh interpreter: it never imports the
caller's ``__main__`` (``multiprocessing``'s "spawn" does, which broke programs read from standard
input and re-ran scripts without an ``if __name__ == "__main__"`` guard), it does not inherit the
caller's threads and locks (as "fork" would), and it works from an embedded interpreter, where
``sys.executable`` is the host program rather than Python.

The protocol is one JSON line each way: ``["<prediction>", "<gold>"]`` in, then
``["ok", true|false]`` or ``["error", "<message>"]`` out. The first line out is ``["ready", null]``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

__all__ = ["GraderProcess", "main", "python_executable"]

#: Environment variable naming the Python interpreter to run the grader with (else it is found).
PYTHON_ENV_VAR = "AGENTRL_GRADER_PYTHON"

# Run in the child with -I (no PYTHONPATH, no user site, no current directory): it takes the
# caller's sys.path from argv, so it imports the same agentrl, math-verify and sympy.
_BOOTSTRAP = (
    "import json, runpy, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "runpy.run_module('agentrl.envs.tirmath.grader', run_name='__main__', alter_sys=True)"
)


def main() -> None:
    """The grader loop: answer each request line until standard input closes."""
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # anything else printed (sympy, math-verify) goes to stderr, not into the protocol
    from agentrl.envs.tirmath.verify import answers_equal

    with contextlib.suppress(Exception):  # import and warm math-verify and sympy now, not in the first deadline
        answers_equal("x^2", "x*x", timeout_s=None)
    protocol.write(json.dumps(["ready", None]) + "\n")
    for line in sys.stdin:
        try:
            prediction, gold = json.loads(line)
            reply = ["ok", bool(answers_equal(str(prediction), str(gold), timeout_s=None))]
        except Exception as exc:  # any failure of the comparison means "not shown equal"
            reply = ["error", f"{type(exc).__name__}: {exc}"[:300]]
        protocol.write(json.dumps(reply) + "\n")


def _looks_like_python(path: str | None) -> bool:
    return bool(path) and Path(str(path)).name.lower().startswith("python") and os.access(str(path), os.X_OK)


def python_executable() -> str:
    """The Python interpreter to run the grader with.

    ``$AGENTRL_GRADER_PYTHON`` if set; else ``sys.executable`` when it is a Python interpreter;
    else (an embedded interpreter, whose ``sys.executable`` is the host program) the interpreter
    of the same installation (``sys._base_executable``, ``<exec_prefix>/bin/python3.X``, or
    ``python3.X`` on ``PATH``).

    Raises:
        RuntimeError: no interpreter was found; the message says to set ``$AGENTRL_GRADER_PYTHON``.
    """
    override = os.environ.get(PYTHON_ENV_VAR)
    if override:
        return override
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        sys.executable,
        getattr(sys, "_base_executable", None),
        os.path.join(sys.exec_prefix, "bin", version),
        os.path.join(sys.base_exec_prefix, "bin", version),
        shutil.which(version),
    ]
    for candidate in candidates:
        if _looks_like_python(candidate):
            return str(candidate)
    raise RuntimeError(
        f"cannot find a Python interpreter for the math-verify grader (sys.executable is {sys.executable!r}); "
        f"set ${PYTHON_ENV_VAR} to one, e.g. {PYTHON_ENV_VAR}=/usr/bin/{version}"
    )


class GraderProcess:
    """One grader process, started on first use and restarted after a timeout or a crash; thread-safe.

    >>> grader = GraderProcess()
    >>> grader.compare("x^2+2x+1", "(x+1)^2", timeout_s=30)
    (True, '')
    >>> grader.close()
    """

    def __init__(self, start_timeout_s: float = 60.0) -> None:
        """Nothing starts until the first :meth:`compare`."""
        self.start_timeout_s = start_timeout_s
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        self._owner = os.getpid()

    def compare(self, prediction: str, gold: str, timeout_s: float) -> tuple[bool | None, str]:
        """``(equal, "")``, ``(False, error)`` when the comparison raised, ``(None, why)`` past the deadline."""
        with self._lock:
            if self._owner != os.getpid():  # a forked child: the process belongs to the parent
                self._process, self._stderr, self._buffer, self._owner = None, None, b"", os.getpid()
            if self._process is None or self._process.poll() is not None:
                self._start()
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write((json.dumps([prediction, gold]) + "\n").encode("utf-8"))
                self._process.stdin.flush()
                line = self._read_line(timeout_s)
            except (BrokenPipeError, EOFError) as exc:
                message = self._crash_report(exc)
                self._stop()
                return False, message
            if line is None:
                self._stop()
                return None, f"verification took over {timeout_s:g}s and was stopped"
            status, value = json.loads(line)
            return (bool(value), "") if status == "ok" else (False, str(value))

    def close(self) -> None:
        """Stop the process (a later :meth:`compare` starts a new one); safe to call twice."""
        with self._lock:
            self._stop()

    # -- internals -------------------------------------------------------------------------
    def _start(self) -> None:
        self._stop()
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [python_executable(), "-I", "-c", _BOOTSTRAP, json.dumps(sys.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            close_fds=True,
        )
        self._buffer = b""
        try:
            line = self._read_line(self.start_timeout_s)
        except EOFError as exc:
            message = self._crash_report(exc)
            self._stop()
            raise RuntimeError(f"the math-verify grader process did not start: {message}") from None
        if line is None or json.loads(line)[0] != "ready":
            self._stop()
            raise RuntimeError(f"the math-verify grader process did not start within {self.start_timeout_s:g}s")

    def _read_line(self, timeout_s: float) -> str | None:
        """The next line from the process, ``None`` past the deadline; ``EOFError`` if it exited."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("the grader process exited")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8")

    def _crash_report(self, exc: BaseException) -> str:
        code = self._process.poll() if self._process is not None else None
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            tail = self._stderr.read()[-600:].decode("utf-8", "replace").strip()
        return f"the grader process failed ({type(exc).__name__}, exit code {code}){': ' + tail if tail else ''}"

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait(5)
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self._buffer = b""

    def __del__(self) -> None:
        process = getattr(self, "_process", None)
        if process is not None and getattr(self, "_owner", None) == os.getpid():
            process.kill()


if __name__ == "__main__":
    main()
