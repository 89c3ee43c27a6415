"""``python -m MODULE ...``, ``python SCRIPT ...``, ``python -c CODE`` and a console script (``agentrl ...``) in a new
process that starts with torch and transformers imported: :func:`run` is :func:`subprocess.run` for the artifact
tests' command lines.

The artifact tests run each guide's training line, each example and each README block in an interpreter of its
own, as a user would. Importing torch and transformers took most of a short one: 8 of the 10 CPU-seconds of a
one-step ``agentrl train`` line, about 60 times a suite. Here, once per xdist worker, a server process imports
them (``PRELOAD``: third-party modules only, nothing of ``agentrl``, nothing run) and then forks one child per
command. The child is the command's own process, with its own session: it takes the command's working folder,
environment, ``sys.argv``, ``sys.path`` (the script's folder or the working folder first, then ``PYTHONPATH``) and
standard streams, runs the module, script or code as ``__main__``, and ends as an interpreter ends (non-daemon
threads joined, ``atexit`` run, streams flushed) but for the teardown of its modules; its exit status is the
command's.

What differs from a new interpreter is only what the preloaded modules read when they were imported. So a command
whose environment differs from the server's in a variable read at import time (``HF_*``, ``TORCH*``, ``OMP_*``,
``MPL*``, ``PYTHON*`` ...: ``IMPORT_TIME``) gets a new server, started with its settings. Anything not of those four
forms runs in a new interpreter, and with ``AGENTRL_COLD_PYTHON=1`` every command does (to check that the warm
start hides nothing).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: imported by the server before it forks: the heavy third-party modules that a training line, an example or a
#: README block imports (transformers imports most of its weight lazily, on first use of these)
PRELOAD = (
    "numpy",
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.masking_utils",
    "transformers.modeling_layers",
    "transformers.utils.type_validators",
    "torch.utils.tensorboard",
    "gymnasium",
    "PIL.Image",
    "matplotlib.figure",  # every training run draws its curves.png
    "matplotlib.backends.backend_agg",
)
#: environment variables that the preloaded modules (or the interpreter's start) read once, at import: a command
#: that sets one differently from the server gets a new server, started with its settings
IMPORT_TIME = re.compile(r"^(HF_|HUGGINGFACE_|TRANSFORMERS_|TORCH|PYTORCH_|OMP_|MKL_|OPENBLAS_|CUDA|PYTHON|MPL)")
#: CPU seconds of the commands this process ran through the server, reaped by the server (tests/conftest.py adds
#: them to the running test's CPU, as it counts the children a test reaps itself)
CPU_SECONDS = 0.0

_lock = threading.Lock()
_server: _Server | None = None


def _import_time_env(env: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in env.items() if IMPORT_TIME.match(key) and key != "PYTHONPATH"}


class _Server:
    """The forking server, a child of this process, fed one command at a time over its standard input."""

    def __init__(self, env: Mapping[str, str], preload: Sequence[str]) -> None:
        self.env, self.preload = _import_time_env(env), tuple(preload)
        self.children_cpu = 0.0
        server_env = {key: value for key, value in env.items() if key != "PYTHONPATH"}
        serve = f"import runpy; runpy.run_path({str(Path(__file__))!r}, run_name='__serve__')"
        self.process = subprocess.Popen(
            [sys.executable, "-c", serve, *self.preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server_env, cwd=tempfile.gettempdir(), text=True,
        )  # fmt: skip
        assert self._reply().get("ready"), "the warm-python server did not start"

    def _reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the warm-python server exited ({self.process.poll()})")
        return json.loads(line)

    def run(self, request: dict[str, Any], timeout: float | None) -> tuple[int, float, bool]:
        """``(exit status, CPU seconds, timed out)`` of one command."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        pid = self._reply()["pid"]
        done = threading.Event()
        timed_out = False

        def expire() -> None:
            nonlocal timed_out
            if not done.wait(timeout):
                timed_out = True
                try:
                    os.killpg(pid, signal.SIGKILL)  # the command's session: what it started goes too
                except ProcessLookupError:
                    pass

        watchdog = threading.Thread(target=expire, daemon=True)
        if timeout is not None:
            watchdog.start()
        result = self._reply()
        done.set()
        return result["returncode"], result["cpu"], timed_out

    def close(self) -> None:
        """Stop the server and reap it. Its children's CPU, counted in ``CPU_SECONDS`` as each ended, reaches this
        process's children's total now, with the server's own: it is taken off ``CPU_SECONDS`` so as to count once."""
        global CPU_SECONDS
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        CPU_SECONDS -= self.children_cpu
        self.children_cpu = 0.0


