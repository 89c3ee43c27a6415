"""An HTTP server beside one :class:`DesktopSession`, speaking the main endpoints of OSWorld's VM server.

OSWorld drives its VM through a small HTTP server inside the guest (``desktop_env/server/main.py``).
This is our own implementation of its main endpoints for a local :class:`DesktopSession`, plus one of
ours for agent actions, and :class:`DesktopClient`, whose :meth:`DesktopClient.get` is the ``get``
that :func:`agentrl.envs.osworld.tasks.evaluate.evaluate` needs::

    GET  /screenshot        -> PNG bytes
    POST /execute           {"command": [...] | "...", "shell": false, "timeout": 120}
                            -> {"status": "success" | "error", "output", "error", "returncode"}
    POST /setup/execute     the same
    POST /run_python        {"code": "..."} -> {"status", "message", "output", "error", "return_code"}
    POST /file              {"file_path": ...} (JSON or form) -> the file's bytes; 404 if missing
    POST /list_directory    {"path": ...} -> {"directory_tree": {"name", "type", "children"}}
    POST /setup/launch      {"command": [...] | "...", "shell": false} -> {"status", "message", "pid"}
    GET  /platform          -> "Linux"
    GET  /screen_size       -> {"width", "height"} (POST too)
    POST /setup/open_file   {"path": ...} -> opens it in its app (apps.opener_for), waits for a window
    POST /setup/activate_window, /setup/close_window  {"window_name", "strict", "by_class"}
    POST /setup/upload      OSWorld's multipart form (file_path, file part file_data), or our JSON
                            {"file_path", "content_b64"} -> writes a file under HOME
    POST /pyautogui         {"code": "...", "timeout_s": 10} -> DesktopSession.run_pyautogui's dict (ours)
    GET  /screenshot?format=raw  -> H x W x 3 RGB bytes, X-Width / X-Height headers (ours)
    POST /settle            {"max_s": 1.0, "quiet_s": 0.02, "answer_s": 0.1} -> {"waited_s", "settled", "polls"}:
                            wait until the screen is unchanged and the apps idle (DesktopSession.settle; ours)
    POST /reset             kill the apps, restore HOME (ours)
    GET  /health            {"alive": bool, "crashed": [app, ...]} (ours)
    GET  /apps              {"apps": [...]}: the desktop apps installed where the server runs (ours)
    GET  /accessibility     -> {"AT": xml}: the AT-SPI tree as OSWorld's XML; 503 when AT-SPI is unavailable
    GET  /terminal          -> {"output": text | null, "status": "success"}: the active window's xterm (its own
                            printing, :mod:`.terminal`) or focused VTE terminal (AT-SPI)
    POST /run_bash_script   {"script", "timeout", "working_dir"} -> {"status", "output" (2>&1), "error", "returncode"}
    POST /setup/execute_with_verification (and /execute_with_verification)  {"command", "shell", "verification":
                            {"window_exists", "command_success"}, "max_wait_time", "check_interval"} -> 200 | 500
    POST /desktop_path      -> {"desktop_path": HOME/Desktop}
    POST /wallpaper         -> the image GNOME's picture-uri names (a default one on a fresh desktop, as the VM's);
                            POST /setup/change_wallpaper {"path"}
    POST /setup/download_file  {"url", "path"}: fetched by the server, written in the sandbox under HOME
    POST /window_size       form {"app_class_name"} -> {"width", "height"};  GET /cursor_position -> [x, y]
    POST /start_recording, /end_recording  -> {"status", "message"}; the MP4 (ffmpeg x11grab in the sandbox)

OSWorld's ``PythonController`` and ``SetupController`` call these with their own request shapes
(``tests/envs/osworld/test_pythoncontroller_parity.py`` replays them); they send no token, so they need
``insecure_loopback``. ``python``/``python3`` in the sandbox import pyautogui (see :mod:`.jail`).

Commands, apps, files and actions all go through the desktop's sandbox (its
:class:`~agentrl.envs.osworld.runtime.jail.Jail`): commands run with the desktop's environment (``DISPLAY``,
its private ``HOME``), cwd HOME, in their own session, killed at the deadline; ``/file``,
``/list_directory`` and ``/setup/upload`` see the sandbox's files, not the host's. ``~`` in paths is the
session's HOME, and so is ``/home/user`` (OSWorld's VM HOME, which its task files name) in the paths of
these file routes (not inside commands).

Authentication: with a ``token`` every request must send ``Authorization: Bearer <token>`` (else 401).
Without one, the routes that run commands, start apps or touch files (:data:`COMMAND_ROUTES`) answer
403 unless the server was started with ``insecure_loopback=True`` (``--insecure-loopback``), which is
only allowed on a loopback address. The server binds 127.0.0.1; another address needs
``allow_remote=True`` and a token. Each request is logged at INFO level on the
``agentrl.osworld.server`` logger (route, status, seconds).

The server is an ASGI app served by uvicorn in a thread (:mod:`agentrl.serving.stack`, shared with
the sandbox, model and retrieval servers), over TCP or a unix socket. Request bodies are JSON, or
forms (urlencoded or multipart), as OSWorld's clients send them; above ``max_request_bytes`` they
answer 413. Errors answer ``{"status": "error", "error": ..., "message": ...}``.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import shlex
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentrl.envs.osworld.runtime.apps import installed_apps, opener_for, resolve_command
from agentrl.envs.osworld.runtime.cdp import PORT as CDP_PORT
from agentrl.envs.osworld.runtime.cdp import is_cdp_forward
from agentrl.envs.osworld.runtime.recording import RecordingError, ScreenRecorder
from agentrl.envs.osworld.runtime.settle import ANSWER_S
from agentrl.envs.osworld.runtime.wallpaper import get_wallpaper, set_wallpaper
from agentrl.envs.osworld.runtime.windows import (
    activate_window,
    close_window,
    cursor_position,
    list_windows,
    wait_for_window,
    window_size,
)
from agentrl.serving.guard import FetchRefused, check_token, fetch_public
from agentrl.serving.stack import (
    HTTPStatusError,
    ServerHandle,
    add_guard_arguments,
    check_bearer,
    decode_body,
    guard_options,
    is_loopback,
    json_response,
    make_app,
    read_token,
    refuse_remote,
    start_server_thread,
)

__all__ = ["COMMAND_ROUTES", "DesktopServer", "create_app", "serve_desktop"]

OUTPUT_CAP = 1_000_000
OSWORLD_HOME = "/home/user"
"""HOME on OSWorld's VM; file routes read it as this desktop's HOME."""
LOG = logging.getLogger("agentrl.osworld.server")
COMMAND_ROUTES = frozenset(
    {
        "/execute",
        "/setup/execute",
        "/run_python",
        "/setup/launch",
        "/setup/open_file",
        "/setup/upload",
        "/setup/activate_window",
        "/setup/close_window",
        "/pyautogui",
        "/file",
        "/list_directory",
        "/reset",
        "/run_bash_script",
        "/execute_with_verification",
        "/setup/execute_with_verification",
        "/setup/change_wallpaper",
        "/setup/download_file",
        "/start_recording",
        "/end_recording",
        "/wallpaper",
    }
)
"""Routes that run commands, start apps, act on the screen or touch files: they need a token (or
``insecure_loopback``)."""
FORM_ROUTES = {"/file": "form", "/window_size": "form", "/setup/upload": "form"}
"""The routes OSWorld's clients post forms to (``data={...}``, a multipart upload); every other route takes JSON
only, so a web page cannot post to it cross-site without a preflight."""


def _argv(command: Any, shell: bool, home: str | None = None) -> list[str]:
    """The argv of OSWorld's ``command``/``shell`` pair; without a shell, ``~/`` args start at ``home``."""
    if isinstance(command, str) and command:
        argv = ["/bin/sh", "-c", command] if shell else shlex.split(command)
    elif isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        argv = ["/bin/sh", "-c", shlex.join(command)] if shell else list(command)
    else:
        raise HTTPStatusError(400, "command must be a non-empty string or list of strings")
    if not argv:
        raise HTTPStatusError(400, "command must not be empty")
    if home is not None and not shell:
        argv = [home + arg[1:] if arg.startswith("~/") else arg for arg in argv]
    return argv


