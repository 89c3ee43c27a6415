r"""A tiny Chrome DevTools Protocol client, standard library only, that runs *inside* the desktop's sandbox.

The desktop's Chromium listens for DevTools on ``127.0.0.1:9222`` of the sandbox's own network
namespace, which nothing outside the sandbox can reach. So the evaluator never connects to it: it
sends this file's source, plus one ``print(json.dumps(main(REQUEST)))`` line, to the desktop's
``/run_python`` (:func:`agentrl.envs.osworld.evaluators.chrome.cdp_request`), and the code runs in the same
sandbox as Chromium. The module imports nothing from ``agentrl``; it is also importable on the host,
where its pure helpers are tested.

Requests (``main``'s argument): ``{"op": "tabs"}`` -> the page tabs ``[{"id", "url", "title",
"visible"}]``, most recently active first (Chromium's ``/json/list`` order); ``{"op": "open", "urls":
[...]}`` opens each URL in a new tab and closes the tab that was first, as OSWorld's
``chrome_open_tabs`` does; ``{"op": "eval", "id": TAB, "expression": JS}`` -> the expression's JSON
value in that tab; ``{"op": "visit", "url": U}`` opens ``U`` in a new tab, waits for its load and
returns ``{"title", "url", "content"}`` (the page's HTML), then closes that tab.

>>> ws_frame(b"hi", mask=b"\x00\x00\x00\x00")
b'\x81\x82\x00\x00\x00\x00hi'
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import socket
import struct
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

PORT = 9222
"""The DevTools port Chromium listens on inside the sandbox (OSWorld's clients reach 9222 too)."""
HOST = "127.0.0.1"
CONNECT_WAIT_S = 30.0
LOAD_WAIT_S = 10.0


_FORWARD = re.compile(r"^tcp-listen:(\d+)(,.*)?$", re.IGNORECASE)


def is_cdp_forward(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is OSWorld's ``socat tcp-listen:9222,fork tcp:localhost:PORT`` DevTools forward.

    OSWorld's Chrome tasks launch that forward to reach ``google-chrome --remote-debugging-port=1337``; Chromium
    here listens on :data:`PORT` itself, so such a forward is already satisfied (the server and the task pool
    treat it so).

    >>> is_cdp_forward(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
    True
    >>> is_cdp_forward(["socat", "tcp-listen:8080,fork", "tcp:localhost:80"])
    False
    """
    if len(argv) != 3 or os.path.basename(argv[0]) != "socat":
        return False
    match = _FORWARD.match(argv[1])
    return bool(match and int(match.group(1)) == PORT and argv[2].lower().startswith("tcp:"))


class CDPError(RuntimeError):
    """DevTools did not answer, or answered with an error."""


def http_json(path: str, method: str = "GET", *, port: int = PORT, timeout_s: float = 5.0) -> Any:
    """``path`` of the DevTools HTTP endpoint (``/json/list``, ``/json/new?URL``...), decoded."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    if response.status != 200:
        raise CDPError(f"DevTools {method} {path}: HTTP {response.status}: {body[:200]!r}")
    return json.loads(body) if body.strip() else None


def wait_for_devtools(port: int = PORT, wait_s: float = CONNECT_WAIT_S) -> None:
    """Wait until DevTools answers on ``port`` (Chromium takes a moment to start); else :class:`CDPError`."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            http_json("/json/version", port=port)
            return
        except (OSError, CDPError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise CDPError(
                    f"nothing answers DevTools on {HOST}:{port} of the desktop after {wait_s:g} s ({exc}); "
                    "launch Chromium first (a launch step of google-chrome or chromium)"
                ) from None
            time.sleep(0.25)


def ws_frame(payload: bytes, mask: bytes | None = None, opcode: int = 1) -> bytes:
    """One final, masked WebSocket frame (RFC 6455) carrying ``payload``, as a client must send it."""
    mask = mask if mask is not None else os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked


class WebSocket:
    """A blocking WebSocket client for one DevTools target (text frames, no extensions, no Origin header)."""

    def __init__(self, url: str, timeout_s: float = 15.0) -> None:
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname or HOST, parts.port or 80), timeout=timeout_s)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise CDPError(f"DevTools closed the WebSocket handshake for {url}")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise CDPError(f"DevTools refused the WebSocket for {url}: {status!r}")
        self.next_id = 0

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise CDPError("DevTools closed the WebSocket")
            data += chunk
        return data

    def recv(self) -> str:
        """The next text message (continuation frames joined; pings and pongs skipped)."""
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise CDPError("DevTools closed the WebSocket")
            if opcode in (9, 10):
                continue
            message += payload
            if b0 & 0x80:
                return message.decode("utf-8", "replace")

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one command and return its ``result`` (events in between are skipped)."""
        self.next_id += 1
        self.sock.sendall(ws_frame(json.dumps({"id": self.next_id, "method": method,
                                               "params": params or {}}).encode()))
        while True:
            reply = json.loads(self.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error'].get('message', reply['error'])}")
                return reply.get("result", {})

    def close(self) -> None:
        """Close the connection."""
        try:
            self.sock.sendall(ws_frame(b"", opcode=8))
        except OSError:
            pass
        self.sock.close()


def evaluate(ws_url: str, expression: str) -> Any:
    """``expression``'s value (by JSON) in the tab at ``ws_url``; an exception in the page is :class:`CDPError`."""
    ws = WebSocket(ws_url)
    try:
        result = ws.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
    finally:
        ws.close()
    if "exceptionDetails" in result:
        details = result["exceptionDetails"]
        raise CDPError(f"the page raised: {details.get('exception', {}).get('description') or details.get('text')}")
    return result.get("result", {}).get("value")


def page_targets(port: int = PORT) -> list[dict[str, Any]]:
    """The ``page`` targets (tabs), most recently active first; Chromium's own UI pages are left out."""
    return [t for t in http_json("/json/list", port=port) or [] if t.get("type") == "page"]


def tabs(port: int = PORT) -> list[dict[str, Any]]:
    """``[{"id", "url", "title", "visible"}]``: ``visible`` is the tab's ``document.visibilityState``."""
    found = []
    for target in page_targets(port):
        try:
            visible = evaluate(target["webSocketDebuggerUrl"], "document.visibilityState") == "visible"
        except (OSError, CDPError, KeyError, ValueError):
            visible = False
        found.append({"id": target["id"], "url": target.get("url", ""), "title": target.get("title", ""),
                      "visible": visible, "ws": target.get("webSocketDebuggerUrl", "")})
    return found


def wait_loaded(ws_url: str, wait_s: float = LOAD_WAIT_S) -> None:
    """Wait for the tab's ``document.readyState`` to be ``complete`` (a page that never loads is left as is)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if evaluate(ws_url, "document.readyState") == "complete":
                return
        except (OSError, CDPError, ValueError):
            pass
        time.sleep(0.2)


def new_tab(url: str, port: int = PORT) -> dict[str, Any]:
    """Open ``url`` in a new tab (``PUT /json/new``) and wait for it to load; the target object."""
    target = http_json("/json/new?" + urllib.parse.quote(url, safe=":/?&=%#@+,;~!$*'()"), "PUT", port=port)
    if not isinstance(target, dict) or "id" not in target:
        raise CDPError(f"DevTools did not open a tab for {url!r}")
    wait_loaded(target["webSocketDebuggerUrl"])
    return target


def close_tab(target_id: str, port: int = PORT) -> None:
    """Close one tab."""
    conn = http.client.HTTPConnection(HOST, port, timeout=5.0)
    try:
        conn.request("GET", f"/json/close/{target_id}")
        conn.getresponse().read()
    finally:
        conn.close()


def open_urls(urls: list[str], port: int = PORT) -> list[str]:
    """OSWorld's ``chrome_open_tabs``: each URL in a new tab; after the first, the oldest tab is closed."""
    before = [t["id"] for t in page_targets(port)]
    opened = []
    for i, url in enumerate(urls):
        opened.append(new_tab(str(url), port)["id"])
        if i == 0 and before:
            close_tab(before[-1], port)  # /json/list is newest first: the last is the tab Chromium opened with
    return opened


def main(request: dict[str, Any]) -> dict[str, Any]:
    """Serve one request (see the module docstring): ``{"value": ...}``, or ``{"error": message}``."""
    try:
        return {"value": _serve(request)}
    except (OSError, CDPError, KeyError, ValueError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _serve(request: dict[str, Any]) -> Any:
    port = int(request.get("port", PORT))
    wait_for_devtools(port, float(request.get("wait_s", CONNECT_WAIT_S)))
    op = request.get("op")
    if op == "tabs":
        return [{k: v for k, v in t.items() if k != "ws"} for t in tabs(port)]
    if op == "open":
        return open_urls(list(request["urls"]), port)
    if op == "eval":
        target = next((t for t in page_targets(port) if t["id"] == request["id"]), None)
        if target is None:
            raise CDPError(f"no tab {request['id']!r}")
        return evaluate(target["webSocketDebuggerUrl"], str(request["expression"]))
    if op == "visit":
        target = new_tab(str(request["url"]), port)
        try:
            return evaluate(target["webSocketDebuggerUrl"], "({title: document.title, url: location.href, "
                            "content: document.documentElement ? document.documentElement.outerHTML : ''})")
        finally:
            close_tab(target["id"], port)
    raise CDPError(f"unknown op {op!r}; use tabs, open, eval or visit")