def _console_script(path: str) -> bool:
    """Whether ``path`` is a script that this interpreter runs (its first line is ``#!`` and a python of this
    interpreter's folder, such as the console scripts pip writes into a venv's ``bin/``)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    interpreter = Path(first[2:].decode(errors="replace").strip())
    here = Path(sys.executable)
    return interpreter.parent == here.parent and os.path.realpath(interpreter) == os.path.realpath(here)


def _request(args: Sequence[str]) -> dict[str, Any] | None:
    """The command as the server runs it, or ``None`` for one it does not (not this interpreter, other flags)."""
    if args and args[0] != sys.executable and _console_script(args[0]):
        return {"script": args[0], "argv": list(args[1:])}
    if len(args) < 2 or args[0] != sys.executable:
        return None
    if args[1] == "-m" and len(args) >= 3:
        return {"module": args[2], "argv": list(args[3:])}
    if args[1] == "-c" and len(args) >= 3:
        return {"code": args[2], "argv": list(args[3:])}
    if not args[1].startswith("-"):
        return {"script": args[1], "argv": list(args[2:])}
    return None


def run(
    args: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str], timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(args, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True)``, warm.

    Raises :class:`subprocess.TimeoutExpired` (with the output so far) when the command outlives ``timeout``.
    """
    global _server, CPU_SECONDS
    request = None if os.environ.get("AGENTRL_COLD_PYTHON", "") not in ("", "0") else _request(args)
    if request is None:
        return _cold(args, cwd=cwd, env=env, timeout=timeout)
    with _lock:
        if _server is not None and (
            _server.process.poll() is not None or (_server.env, _server.preload) != (_import_time_env(env), PRELOAD)
        ):
            _server.close()  # it ended, or it imported its modules under other settings than this command's
            _server = None
        if _server is None:
            _server = _Server(env, PRELOAD)
        with tempfile.TemporaryDirectory(prefix="agentrl-warm-") as folder:
            out, err = Path(folder, "stdout"), Path(folder, "stderr")
            request.update(cwd=str(Path(cwd).resolve()), env=dict(env), stdout=str(out), stderr=str(err))
            returncode, cpu, timed_out = _server.run(request, timeout)
            CPU_SECONDS += cpu
            _server.children_cpu += cpu
            stdout, stderr = out.read_text(errors="replace"), err.read_text(errors="replace")
    if timed_out:
        raise subprocess.TimeoutExpired(list(args), timeout or 0.0, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(list(args), returncode, stdout, stderr)


def _cold(
    args: Sequence[str], *, cwd: str | os.PathLike[str], env: Mapping[str, str], timeout: float | None
) -> subprocess.CompletedProcess[str]:
    """The command in a new interpreter (``TimeoutExpired`` carries text, as from the warm path)."""
    try:
        return subprocess.run(args, cwd=cwd, env=dict(env), timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired as expired:
        output, stderr = (
            part.decode(errors="replace") if isinstance(part, bytes) else part
            for part in (expired.output, expired.stderr)
        )
        raise subprocess.TimeoutExpired(list(args), expired.timeout, output=output, stderr=stderr) from None


def close() -> None:
    """Stop this process's server (it also stops when this process ends: its standard input closes)."""
    global _server
    with _lock:
        if _server is not None:
            _server.close()
            _server = None


atexit.register(close)  # the server is reaped here, so its CPU counts to this process's children


# ---- the server (run as its own process: ``__name__ == "__serve__"``) ----


def _serve() -> dict[str, Any]:
    """Import the modules named in ``sys.argv`` (``PRELOAD``), then fork a child per request and report its pid and
    its end; returns in a child only."""
    import importlib

    for name in sys.argv[1:]:
        try:
            importlib.import_module(name)
        except ImportError:  # not installed here: the child imports what it needs itself
            pass
    replies = sys.stdout
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return request
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status, usage = os.wait4(pid, 0)
        cpu = usage.ru_utime + usage.ru_stime
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "cpu": cpu}) + "\n")
        replies.flush()
    sys.exit(0)


def _become(request: dict[str, Any]) -> None:
    """In the forked child: take the command's session, streams, folder, environment, argv and path, and run it."""
    import runpy

    os.setsid()
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):  # fmt: skip
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    python_path = [entry for entry in request["env"].get("PYTHONPATH", "").split(os.pathsep) if entry]
    if "script" in request:
        first = str(Path(request["script"]).resolve().parent)
    else:
        first = "" if "code" in request else os.getcwd()
    sys.path[:] = [first, *python_path, *sys.path[1:]]
    code: object = 0
    try:
        if "module" in request:
            sys.argv = [request["module"], *request["argv"]]  # runpy puts the module's file in argv[0]
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        elif "code" in request:
            sys.argv = ["-c", *request["argv"]]
            main = type(sys)("__main__")
            sys.modules["__main__"] = main
            exec(compile(request["code"], "<string>", "exec"), main.__dict__)
        else:
            sys.argv = [request["script"], *request["argv"]]
            runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _end(code)


def _end(code: object) -> None:
    """End as an interpreter ends (non-daemon threads joined, ``atexit`` run, streams flushed, ``sys.exit``'s
    status), less the teardown of its modules: torch's and transformers' took a second of every warm command."""
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's own ending calls first
    atexit._run_exitfuncs()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__serve__":
    _become(_serve())
