"""An HTTP server beside one :class:`DesktopSession`, speaking the main endpoints of OSWorld's VM server.

OSWorld drives its VM through a small HTTP server inside the guest (``desktop_env/server/main.py``).
This is our own implementation of its main endpoints for a local :class:`DesktopSession`, plus one of
ours for agent actions, and :class:`DesktopClient`, whose :meth:`DesktopClient.get` is the ``get``
that :func:`agentrl.envs.osworld.evaluate.evaluate` needs::

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
    POST /pyautogui         {"code": "...", "timeout_s": 10} -> DesktopSession.run_pyautogui's dict (ours)
    GET  /terminal          -> 404: reading a terminal's text needs the accessibility tree, not served here

Commands run with the desktop's environment (``DISPLAY``, its private ``HOME``), cwd HOME, in their own
process group, killed at the deadline. ``~`` in paths is the session's HOME. The server binds
127.0.0.1; another address needs ``allow_remote=True`` and a ``token`` (then every request must send
``Authorization: Bearer <token>``, else 401). Requests run commands on this machine: expose it only
to what you would give a shell.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentrl.core.serving import ThreadedServerHandle, is_loopback, refuse_remote

__all__ = ["DesktopClient", "DesktopServer", "serve_desktop"]

OUTPUT_CAP = 1_000_000


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _argv(command: Any, shell: bool) -> list[str]:
    if isinstance(command, str):
        return ["/bin/sh", "-c", command] if shell else shlex.split(command)
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return ["/bin/sh", "-c", shlex.join(command)] if shell else list(command)
    raise _HTTPError(400, "command must be a non-empty string or list of strings")


def _tree(path: Path, depth: int = 0) -> dict[str, Any]:
    if not path.is_dir() or path.is_symlink() or depth > 32:
        return {"name": path.name, "type": "file"}
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError:
        entries = []
    return {"name": path.name, "type": "directory", "children": [_tree(p, depth + 1) for p in entries]}


class DesktopServer:
    """The endpoints, transport aside; ``session`` is a :class:`DesktopSession`."""

    def __init__(
        self,
        session: Any,
        *,
        token: str | None = None,
        max_request_bytes: int = 16 * 1024 * 1024,
        max_timeout_s: float = 600.0,
        default_timeout_s: float = 120.0,
    ) -> None:
        self.session = session
        self.token = token
        self.max_request_bytes = int(max_request_bytes)
        self.max_timeout_s = float(max_timeout_s)
        self.default_timeout_s = float(default_timeout_s)

    def authenticate(self, header: str | None) -> None:
        """Raise 401 unless ``header`` carries the token (when one is set)."""
        if not self.token:
            return
        if not header or not header.startswith("Bearer "):
            raise _HTTPError(401, "missing token: send 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(header[len("Bearer ") :].strip().encode(), self.token.encode()):
            raise _HTTPError(401, "wrong token")

    def _path(self, value: Any) -> Path:
        if not isinstance(value, str) or not value:
            raise _HTTPError(400, "a path must be a non-empty string")
        if value == "~" or value.startswith("~/"):
            value = str(self.session.home) + value[1:]
        return Path(value)

    def _timeout(self, value: Any) -> float:
        if value is None:
            return self.default_timeout_s
        try:
            return min(max(float(value), 0.01), self.max_timeout_s)
        except (TypeError, ValueError):
            raise _HTTPError(400, "timeout must be a number") from None

    def _run(self, argv: list[str], timeout_s: float) -> tuple[int | None, str, str]:
        """``(returncode or None on timeout, stdout, stderr)``."""
        try:
            proc = subprocess.Popen(
                argv,
                env=self.session.env(),
                cwd=self.session.home,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return -1, "", f"{type(exc).__name__}: {exc}"
        try:
            out, err = proc.communicate(timeout=timeout_s)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            rc = None
            err += f"\ntimed out after {timeout_s:g}s".encode()
        return rc, out[:OUTPUT_CAP].decode(errors="replace"), err[:OUTPUT_CAP].decode(errors="replace")

    def execute(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /execute``: OSWorld's response fields."""
        argv = _argv(body.get("command"), bool(body.get("shell", False)))
        rc, out, err = self._run(argv, self._timeout(body.get("timeout")))
        ok = rc == 0
        return {"status": "success" if ok else "error", "output": out, "error": err, "returncode": rc}

    def run_python(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /run_python``."""
        code = body.get("code")
        if not isinstance(code, str):
            raise _HTTPError(400, "code must be a string")
        rc, out, err = self._run([sys.executable, "-c", code], self._timeout(body.get("timeout")))
        ok = rc == 0
        message = "executed successfully" if ok else ("timed out" if rc is None else f"exited with {rc}")
        return {
            "status": "success" if ok else "error",
            "message": message,
            "output": out,
            "error": err,
            "return_code": rc,
        }

    def read_file(self, body: Mapping[str, Any]) -> bytes:
        """``POST /file``."""
        path = self._path(body.get("file_path"))
        if not path.is_file():
            raise _HTTPError(404, f"file not found: {path}")
        try:
            return path.read_bytes()
        except OSError as exc:
            raise _HTTPError(404, f"cannot read {path}: {exc}") from None

    def list_directory(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /list_directory``."""
        path = self._path(body.get("path"))
        if not path.is_dir():
            raise _HTTPError(404, f"directory not found: {path}")
        return {"directory_tree": _tree(path)}

    def launch(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /setup/launch``."""
        command = body.get("command")
        argv = _argv(command, bool(body.get("shell", False)))
        try:
            proc = self.session.launch(argv)
        except OSError as exc:
            raise _HTTPError(500, f"cannot launch {command!r}: {exc}") from None
        return {"status": "success", "message": f"{command} launched successfully", "pid": proc.pid}

    def pyautogui(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /pyautogui`` (ours)."""
        code = body.get("code")
        if not isinstance(code, str):
            raise _HTTPError(400, "code must be a string")
        timeout = self._timeout(body.get("timeout_s", 10.0))
        return self.session.run_pyautogui(code, timeout_s=timeout)

    def screen_size(self) -> dict[str, Any]:
        """``GET /screen_size``."""
        return {"width": self.session.width, "height": self.session.height}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise _HTTPError(400, "bad Content-Length") from None
        if length > self.server.app.max_request_bytes:
            self.close_connection = True
            raise _HTTPError(413, f"request of {length} bytes is over the limit")
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("application/x-www-form-urlencoded"):
            return {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode(errors="replace")).items()}
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise _HTTPError(400, "the body is not JSON") from None
        if not isinstance(body, dict):
            raise _HTTPError(400, "the body must be a JSON object")
        return body

    def _dispatch(self, method: str) -> None:
        app = self.server.app
        try:
            body = self._body()
            app.authenticate(self.headers.get("Authorization"))
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            route = (method, path)
            if route == ("GET", "/screenshot"):
                self._send(200, app.session.screenshot_png(), "image/png")
                return
            if route == ("POST", "/file"):
                self._send(200, app.read_file(body), "application/octet-stream")
                return
            if route == ("GET", "/platform"):
                self._send(200, b"Linux", "text/plain")
                return
            if route in (("POST", "/execute"), ("POST", "/setup/execute")):
                out: Any = app.execute(body)
            elif route == ("POST", "/run_python"):
                out = app.run_python(body)
            elif route == ("POST", "/list_directory"):
                out = app.list_directory(body)
            elif route == ("POST", "/setup/launch"):
                out = app.launch(body)
            elif route == ("POST", "/pyautogui"):
                out = app.pyautogui(body)
            elif path == "/screen_size" and method in ("GET", "POST"):
                out = app.screen_size()
            elif route == ("GET", "/terminal"):
                raise _HTTPError(
                    404, "terminal output is not served: reading a terminal's text needs the accessibility tree"
                )
            else:
                raise _HTTPError(404, f"no route {method} {path}")
            self._json(200, out)
        except _HTTPError as exc:
            self._json(exc.status, {"status": "error", "error": exc.message, "message": exc.message})
        except (ConnectionError, BrokenPipeError):
            self.close_connection = True
        except Exception as exc:  # a bug of ours, or the session closed: say so, keep serving
            self._json(500, {"status": "error", "error": f"{type(exc).__name__}: {exc}"})


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: DesktopServer) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.app = app
        super().__init__(address, _Handler)


