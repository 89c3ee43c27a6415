"""Attacks on the connection layer every server shares (:mod:`agentrl.serving.guard`): slowloris, floods, slow bodies.

Finding 8 of the trust audit of 036fe13: 1,100 unfinished requests stopped ``serve-env`` (no header timeout, no
connection limit), and its accept errors then logged 262 MB in 80 s. These tests hold that many connections open
against a server in its own process and check that it goes on answering, closes the slow ones, and stays quiet.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")

from agentrl.serving.stack import start_server_thread
from tests.security.attack import raise_own_files_limit, raw_request, server_process, status_of


def _health(url: str, timeout_s: float = 5.0) -> int:
    with urllib.request.urlopen(url + "/health", timeout=timeout_s) as response:
        return int(response.status)


def _slow_connections(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each sent half a request's headers and then nothing."""
    socks = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(5.0)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        except OSError:
            sock.close()
            continue
        socks.append(sock)
    return socks


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        sock.settimeout(0.2)
        return sock.recv(4096) is not None  # b"" (closed) or a 408/503 answer before the close
    except TimeoutError:
        return False
    except OSError:
        return True


def test_slowloris_with_the_defaults_neither_stops_the_server_nor_floods_its_log(tmp_path: Path) -> None:
    raise_own_files_limit(4096)
    argv = ["serve-env", "AgentRL/Letter-v0", "--port", "0", "--insecure-loopback", "--log-level", "warning"]
    with server_process(argv, tmp_path, ready="agentrl-env-server:") as server:
        socks = _slow_connections(server.port, 1100)
        try:
            time.sleep(1.0)
            assert server.alive()
            log_size = len(server.stderr())
            assert log_size < 64 * 1024, f"the server logged {log_size} bytes under the flood"
            deadline = time.monotonic() + 20.0  # the default header timeout is 10 s
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    if _health(server.url, timeout_s=2.0) == 200:
                        break
                time.sleep(0.5)
            else:
                pytest.fail("the server did not answer /health within 20 s of 1,100 slow connections")
            time.sleep(11.0)
            open_still = sum(not _closed_by_server(sock) for sock in socks)
            assert open_still == 0, f"{open_still} connections that never finished their headers are still open"
        finally:
            for sock in socks:
                sock.close()
        assert len(server.stderr()) < 64 * 1024


def _echo_app() -> object:
    from agentrl.serving.stack import json_response, make_app

    async def echo(request: object) -> object:
        body = await request.body()  # type: ignore[attr-defined]
        return json_response({"n": len(body)})

    return make_app([("/echo", "POST", echo), ("/health", "GET", lambda request: json_response({"ok": True}))])


def test_past_the_connection_limit_a_connection_gets_503_at_once_and_the_server_recovers() -> None:
    raise_own_files_limit(1024)
    with start_server_thread(_echo_app(), max_connections=20, header_timeout_s=1.0) as handle:
        socks = _slow_connections(handle.port, 20)
        try:
            time.sleep(0.3)
            start = time.monotonic()
            answer = raw_request(handle.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", timeout_s=5)
            assert status_of(answer) == 503 and time.monotonic() - start < 2.0
            time.sleep(1.5)  # the header timeout frees the slots
            assert sum(_closed_by_server(sock) for sock in socks) == 20
            assert _health(handle.url) == 200
        finally:
            for sock in socks:
                sock.close()


def test_a_request_trickling_its_headers_byte_by_byte_is_cut_off() -> None:
    """uvicorn's keep-alive timer restarts on every byte; the header timeout does not."""
    with start_server_thread(_echo_app(), header_timeout_s=1.0) as handle, socket.create_connection(
        ("127.0.0.1", handle.port), timeout=5
    ) as sock:
        start = time.monotonic()
        closed = False
        for byte in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: " + b"a" * 100:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - start > 3.0:
                break
        if not closed:
            closed = _closed_by_server(sock)
        assert closed and time.monotonic() - start < 3.5


def test_a_body_sent_too_slowly_is_answered_408() -> None:
    with start_server_thread(_echo_app(), body_timeout_s=1.0) as handle, socket.create_connection(
        ("127.0.0.1", handle.port), timeout=10
    ) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n{")
        start = time.monotonic()
        answer = sock.recv(4096)
        assert status_of(answer) == 408 and time.monotonic() - start < 3.0, answer


def test_an_oversized_body_is_refused_before_it_is_read_whole() -> None:
    from agentrl.serving.stack import json_response, make_app

    async def echo(request: object) -> object:
        return json_response({"n": len(await request.body())})  # type: ignore[attr-defined]

    app = make_app([("/echo", "POST", echo)], max_request_bytes=1024)
    with start_server_thread(app) as handle:
        request = urllib.request.Request(
            handle.url + "/echo", data=json.dumps({"x": "y" * 5000}).encode(),
            headers={"Content-Type": "application/json"}, method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 413