class DesktopServer:
    """The endpoints, transport aside; ``session`` is a :class:`DesktopSession`."""

    def __init__(
        self,
        session: Any,
        *,
        token: str | None = None,
        insecure_loopback: bool = False,
        max_request_bytes: int = 16 * 1024 * 1024,
        max_timeout_s: float = 600.0,
        default_timeout_s: float = 120.0,
        allow_private_fetch: bool = False,
    ) -> None:
        self.allow_private_fetch = bool(allow_private_fetch)
        self.session = session
        self.token = token
        self.insecure_loopback = bool(insecure_loopback)
        self.max_request_bytes = int(max_request_bytes)
        self.max_timeout_s = float(max_timeout_s)
        self.default_timeout_s = float(default_timeout_s)
        self.recorder = ScreenRecorder(session)
        self._terminal_lock = threading.Lock()

    def authenticate(self, header: str | None, path: str = "/") -> None:
        """Raise 401 unless ``header`` carries the token (when one is set).

        Without a token, :data:`COMMAND_ROUTES` answer 403 unless ``insecure_loopback`` was given.
        """
        if not self.token:
            if path in COMMAND_ROUTES and not self.insecure_loopback:
                raise HTTPStatusError(
                    403,
                    f"{path} runs commands on the desktop and this server has no token: start it with --token "
                    "(or, on a machine where every local user may drive the desktop, --insecure-loopback)",
                )
            return
        check_bearer(header, {self.token: None})

    def _path(self, value: Any) -> Path:
        if not isinstance(value, str) or not value:
            raise HTTPStatusError(400, "a path must be a non-empty string")
        if value == "~" or value.startswith("~/"):
            value = str(self.session.home) + value[1:]
        elif value == OSWORLD_HOME or value.startswith(OSWORLD_HOME + "/"):  # the VM's HOME is this desktop's
            value = str(self.session.home) + value[len(OSWORLD_HOME):]
        return Path(value)

    def _timeout(self, value: Any) -> float:
        if value is None:
            return self.default_timeout_s
        try:
            return min(max(float(value), 0.01), self.max_timeout_s)
        except (TypeError, ValueError):
            raise HTTPStatusError(400, "timeout must be a number") from None

    def _run(self, argv: list[str], timeout_s: float) -> tuple[int | None, str, str]:
        """``(returncode or None on timeout, stdout, stderr)``, run in the desktop's sandbox."""
        return self.session.run(argv, timeout_s=timeout_s, cap=OUTPUT_CAP)

    def execute(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /execute``: OSWorld's response fields."""
        argv = _argv(body.get("command"), bool(body.get("shell", False)), str(self.session.home))
        rc, out, err = self._run(argv, self._timeout(body.get("timeout")))
        ok = rc == 0
        return {"status": "success" if ok else "error", "output": out, "error": err, "returncode": rc}

    def execute_with_verification(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """``POST /setup/execute_with_verification`` (and ``/execute_with_verification``).

        Runs the command, then polls ``verification`` every ``check_interval`` seconds for
        ``max_wait_time``: ``window_exists`` (a title containing it, case-insensitively) and
        ``command_success`` (a shell command, in the sandbox, that exits 0 within 5 s). 200 with
        ``verification: "passed"``, or 500 with ``status: "verification_failed"``, as OSWorld answers.
        """
        argv = _argv(body.get("command"), bool(body.get("shell", False)), str(self.session.home))
        verification = body.get("verification") or {}
        if not isinstance(verification, Mapping):
            raise HTTPStatusError(400, "verification must be an object")
        max_wait = self._timeout(body.get("max_wait_time", 10))
        interval = min(max(self._number(body.get("check_interval", 1), "check_interval"), 0.05), max_wait)
        rc, out, err = self._run(argv, self.default_timeout_s)
        result: dict[str, Any] = {"status": "success", "output": out, "error": err, "returncode": rc}
        if not verification:
            return result, 200
        start = time.monotonic()
        while True:
            if self._verified(verification):
                return {**result, "verification": "passed", "wait_time": time.monotonic() - start}, 200
            if time.monotonic() - start + interval > max_wait:
                break
            time.sleep(interval)
        failed = {**result, "status": "verification_failed", "verification": "failed", "wait_time": max_wait}
        return failed, 500

    def _verified(self, verification: Mapping[str, Any]) -> bool:
        if "window_exists" in verification:
            wanted = str(verification["window_exists"]).lower()
            if not any(wanted in window.name.lower() for window in list_windows(self.session.env(), wm_class=False)):
                return False
        if "command_success" in verification:
            command = verification["command_success"]
            argv = ["/bin/sh", "-c", command if isinstance(command, str) else shlex.join(map(str, command))]
            rc, _, _ = self._run(argv, 5.0)
            if rc != 0:
                return False
        return True

    @staticmethod
    def _number(value: Any, name: str) -> float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise HTTPStatusError(400, f"{name} must be a number") from None

    def run_python(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """``POST /run_python``: the code runs as a file of the sandbox's ``python3`` (pyautogui importable).

        OSWorld's answer: ``{"status", "message" (stdout and stderr), "need_more": false, "output",
        "error", "return_code"}``; 400 without code; 500 with ``error: "TimeoutExpired"`` past the deadline.
        """
        code = body.get("code")
        if not isinstance(code, str) or not code:
            return {"status": "error", "message": "Code not supplied!"}, 400
        rc, out, err = self.session.run(
            ["python3", "-"], timeout_s=self._timeout(body.get("timeout")), input=code.encode(), cap=OUTPUT_CAP
        )
        if rc is None:
            message = "Execution timeout: Code took too long to execute"
            return {
                "status": "error",
                "message": message,
                "error": "TimeoutExpired",
                "need_more": False,
                "output": None,
            }, 500
        if rc != 0 and not err:
            err = f"Process exited with code {rc}"
        message = out + ("\n" + err if out and err else err)
        status = "success" if rc == 0 else "error"
        return {
            "status": status,
            "message": message,
            "need_more": False,
            "output": out,
            "error": err,
            "return_code": rc,
        }, 200

    def run_bash_script(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """``POST /run_bash_script``: ``{"script", "timeout" (100), "working_dir"}``, run by ``/bin/bash``.

        OSWorld's answer: ``{"status", "output" (stdout and stderr merged), "error": "", "returncode"}``;
        400 without a script or with a missing ``working_dir``; 500 and returncode -1 past the timeout.
        """
        script = body.get("script")
        if not isinstance(script, str) or not script:
            return {"status": "error", "output": "Script not supplied!", "error": "", "returncode": -1}, 400
        timeout = self._timeout(body.get("timeout", 100))
        workdir = body.get("working_dir") or str(self.session.home)
        path = str(self._path(workdir))
        if self.session.path_kind(path) != "directory":
            return {
                "status": "error",
                "output": f"Working directory does not exist: {path}",
                "error": "",
                "returncode": -1,
            }, 400
        # bash with stderr on stdout, in the working directory, running the script as its -c program.
        wrapper = 'exec 2>&1; cd -- "$1" || exit 1; exec /bin/bash -c "$2"'
        rc, out, _ = self._run(["/bin/bash", "-c", wrapper, "bash", path, script], timeout)
        if rc is None:
            return {
                "status": "error",
                "output": f"Script execution timed out after {timeout:g} seconds",
                "error": "",
                "returncode": -1,
            }, 500
        return {"status": "success" if rc == 0 else "error", "output": out, "error": "", "returncode": rc}, 200

    def read_file(self, body: Mapping[str, Any]) -> bytes:
        """``POST /file``."""
        path = self._path(body.get("file_path"))
        data = self.session.read_file(str(path))
        if data is None:
            raise HTTPStatusError(404, f"file not found: {path}")
        return data

    def list_directory(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /list_directory``."""
        path = self._path(body.get("path"))
        tree = self.session.list_directory(str(path))
        if tree is None:
            raise HTTPStatusError(404, f"directory not found: {path}")
        return {"directory_tree": tree}

    def launch(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/launch``; ``wait_window`` (ours, default: unless ``shell``) waits for the app's window."""
        command = body.get("command")
        shell = bool(body.get("shell", False))
        argv = _argv(command, shell, str(self.session.home))
        if not shell and is_cdp_forward(argv):
            return self._cdp_forward(command)
        if not shell:
            argv = resolve_command(argv)
        wait = bool(body.get("wait_window", not shell))
        pid, window = self._launch(argv, f"cannot launch {command!r}", wait, body.get("timeout", 10))
        return {"status": "success", "message": f"{command} launched successfully", "pid": pid, "window": window}

    def _cdp_forward(self, command: Any, wait_s: float = 15.0) -> dict[str, Any]:
        """OSWorld's ``socat tcp-listen:9222,fork tcp:localhost:N``: satisfied once Chromium listens on 9222.

        Chromium here is started with ``--remote-debugging-port=9222`` (:func:`resolve_command`), so the
        forward OSWorld needs from 9222 to Chrome's port has nothing to do; this waits up to ``wait_s``
        for the port inside the sandbox and answers 500 when nothing listens there.
        """
        probe = (f"import socket, sys, time\nend = time.monotonic() + {wait_s!r}\nwhile True:\n"
                 f"    try:\n        socket.create_connection(('127.0.0.1', {CDP_PORT}), 1).close(); break\n"
                 "    except OSError:\n        if time.monotonic() > end: sys.exit(1)\n        time.sleep(0.2)\n")
        rc, _, _ = self._run(["python3", "-c", probe], wait_s + 10.0)
        if rc != 0:
            raise HTTPStatusError(500, f"{command!r}: nothing listens on port {CDP_PORT} in the desktop; launch "
                                       "google-chrome (Chromium here, which listens on 9222 itself) first")
        return {"status": "success", "message": f"{command} satisfied: Chromium listens on {CDP_PORT} itself",
                "pid": None, "window": None}

    def _launch(self, argv: list[str], failure: str, wait: bool, timeout: Any) -> tuple[int, str | None]:
        """Start ``argv`` on the desktop; with ``wait``, wait for its window. ``(pid, window title or None)``."""
        env = self.session.env()
        before = {window.id for window in list_windows(env, wm_class=False)} if wait else set()
        try:
            proc = self.session.launch(argv)
        except OSError as exc:
            raise HTTPStatusError(500, f"{failure}: {exc}") from None
        if not wait:
            return proc.pid, None
        window = wait_for_window(
            env,
            pid=proc.pid,
            new_since=before,
            timeout_s=self._timeout(timeout),
            descends=getattr(self.session, "descends_from", None),
        )
        return proc.pid, window.name if window is not None else None

    def open_file(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/open_file``: open a file or folder in its app and wait for a window."""
        path = self._path(body.get("path") or body.get("file_path"))
        timeout = body.get("timeout_seconds", body.get("timeout", 10))
        kind = self.session.path_kind(str(path))
        if kind is None:
            app = resolve_command([str(path)])
            if "/" in str(path) or shutil.which(app[0]) is None:  # OSWorld opens an app named so too
                raise HTTPStatusError(404, f"Application/file not found: {path}")
            pid, window = self._launch(app, f"cannot start {path}", True, timeout)
            return {"status": "success", "message": f"started {app[0]}", "pid": pid, "window": window}
        argv = opener_for(str(path), is_dir=kind == "directory")
        pid, window = self._launch(argv, f"cannot open {path} with {argv[0]}", True, timeout)
        return {"status": "success", "message": f"opened {path} with {argv[0]}", "pid": pid, "window": window}

    def upload_file(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/upload``: write a file under HOME.

        The body is OSWorld's multipart form (a ``file_path`` field and a ``file_data`` file part) or
        our JSON ``{"file_path", "content_b64"}``. The write happens in the desktop's sandbox, where
        the path (symlinks followed there) must resolve under HOME; else 403.
        """
        if not body.get("file_path") or ("file_data" not in body and "content_b64" not in body):
            raise HTTPStatusError(400, "file_path and file_data are required")
        path = self._path(body.get("file_path"))
        if not path.is_absolute():
            path = Path(self.session.home) / path
        raw = body.get("file_data")
        if isinstance(raw, (bytes, str)):
            data = raw.encode() if isinstance(raw, str) else raw
        else:
            try:
                data = base64.b64decode(str(body.get("content_b64", "")), validate=True)
            except (ValueError, TypeError):
                raise HTTPStatusError(400, "content_b64 must be base64") from None
        self._write(path, data)
        return {"status": "success", "message": f"File Uploaded: {len(data)} bytes"}

    def window_action(self, body: Mapping[str, Any], action: str) -> dict[str, Any]:
        """``POST /setup/activate_window`` and ``/setup/close_window``."""
        name = body.get("window_name")
        if not isinstance(name, str) or not name:
            raise HTTPStatusError(400, "window_name must be a non-empty string")
        strict, by_class = bool(body.get("strict", False)), bool(body.get("by_class", False))
        env = self.session.env()
        if action == "activate":
            if not activate_window(env, name, strict=strict, by_class=by_class):
                raise HTTPStatusError(404, f"no window matches {name!r}")
            return {"status": "success", "message": f"activated {name!r}"}
        closed = close_window(env, name, strict=strict, by_class=by_class)
        if not closed:
            raise HTTPStatusError(404, f"no window matches {name!r}")
        return {"status": "success", "message": f"closed {closed} window(s) matching {name!r}"}

    def reset(self) -> dict[str, Any]:
        """``POST /reset`` (ours): stop a recording, kill the apps, restore HOME."""
        self.recorder.close()
        self.session.reset()
        return {"status": "success"}

    def health(self) -> dict[str, Any]:
        """``GET /health`` (ours): whether the display and window manager are alive, and which apps crashed."""
        return {"status": "success", "alive": self.session.alive(), "crashed": self.session.crashed_apps()}

    def pyautogui(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /pyautogui`` (ours)."""
        code = body.get("code")
        if not isinstance(code, str):
            raise HTTPStatusError(400, "code must be a string")
        timeout = self._timeout(body.get("timeout_s", 10.0))
        return self.session.run_pyautogui(code, timeout_s=timeout)

    def settle(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /settle`` (ours): wait until the screen holds still (at most ``max_s``, up to 10 s)."""
        max_s, quiet_s = body.get("max_s", 1.0), body.get("quiet_s", 0.02)
        answer_s = body.get("answer_s", ANSWER_S)
        values = {"max_s": max_s, "quiet_s": quiet_s, "answer_s": answer_s}
        wrong = {k: v for k, v in values.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
        if wrong:
            raise HTTPStatusError(400, f"max_s, quiet_s and answer_s must be numbers, got {wrong}")
        if not (0 <= max_s <= 10 and 0 <= quiet_s <= max_s and 0 <= answer_s <= 10):
            raise HTTPStatusError(
                400, f"expected 0 <= quiet_s <= max_s <= 10 and 0 <= answer_s <= 10, got {values}"
            )
        result = self.session.settle(max_s=float(max_s), quiet_s=float(quiet_s), answer_s=float(answer_s))
        return {"waited_s": round(result.waited_s, 4), "settled": result.settled, "polls": result.polls}

    def accessibility(self) -> dict[str, Any]:
        """``GET /accessibility``: ``{"AT": xml}``; 503 without AT-SPI, 504 when the dump times out."""
        from agentrl.core.errors import SandboxUnavailable

        try:
            return {"AT": self.session.accessibility_tree()}
        except SandboxUnavailable as exc:
            raise HTTPStatusError(503, f"the accessibility tree is unavailable: {exc}") from None
        except TimeoutError as exc:
            raise HTTPStatusError(504, str(exc)) from None

    def screen_size(self) -> dict[str, Any]:
        """``GET /screen_size``."""
        return {"width": self.session.width, "height": self.session.height}

    def terminal(self) -> dict[str, Any]:
        """``GET /terminal``: ``{"output": text or null, "status": "success"}``: the active window's terminal.

        An xterm (the desktop's terminal, which has no accessibility tree) is read through its own printing
        (:mod:`agentrl.envs.osworld.runtime.terminal`); otherwise the focused terminal of the active window in the
        accessibility tree (:func:`~agentrl.envs.osworld.a11y.terminal_text`, VTE terminals). ``null`` when
        the active window is no terminal, and also when the tree cannot be had here (``message`` says why),
        so that OSWorld's readiness probe still passes.
        """
        from agentrl.core.errors import SandboxUnavailable
        from agentrl.envs.osworld.a11y import terminal_text
        from agentrl.envs.osworld.runtime.terminal import read_xterm

        print_dir = getattr(self.session, "xterm_print_dir", None)
        if print_dir is not None:
            with self._terminal_lock:  # one print at a time: they share the file
                try:
                    text = read_xterm(self.session, print_dir)
                except SandboxUnavailable as exc:
                    return {"output": None, "status": "success", "message": f"no terminal: {exc}"}
            if text is not None:
                return {"output": text, "status": "success"}
        dump = getattr(self.session, "accessibility_tree", None)
        if dump is None:
            return {"output": None, "status": "success", "message": "this desktop has no accessibility tree"}
        try:
            xml = dump()
        except (SandboxUnavailable, TimeoutError) as exc:
            return {"output": None, "status": "success", "message": f"no accessibility tree: {exc}"}
        return {"output": terminal_text(xml), "status": "success"}

    def desktop_path(self) -> tuple[dict[str, Any], int]:
        """``POST /desktop_path``: ``{"desktop_path": HOME/Desktop}``; 404 ``{"error"}`` when it is missing."""
        path = str(Path(self.session.home) / "Desktop")
        if self.session.path_kind(path) != "directory":
            return {"error": "Unsupported operating system or desktop path not found"}, 404
        return {"desktop_path": path}, 200

    def wallpaper(self) -> bytes:
        """``POST /wallpaper``: the bytes of the file GNOME's wallpaper setting names; 404 when there is none."""
        path = get_wallpaper(self.session)
        data = self.session.read_file(path) if path else None
        if data is None:
            raise HTTPStatusError(404, "Wallpaper file not found")
        return data

    def change_wallpaper(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/change_wallpaper`` ``{"path"}``: set GNOME's wallpaper setting and paint the image."""
        if not body.get("path"):
            raise HTTPStatusError(400, "Path not supplied!")
        path = self._path(body.get("path"))
        if self.session.path_kind(str(path)) != "file":
            raise HTTPStatusError(404, f"File not found: {path}")
        try:
            note = set_wallpaper(self.session, str(path))
        except RuntimeError as exc:
            raise HTTPStatusError(500, f"Failed to change wallpaper. Error: {exc}") from None
        return {"status": "success", "message": f"Wallpaper changed successfully ({note})"}

    def download_file(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/download_file`` ``{"url", "path"}``: fetch ``url`` and write it to ``path`` under HOME.

        The sandbox has no network: the server fetches (http and https only, at most
        ``max_request_bytes``, 3 tries as OSWorld makes) and the write happens in the sandbox. The fetch runs
        on the host, so it reaches what the sandbox cannot: a URL whose host resolves to a loopback, private,
        link-local or reserved address (on the first hop or any redirect) is refused with 403 unless the
        server was started with ``allow_private_fetch`` (``--allow-private-fetch``).
        """
        url, raw_path = body.get("url"), body.get("path")
        if not url or not raw_path:
            raise HTTPStatusError(400, "Path or URL not supplied!")
        if urllib.parse.urlsplit(str(url)).scheme not in ("http", "https"):
            raise HTTPStatusError(400, "url must be http:// or https://")
        path = self._path(raw_path)
        if not path.is_absolute():
            path = Path(self.session.home) / path
        error = ""
        for _ in range(3):
            try:
                data = fetch_public(
                    str(url), self.max_request_bytes, min(300.0, self.max_timeout_s),
                    allow_private=self.allow_private_fetch,
                )
                break
            except FetchRefused as exc:
                raise HTTPStatusError(403, f"Failed to download {url}: {exc}") from None
            except (OSError, ValueError) as exc:
                error = str(exc)
        else:
            raise HTTPStatusError(500, f"Failed to download {url}. No retries left. Error: {error}")
        self._write(path, data)
        return {"status": "success", "message": f"File downloaded successfully: {len(data)} bytes"}

    def _write(self, path: Path, data: bytes) -> None:
        try:
            self.session.write_file(str(path), data)
        except PermissionError as exc:
            raise HTTPStatusError(403, str(exc)) from None
        except OSError as exc:
            raise HTTPStatusError(500, f"cannot write {path}: {exc}") from None

    def window_size(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
        """``POST /window_size`` (form ``app_class_name``): ``{"width", "height"}`` of that app's window."""
        name = body.get("app_class_name")
        if not isinstance(name, str) or not name:
            return {"error": "app_class_name is required"}, 400
        size = window_size(self.session.env(), name)
        if size is None:
            return {"error": f"no window of class {name!r}"}, 404
        return {"width": size[0], "height": size[1]}, 200

    def cursor_position(self) -> list[int]:
        """``GET /cursor_position``: ``[x, y]``, as OSWorld's ``jsonify(x, y)``."""
        where = cursor_position(self.session.env())
        if where is None:
            raise HTTPStatusError(500, "cannot read the pointer's position (xdotool getmouselocation failed)")
        return [where[0], where[1]]

    def start_recording(self) -> dict[str, Any]:
        """``POST /start_recording``: ffmpeg x11grab in the sandbox (:mod:`~.runtime.recording`)."""
        try:
            return {"status": "success", "message": self.recorder.start()}
        except RecordingError as exc:
            raise HTTPStatusError(exc.status, str(exc)) from None

    def end_recording(self) -> bytes:
        """``POST /end_recording``: the MP4's bytes."""
        try:
            return self.recorder.stop()
        except RecordingError as exc:
            raise HTTPStatusError(exc.status, str(exc)) from None


def _error_body(status: int, message: str) -> dict[str, Any]:
    """The desktop server's error shape (OSWorld's clients read ``status`` and ``message``)."""
    return {"status": "error", "error": message, "message": message}


def _content_type(scope: Mapping[str, Any]) -> str | None:
    for key, value in scope["headers"]:
        if key == b"content-type":
            return value.decode("latin-1")
    return None


def _inline(scope: Mapping[str, Any]) -> bool:
    """The direct calls run on the event loop: health, and the raw screenshot (a grab and a copy, no PNG)."""
    return scope["path"] == "/health" or b"format=raw" in scope["query_string"]


def create_app(server: DesktopServer) -> Any:
    """The ASGI app of ``server``'s endpoints (the table in the module docstring).

    Blocking work (the desktop, its sandbox, the file system) runs in the thread pool. The routes of
    an env step (``POST /pyautogui``, ``GET /screenshot``, ``GET /health``) are served by the ASGI
    layer itself, without the router or a ``Request``; the raw screenshot and ``/health`` run on the
    event loop (no thread switch). The others are Starlette routes.
    """
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    async def body_of(request: Any) -> dict[str, Any]:
        return decode_body(await request.body(), request.headers.get("content-type"), forms=True)

    def json_route(method: Any) -> Any:
        """A POST route of ``method(body)``: its dict, or ``(dict, status)`` (OSWorld's bodies with an error status)."""

        async def endpoint(request: Any) -> Any:
            body = await body_of(request)
            result = await run_in_threadpool(method, body)
            return json_response(*result) if isinstance(result, tuple) else json_response(result)

        return endpoint

    def json_get(method: Any) -> Any:
        """A route of ``method()`` (no body), its answer as for :func:`json_route`."""

        def endpoint(request: Any) -> Any:
            result = method()
            return json_response(*result) if isinstance(result, tuple) else json_response(result)

        return endpoint

    def bytes_route(method: Any, media_type: str, filename: str | None = None) -> Any:
        async def endpoint(request: Any) -> Any:
            data = await run_in_threadpool(method)
            headers = {"Content-Disposition": f'attachment; filename="{filename}"'} if filename else None
            return Response(data, media_type=media_type, headers=headers)

        return endpoint

    # The hot routes of an env step, served without the router (see ServingMiddleware's ``direct``).
    def screenshot(scope: dict[str, Any], raw: bytes) -> Any:
        if b"format=raw" in scope["query_string"]:  # ours: uncompressed RGB, H x W x 3, size in headers
            shot = server.session.screenshot()
            headers = (("X-Width", str(shot.shape[1])), ("X-Height", str(shot.shape[0])))
            return 200, "application/octet-stream", shot.tobytes(), headers
        return 200, "image/png", server.session.screenshot_png(), ()

    def pyautogui(scope: dict[str, Any], raw: bytes) -> Any:
        out = server.pyautogui(decode_body(raw, _content_type(scope), forms=True))
        return 200, "application/json", json.dumps(out).encode(), ()

    def health(scope: dict[str, Any], raw: bytes) -> Any:
        return 200, "application/json", json.dumps(server.health()).encode(), ()

    async def read_file(request: Any) -> Any:
        data = await run_in_threadpool(server.read_file, await body_of(request))
        return Response(data, media_type="application/octet-stream")

    async def platform(request: Any) -> Any:
        return Response(b"Linux", headers={"content-type": "text/plain"})

    async def screen_size(request: Any) -> Any:
        return json_response(server.screen_size())

    def apps(request: Any) -> Any:
        return json_response({"apps": installed_apps()})

    def accessibility(request: Any) -> Any:
        return json_response(server.accessibility())

    routes = [
        ("/execute", "POST", json_route(server.execute)),
        ("/setup/execute", "POST", json_route(server.execute)),
        ("/run_python", "POST", json_route(server.run_python)),
        ("/file", "POST", read_file),
        ("/list_directory", "POST", json_route(server.list_directory)),
        ("/setup/launch", "POST", json_route(server.launch)),
        ("/setup/open_file", "POST", json_route(server.open_file)),
        ("/setup/upload", "POST", json_route(server.upload_file)),
        ("/setup/activate_window", "POST", json_route(functools.partial(server.window_action, action="activate"))),
        ("/setup/close_window", "POST", json_route(functools.partial(server.window_action, action="close"))),
        ("/reset", "POST", json_route(lambda body: server.reset())),
        ("/settle", "POST", json_route(server.settle)),
        ("/platform", "GET", platform),
        ("/screen_size", ("GET", "POST"), screen_size),
        ("/apps", "GET", apps),
        ("/accessibility", "GET", accessibility),
        ("/terminal", "GET", json_get(server.terminal)),
        ("/execute_with_verification", "POST", json_route(server.execute_with_verification)),
        ("/setup/execute_with_verification", "POST", json_route(server.execute_with_verification)),
        ("/run_bash_script", "POST", json_route(server.run_bash_script)),
        ("/desktop_path", "POST", json_get(server.desktop_path)),
        ("/wallpaper", "POST", bytes_route(server.wallpaper, "image/png")),
        ("/setup/change_wallpaper", "POST", json_route(server.change_wallpaper)),
        ("/setup/download_file", "POST", json_route(server.download_file)),
        ("/window_size", "POST", json_route(server.window_size)),
        ("/cursor_position", "GET", json_get(server.cursor_position)),
        ("/start_recording", "POST", json_get(server.start_recording)),
        ("/end_recording", "POST", bytes_route(server.end_recording, "video/mp4", "recording.mp4")),
    ]
    return make_app(
        routes,
        error_body=_error_body,
        authenticate=server.authenticate,
        logger=LOG,
        max_request_bytes=server.max_request_bytes,
        wrong_method_status=404,
        direct={("GET", "/screenshot"): screenshot, ("POST", "/pyautogui"): pyautogui, ("GET", "/health"): health},
        inline=_inline,
        body_types=FORM_ROUTES,
    )


def serve_desktop(
    session: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    allow_remote: bool = False,
    unix_socket: str | None = None,
    insecure_loopback: bool = False,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    max_connections: int | None = None,
    header_timeout_s: float | None = None,
    **options: Any,
) -> ServerHandle:
    """Serve ``session`` over HTTP in a daemon thread; returns a handle (``base_url``, ``close``, ``with``).

    With ``unix_socket`` the server listens on that socket path instead of TCP (a container without
    a network serves its desktop this way); the handle's ``base_url`` is then ``unix:<path>``, which
    :class:`DesktopClient` understands. The handle's ``app`` is the :class:`DesktopServer`.

    Without a ``token`` the routes of :data:`COMMAND_ROUTES` answer 403, unless ``insecure_loopback``
    (loopback or a unix socket only; the socket is then its owner's alone, mode 0600). ``allowed_hosts``,
    ``allowed_origins``, ``max_connections`` and ``header_timeout_s`` are the guard's
    (:func:`~agentrl.serving.stack.start_server_thread`); ``options`` go to :class:`DesktopServer`.

    Raises:
        ValueError: a non-loopback ``host`` without ``allow_remote``, or without a ``token``.
        OSError: the address cannot be bound.
    """
    if unix_socket is None:
        refuse_remote(host, allow_remote, "desktop server")
        if not is_loopback(host) and not token:
            raise ValueError(f"refusing to serve a desktop on {host!r} without authentication: give a token")
        check_token(token, host, server="desktop server")
    app = DesktopServer(session, token=token, insecure_loopback=insecure_loopback, **options)
    guard: dict[str, Any] = {"allowed_hosts": allowed_hosts, "allowed_origins": allowed_origins}
    if max_connections is not None:
        guard["max_connections"] = max_connections
    if header_timeout_s is not None:
        guard["header_timeout_s"] = header_timeout_s
    return start_server_thread(
        create_app(app), host, port, name="agentrl-desktop-server", unix_socket=unix_socket, service=app,
        socket_mode=0o666 if token else 0o600, error_body=_error_body, **guard,
    )


def _exposure(session: Any, token: str | None, made_token: bool, insecure: bool) -> list[str]:
    """What the server exposes, said at start-up."""
    lines = ["exposes: screenshots, the screen size and health to any client that reaches it;"]
    routes = ", ".join(sorted(COMMAND_ROUTES))
    if token:
        how = f"a token made for this run: {token}" if made_token else "the token given with --token"
        lines.append(f"  command routes ({routes}) with 'Authorization: Bearer <token>' ({how})")
    elif insecure:
        lines.append(f"  command routes ({routes}) WITHOUT a token (--insecure-loopback): any local user can use them")
    warning = getattr(session, "isolation_warning", "")
    lines.append(
        "  commands, apps and actions run in the desktop's sandbox"
        + (f" ({warning})" if warning else " (bubblewrap: own PID namespace, no network, only HOME writable)")
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """``agentrl serve-desktop``: start a desktop and serve it until interrupted. Returns an exit status.

    The first line on stdout is ``agentrl-desktop-server: <url>`` once the desktop is up.
    """
    import argparse

    from agentrl.envs.osworld.runtime.desktop import DesktopSession

    parser = argparse.ArgumentParser(
        prog="agentrl serve-desktop", description="Serve a desktop (Xvfb, xfwm4, apps) over OSWorld's VM-server API."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000, help="0 picks a free port (printed on stdout)")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs --token)")
    parser.add_argument(
        "--token",
        default=None,
        help="the bearer token clients must send; @FILE reads it from FILE; without it one is made and printed",
    )
    parser.add_argument(
        "--insecure-loopback",
        action="store_true",
        help="serve the command routes without a token (loopback only: any local user can then run commands)",
    )
    parser.add_argument("--log-level", default="INFO", help="the request log's level (INFO logs each request)")
    parser.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="where the desktop's commands, apps and actions run: bwrap (auto: when installed) or none (inside "
        "a container, which is then the boundary)",
    )
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--no-window-manager", action="store_true")
    parser.add_argument(
        "--unix-socket", default=None, help="listen on this unix socket instead of TCP (a container without network)"
    )
    parser.add_argument(
        "--allow-private-fetch",
        action="store_true",
        help="let /setup/download_file fetch from loopback, private and link-local addresses (refused by default: "
        "the fetch runs on this host, which reaches what the sandbox cannot)",
    )
    add_guard_arguments(parser)
    args = parser.parse_args(list(argv) if argv is not None else None)
    token = read_token(args.token)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    made_token = False
    if not token and not args.insecure_loopback:
        import secrets

        token, made_token = secrets.token_urlsafe(24), True
    if args.insecure_loopback and not token and not is_loopback(args.host) and args.unix_socket is None:
        print("error: --insecure-loopback is only allowed on a loopback --host", file=sys.stderr)
        return 2
    try:
        sandbox = {"auto": None, "bwrap": True, "none": False}[args.sandbox]
        session = DesktopSession(args.width, args.height, window_manager=not args.no_window_manager, sandbox=sandbox)
    except Exception as exc:
        print(f"error: cannot start a desktop: {exc}", file=sys.stderr)
        return 2
    try:
        handle = serve_desktop(
            session,
            args.host,
            args.port,
            token=token,
            allow_remote=args.allow_remote,
            unix_socket=args.unix_socket,
            insecure_loopback=args.insecure_loopback,
            allow_private_fetch=args.allow_private_fetch,
            **guard_options(args),
        )
    except (ValueError, OSError) as exc:
        session.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = {"now": False}

    def on_signal(signum: int, frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    print(f"agentrl-desktop-server: {handle.base_url}", flush=True)
    print(f"serving the desktop {session.display} at {handle.base_url}; Ctrl-C to stop", file=sys.stderr, flush=True)
    for line in _exposure(session, token, made_token, args.insecure_loopback):
        print(line, file=sys.stderr, flush=True)
    try:
        while not stop["now"] and handle.thread.is_alive():
            handle.thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        handle.close()
        session.close()
    return 0
