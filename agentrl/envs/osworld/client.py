"""A client of the desktop server (:mod:`agentrl.envs.osworld.server`), or of OSWorld's own VM server.

:class:`DesktopClient` speaks the endpoints the server's docstring lists, over TCP (``http://HOST:PORT``,
``https://``) or a unix socket (``unix:PATH``, a desktop in a container), with one kept-alive connection per
thread. Its :meth:`DesktopClient.get` runs OSWorld's getters (:mod:`agentrl.envs.osworld.evaluators`) against
the desktop: it is the ``get`` that :func:`agentrl.envs.osworld.tasks.evaluate.evaluate` needs.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.client
import io
import json
import shutil
import tempfile
import threading
import urllib.error
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.envs.osworld.evaluators import get_result
from agentrl.serving.stack import UnixHTTPConnection

__all__ = ["DesktopClient"]


def _decode_png(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def _reason(reason: str, payload: bytes, limit: int = 500) -> str:
    """The HTTP reason with the server's own message (its JSON ``message``), so an error says why.

    >>> _reason("Internal Server Error", b'{"status": "error", "message": "cannot launch gedit"}')
    'Internal Server Error: cannot launch gedit'
    >>> _reason("Not Found", b"<html>")
    'Not Found'
    """
    try:
        message = json.loads(payload).get("message")
    except (ValueError, AttributeError):
        return reason
    if not isinstance(message, str) or not message:
        return reason
    return f"{reason}: {message[:limit]}"


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
        if self.base_url.startswith("unix:"):  # HTTP over a unix socket (a desktop in a container)
            socket_path = self.base_url[len("unix:") :]
            self._connect: Any = functools.partial(UnixHTTPConnection, socket_path)
            self._http_base = "http://localhost"
        else:
            parsed = urllib.parse.urlsplit(self.base_url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(f"base_url must be http://HOST:PORT, https://HOST:PORT or unix:PATH; got {base_url!r}")
            conn_class = http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection
            self._connect = functools.partial(conn_class, parsed.hostname, parsed.port)
            self._http_base = self.base_url
        self._local = threading.local()  # one kept-alive connection per thread: a step is three requests
        self._conns: set[http.client.HTTPConnection] = set()  # every thread's, so that close() closes them all
        self._conns_lock = threading.Lock()
        self.token = token
        self.timeout_s = float(timeout_s)
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._own_cache = False  # a temp dir made by cache_dir: close() removes it
        self._osworld_server = False  # set once a route of ours is missing: OSWorld's own VM server
        self._cannot_settle = False  # set once POST /settle is missing (OSWorld's server, or an older one of ours)

    @property
    def cache_dir(self) -> Path:
        """The local directory for ``vm_file`` downloads."""
        if self._cache_dir is None:
            self._cache_dir = Path(tempfile.mkdtemp(prefix="agentrl-osworld-cache-"))
            self._own_cache = True
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        return self._cache_dir

    def clear_cache(self) -> None:
        """Empty :attr:`cache_dir`, so that no episode's getters read files an earlier episode fetched or wrote."""
        if self._cache_dir is not None and self._cache_dir.is_dir():
            for entry in self._cache_dir.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)

    def _send(
        self, method: str, path: str, body: Any = None, timeout_s: float | None = None
    ) -> tuple[http.client.HTTPMessage, bytes]:
        """One request on this thread's kept-alive connection: ``(headers, body)``.

        Raises ``urllib.error.HTTPError`` for a 4xx/5xx answer (as before, when this went through
        urllib), ``ConnectionError``/``OSError`` when the server cannot be reached or hangs up.
        """
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        timeout = timeout_s or self.timeout_s
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is not None and conn not in self._conns:  # closed by close(): open a new one
                conn = None
            reused = conn is not None
            if conn is None:
                conn = self._local.conn = self._connect(timeout=timeout)
                with self._conns_lock:
                    self._conns.add(conn)
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop_connection()
                if reused and attempt == 0:
                    continue  # a kept-alive connection the server had closed: the request never ran
                raise ConnectionError(f"the desktop server at {self.base_url} hung up: {exc}") from exc
            except http.client.HTTPException as exc:
                self._drop_connection()
                raise ConnectionError(f"bad answer from the desktop server at {self.base_url}: {exc!r}") from exc
            except OSError:
                self._drop_connection()
                raise
            if resp.will_close:
                self._drop_connection()
            if resp.status >= 400:
                url, reason = self._http_base + path, _reason(resp.reason, payload)
                raise urllib.error.HTTPError(url, resp.status, reason, resp.headers, io.BytesIO(payload))
            return resp.headers, payload
        raise AssertionError("unreachable")

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._conns_lock:
                self._conns.discard(conn)
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Close every kept-alive connection this client opened (in any thread); idempotent.

        The temp :attr:`cache_dir` it made is removed too. The client stays usable: a later request opens a
        new connection.
        """
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        self._local = threading.local()
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()
        if self._own_cache and self._cache_dir is not None:
            shutil.rmtree(self._cache_dir, ignore_errors=True)
            self._cache_dir, self._own_cache = None, False

    def __enter__(self) -> DesktopClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, body: Any = None, timeout_s: float | None = None) -> bytes:
        return self._send(method, path, body, timeout_s)[1]

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
        """``POST /pyautogui``: ``{"ok", "output", "error", "timed_out"}``.

        Against OSWorld's own VM server, which has no such route, the code runs as OSWorld runs it:
        ``python -c "import pyautogui; ..."`` through ``/execute``.
        """
        if not self._osworld_server:
            try:
                return self._json(
                    "POST", "/pyautogui", {"code": code, "timeout_s": timeout_s}, self.timeout_s + timeout_s
                )
            except urllib.error.HTTPError as exc:
                if exc.code != 404:
                    raise
                self._osworld_server = True
        prefix = "import pyautogui; import time; pyautogui.FAILSAFE = False\n"
        out = self.execute(["python3", "-c", prefix + code], timeout_s=timeout_s)
        rc = out.get("returncode")
        return {"ok": rc == 0, "output": out.get("output", ""), "error": out.get("error", ""), "timed_out": rc is None}

    def screenshot_array(self) -> np.ndarray:
        """The screen as an ``(H, W, 3)`` uint8 array: raw pixels from our server, PNG decoded from OSWorld's."""
        if not self._osworld_server:
            headers, data = self._send("GET", "/screenshot?format=raw")
            width, height = headers.get("X-Width"), headers.get("X-Height")
            if width and height:
                return np.frombuffer(data, dtype=np.uint8).reshape(int(height), int(width), 3).copy()
            self._osworld_server = True  # a PNG came back: the raw format is not spoken there
            return _decode_png(data)
        return _decode_png(self.screenshot_png())

    def settle(
        self, max_s: float = 1.0, quiet_s: float = 0.02, answer_s: float | None = None
    ) -> dict[str, Any] | None:
        """``POST /settle`` (ours): wait until the screen holds still; ``None`` where the server has no such route.

        ``answer_s``: how long it must hold still while the screen is still the one from before the last
        action (``None``: the server's default). Returns ``{"waited_s", "settled", "polls"}``. OSWorld's own
        VM server answers 404: the caller pauses instead (:class:`~agentrl.envs.osworld.env.OSWorldEnv`
        sleeps 0.1 s, its fixed pause).
        """
        if self._osworld_server or self._cannot_settle:
            return None
        body: dict[str, Any] = {"max_s": max_s, "quiet_s": quiet_s}
        if answer_s is not None:
            body["answer_s"] = answer_s
        try:
            return self._json("POST", "/settle", body, self.timeout_s + max_s)
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            self._cannot_settle = True  # OSWorld's server, or ours from before /settle
            return None

    def open_file(self, path: str, timeout_s: float = 10.0) -> dict[str, Any]:
        """``POST /setup/open_file``: open ``path`` in its app, wait for a window."""
        return self._json("POST", "/setup/open_file", {"path": path, "timeout": timeout_s}, self.timeout_s + timeout_s)

    def upload_file(self, path: str, data: bytes) -> dict[str, Any]:
        """``POST /setup/upload``: write ``data`` to ``path`` (under the desktop's HOME)."""
        body = {"file_path": path, "content_b64": base64.b64encode(data).decode()}
        return self._json("POST", "/setup/upload", body)

    def activate_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> dict[str, Any]:
        """``POST /setup/activate_window``."""
        body = {"window_name": window_name, "strict": strict, "by_class": by_class}
        return self._json("POST", "/setup/activate_window", body)

    def close_window(self, window_name: str, *, strict: bool = False, by_class: bool = False) -> dict[str, Any]:
        """``POST /setup/close_window``."""
        body = {"window_name": window_name, "strict": strict, "by_class": by_class}
        return self._json("POST", "/setup/close_window", body)

    def reset(self) -> bool:
        """``POST /reset`` (ours): kill the apps and restore HOME; ``False`` where the server has no such route."""
        try:
            self._json("POST", "/reset", {}, max(self.timeout_s, 30.0))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def installed_apps(self) -> list[str] | None:
        """``GET /apps`` (ours): the apps installed on the desktop's machine; ``None`` where not served."""
        try:
            return [str(app) for app in self._json("GET", "/apps").get("apps", [])]
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def health(self) -> dict[str, Any]:
        """``GET /health`` (ours): ``{"alive", "crashed"}``; a server without the route that answers counts as alive."""
        try:
            return dict(self._json("GET", "/health", timeout_s=10.0))
        except urllib.error.HTTPError as exc:
            return {"alive": exc.code == 404, "crashed": []}
        except (OSError, ValueError):
            return {"alive": False, "crashed": []}

    def alive(self) -> bool:
        """Whether the desktop's display answers (see :meth:`health`)."""
        return bool(self.health().get("alive", False))

    def terminal_output(self) -> str | None:
        """``GET /terminal``: the text, or ``None`` when the server does not serve it."""
        try:
            return self._json("GET", "/terminal").get("output")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def accessibility_tree(self) -> str | None:
        """``GET /accessibility``: the XML, or ``None`` when the server cannot give it (404/503)."""
        try:
            return self._json("GET", "/accessibility", timeout_s=max(self.timeout_s, 30.0)).get("AT")
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 503):
                return None
            raise

    def get(self, spec: Mapping[str, Any]) -> Any:
        """The ``get`` of :func:`agentrl.envs.osworld.tasks.evaluate.evaluate`: the getter ``spec["type"]`` names.

        The getters are OSWorld's, in :data:`agentrl.envs.osworld.evaluators.GETTERS` (``vm_file`` -> a local path
        in :attr:`cache_dir`, ``vm_command_line`` -> stdout, ``list_directory`` -> the tree, the apps' getters...).
        An unknown type raises ``ValueError``.
        """
        return get_result(self, spec)