def serve_desktop(
    session: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    allow_remote: bool = False,
    **options: Any,
) -> ThreadedServerHandle:
    """Serve ``session`` over HTTP in a daemon thread; returns a handle (``base_url``, ``close``, ``with``).

    Raises:
        ValueError: a non-loopback ``host`` without ``allow_remote``, or without a ``token``.
    """
    refuse_remote(host, allow_remote, "desktop server")
    if not is_loopback(host) and not token:
        raise ValueError(f"refusing to serve a desktop on {host!r} without authentication: give a token")
    app = DesktopServer(session, token=token, **options)
    return ThreadedServerHandle(_HTTPServer((host, port), app), host, name="agentrl-desktop-server", app=app)


class DesktopClient:
    """A client of :func:`serve_desktop` (or of OSWorld's own server, for the shared endpoints).

    Args:
        base_url: ``http://HOST:PORT``.
        token: sent as ``Authorization: Bearer <token>``.
        timeout_s: the HTTP timeout per request.
        cache_dir: where :meth:`get` puts ``vm_file`` downloads (a temp dir by default).
    """

    def __init__(
        self, base_url: str, token: str | None = None, timeout_s: float = 30.0, *, cache_dir: str | None = None
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout_s = float(timeout_s)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None

    @property
    def cache_dir(self) -> Path:
        """The local directory for ``vm_file`` downloads."""
        if self._cache_dir is None:
            self._cache_dir = Path(tempfile.mkdtemp(prefix="agentrl-osworld-cache-"))
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        return self._cache_dir

    def _request(self, method: str, path: str, body: Any = None, timeout_s: float | None = None) -> bytes:
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req, timeout=timeout_s or self.timeout_s) as resp:
            return resp.read()

    def _json(self, method: str, path: str, body: Any = None, timeout_s: float | None = None) -> Any:
        return json.loads(self._request(method, path, body, timeout_s))

    def screenshot_png(self) -> bytes:
        """``GET /screenshot``."""
        return self._request("GET", "/screenshot")

    def execute(self, command: str | list[str], shell: bool = False, timeout_s: float | None = None) -> dict[str, Any]:
        """``POST /execute``: ``{"status", "output", "error", "returncode"}``."""
        body: dict[str, Any] = {"command": command, "shell": shell}
        if timeout_s is not None:
            body["timeout"] = timeout_s
        wait = max(self.timeout_s, (timeout_s or 120.0) + 5.0)
        return self._json("POST", "/execute", body, wait)

    def run_python(self, code: str) -> dict[str, Any]:
        """``POST /run_python``."""
        return self._json("POST", "/run_python", {"code": code}, max(self.timeout_s, 125.0))

    def launch(self, command: str | list[str], shell: bool = False) -> dict[str, Any]:
        """``POST /setup/launch``."""
        return self._json("POST", "/setup/launch", {"command": command, "shell": shell})

    def read_file(self, path: str) -> bytes | None:
        """``POST /file``: the file's bytes, or ``None`` when it does not exist."""
        try:
            return self._request("POST", "/file", {"file_path": path})
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def list_directory(self, path: str) -> dict[str, Any] | None:
        """``POST /list_directory``: the tree, or ``None`` when the directory does not exist."""
        try:
            return self._json("POST", "/list_directory", {"path": path})["directory_tree"]
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def screen_size(self) -> tuple[int, int]:
        """``GET /screen_size``: ``(width, height)``."""
        size = self._json("GET", "/screen_size")
        return int(size["width"]), int(size["height"])

    def platform(self) -> str:
        """``GET /platform``."""
        return self._request("GET", "/platform").decode()

    def pyautogui(self, code: str, timeout_s: float = 10.0) -> dict[str, Any]:
        """``POST /pyautogui``: ``{"ok", "output", "error", "timed_out"}``."""
        return self._json("POST", "/pyautogui", {"code": code, "timeout_s": timeout_s}, self.timeout_s + timeout_s)

    def terminal_output(self) -> str | None:
        """``GET /terminal``: the text, or ``None`` when the server does not serve it."""
        try:
            return self._json("GET", "/terminal").get("output")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def _vm_file(self, path: str, dest: str | None) -> str | None:
        data = self.read_file(path)
        if data is None:
            return None
        name = Path(dest or Path(path).name or "file").name  # never escape the cache dir
        local = self.cache_dir / name
        local.write_bytes(data)
        return str(local)

    def get(self, spec: Mapping[str, Any]) -> Any:
        """The ``get`` of :func:`agentrl.envs.osworld.evaluate.evaluate`, for the getters served here.

        ``vm_file`` -> local path (or ``None``; lists of ``path``/``dest`` give a list),
        ``vm_command_line`` -> stdout (``None`` when the command failed to run), ``list_directory`` ->
        the tree, ``vm_terminal_output`` -> the text or ``None``. Others raise ``ValueError``.
        """
        kind = spec.get("type")
        if kind == "vm_file":
            path, dest = spec.get("path"), spec.get("dest")
            if isinstance(path, list):
                dests = dest if isinstance(dest, list) else [None] * len(path)
                return [self._vm_file(p, d) for p, d in zip(path, dests, strict=True)]
            return self._vm_file(str(path), dest)
        if kind == "vm_command_line":
            result = self.execute(spec["command"], shell=bool(spec.get("shell", False)))
            return result["output"] if result.get("returncode") is not None else None
        if kind == "list_directory":
            return self.list_directory(str(spec["path"]))
        if kind == "vm_terminal_output":
            return self.terminal_output()
        raise ValueError(f"getter type {kind!r} is not served by DesktopClient")
