"""The shared server stack (agentrl.serving.stack) and the desktop server's HTTP layer over a fake session."""

from __future__ import annotations

import base64
import logging
import os
import socket
import tempfile
import urllib.error
from typing import Any

import httpx
import numpy as np
import pytest

pytest.importorskip("starlette", reason="starlette is missing: pip install 'agentrl-gym[serve]'")
pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")

from agentrl.envs.osworld.client import DesktopClient
from agentrl.envs.osworld.server import serve_desktop
from agentrl.serving.stack import (
    HTTPStatusError,
    decode_body,
    json_response,
    make_app,
    parse_multipart,
    start_server_thread,
)

pytestmark = pytest.mark.timeout(60)


def _multipart(fields: dict[str, Any], boundary: str = "b0undary") -> tuple[bytes, str]:
    out = b""
    for name, value in fields.items():
        if isinstance(value, tuple):
            filename, data = value
            out += (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode() + data + b"\r\n"
        else:
            out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_parse_multipart_keeps_binary_parts_exact() -> None:
    data = bytes(range(256)) * 3 + b"\r\n--b0undar\r\n\r\n"
    body, ctype = _multipart({"file_path": "~/x ü.bin", "file_data": ("x.bin", data)})
    assert parse_multipart(b"preamble\r\n" + body, ctype) == {"file_path": "~/x ü.bin", "file_data": data}
    quoted = ctype.replace("b0undary", '"b0undary"')
    assert parse_multipart(body, quoted)["file_data"] == data
    with pytest.raises(HTTPStatusError, match="closing delimiter"):
        parse_multipart(body[: -len("--b0undary--\r\n")], ctype)
    with pytest.raises(HTTPStatusError, match="boundary"):
        parse_multipart(body, "multipart/form-data")


def test_decode_body() -> None:
    assert decode_body(b"") == {}
    with pytest.raises(HTTPStatusError, match="not JSON") as info:
        decode_body(b"{nope")
    assert info.value.status == 400
    with pytest.raises(HTTPStatusError, match="JSON object"):
        decode_body(b"[1]")
    body, ctype = _multipart({"a": "1"})
    assert decode_body(body, ctype, forms=True) == {"a": "1"}
    with pytest.raises(HTTPStatusError):  # forms only where asked for
        decode_body(body, ctype)


def _app(logger: logging.Logger | None = None) -> Any:
    async def echo(request: Any) -> Any:
        body = decode_body(await request.body())
        return json_response({"client": request.state.client, "body": body})

    def boom(request: Any) -> Any:
        raise KeyError("oops")

    def refuse(request: Any) -> Any:
        raise HTTPStatusError(418, "a teapot")

    def authenticate(header: str | None, path: str) -> str:
        if path == "/secret" and header != "Bearer t":
            raise HTTPStatusError(401, "missing token")
        return "me"

    routes = [("/echo", "POST", echo), ("/boom", "GET", boom), ("/teapot", "GET", refuse), ("/secret", "GET", refuse)]
    return make_app(
        routes,
        error_body=lambda status, message: {"status": "error", "message": message},
        authenticate=authenticate,
        logger=logger,
        max_request_bytes=1000,
    )


def test_app_layer(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="agentrl.test.serving")
    with start_server_thread(_app(logging.getLogger("agentrl.test.serving"))) as handle, httpx.Client(
        base_url=handle.url
    ) as http:
        assert handle.url.startswith("http://127.0.0.1:") and handle.base_url == handle.url
        r = http.post("/echo", json={"a": 1})
        assert (r.status_code, r.json()) == (200, {"client": "me", "body": {"a": 1}})
        assert r.headers["content-type"] == "application/json"
        assert http.post("/echo/", json={}).status_code == 200  # a trailing slash is ignored
        r = http.post("/echo", content=b"{nope")
        assert (r.status_code, r.json()) == (400, {"status": "error", "message": "the body is not JSON"})
        r = http.post("/echo", content=b"x" * 5000)
        assert r.status_code == 413 and "over the limit of 1000" in r.json()["message"]

        def chunks() -> Any:
            yield b"x" * 800
            yield b"x" * 800

        r = http.post("/echo", content=chunks())  # no Content-Length: counted as it comes
        assert r.status_code == 413
        assert http.post("/echo", json={"b": 2}).json()["body"] == {"b": 2}
        r = http.get("/boom")
        assert r.status_code == 500 and r.json()["message"] == "KeyError: 'oops'"
        assert http.get("/teapot").status_code == 418
        assert http.get("/secret").json() == {"status": "error", "message": "missing token"}
        r = http.get("/nowhere")
        assert (r.status_code, r.json()["message"]) == (404, "no route GET /nowhere")
        r = http.get("/echo")
        assert (r.status_code, r.json()["message"]) == (405, "GET is not allowed on /echo")
    assert "POST /echo 200 " in caplog.text and "GET /boom 500 " in caplog.text
    assert "POST /echo 413 " in caplog.text


def test_handle_binds_in_the_callers_thread_and_closes() -> None:
    handle = start_server_thread(_app())
    with socket.socket() as sock:
        sock.connect(("127.0.0.1", handle.port))  # listening as soon as start returns
    with pytest.raises(OSError):
        start_server_thread(_app(), port=handle.port)
    handle.close()
    handle.close()
    assert not handle.thread.is_alive()
    with start_server_thread(_app(), port=handle.port) as again:  # the port is free again
        assert httpx.post(again.url + "/echo", json={}).status_code == 200


def test_unix_socket() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.sock")
        open(path, "w").close()  # a stale file is replaced
        with start_server_thread(_app(), unix_socket=path) as handle:
            assert handle.url == f"unix:{path}"
            assert os.stat(path).st_mode & 0o777 == 0o600  # its owner only: a server without a token
            with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as http:
                assert http.post("http://localhost/echo", json={"x": 1}).json()["body"] == {"x": 1}


class FakeSession:
    """What the desktop server needs of a DesktopSession, without a display."""

    width, height, display = 64, 48, ":99"

    def __init__(self, home: str) -> None:
        self.home = home
        self.files: dict[str, bytes] = {}

    def screenshot(self) -> np.ndarray:
        return np.arange(48 * 64 * 3, dtype=np.uint32).astype(np.uint8).reshape(48, 64, 3)

    def screenshot_png(self) -> bytes:
        return b"\x89PNG\r\n\x1a\nfake"

    def run_pyautogui(self, code: str, timeout_s: float) -> dict[str, Any]:
        return {"ok": True, "output": code, "error": "", "timed_out": False}

    def run(self, argv: list[str], timeout_s: float, cap: int) -> tuple[int, str, str]:
        return 0, " ".join(argv) + "\n", ""

    def read_file(self, path: str) -> bytes | None:
        return self.files.get(path)

    def write_file(self, path: str, data: bytes) -> None:
        if not path.startswith(self.home + "/"):
            raise PermissionError(f"{path} is not under HOME")
        self.files[path] = data

    def alive(self) -> bool:
        return True

    def crashed_apps(self) -> list[str]:
        return []


@pytest.fixture()
def desktop(tmp_path: Any) -> Any:
    session = FakeSession(str(tmp_path / "home"))
    with serve_desktop(session, token="tok") as handle:
        yield session, handle


def test_desktop_routes_over_a_fake_session(desktop: Any) -> None:
    session, handle = desktop
    client = DesktopClient(handle.base_url, token="tok")
    assert client.screen_size() == (64, 48) and client.platform() == "Linux"
    assert (client.screenshot_array() == session.screenshot()).all()
    assert client.screenshot_png() == session.screenshot_png()
    assert client.pyautogui("x = 1") == {"ok": True, "output": "x = 1", "error": "", "timed_out": False}
    assert client.execute(["echo", "hi"]) == {"status": "success", "output": "echo hi\n", "error": "", "returncode": 0}
    assert client.read_file("/nope") is None
    assert client.upload_file("~/a.txt", b"abc")["status"] == "success"
    assert session.files == {f"{session.home}/a.txt": b"abc"}
    assert client.read_file(f"{session.home}/a.txt") == b"abc"
    assert client.terminal_output() is None
    with httpx.Client(base_url=handle.base_url, headers={"Authorization": "Bearer tok"}) as http:
        r = http.get("/screenshot")
        assert r.headers["content-type"] == "image/png"
        r = http.post("/file", data={"file_path": f"{session.home}/a.txt"})  # OSWorld's form
        assert (r.content, r.headers["content-type"]) == (b"abc", "application/octet-stream")
        r = http.get("/platform")
        assert (r.text, r.headers["content-type"]) == ("Linux", "text/plain")
        r = http.get("/execute")  # a wrong method is "no route", as before
        assert r.status_code == 404 and r.json() == {
            "status": "error",
            "error": "no route GET /execute",
            "message": "no route GET /execute",
        }
        r = http.post("/execute", content=b"{nope", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"] == "the body is not JSON"
        r = http.post("/setup/upload", json={"file_path": "~/b.txt", "content_b64": "!!"})
        assert r.status_code == 400 and "base64" in r.json()["message"]
        r = http.post("/setup/upload", json={"file_path": "/etc/x", "content_b64": ""})
        assert r.status_code == 403 and r.json()["status"] == "error"
        r = http.post("/run_python", content=b"x" * (16 * 1024 * 1024 + 1))
        assert r.status_code == 413 and "over the limit" in r.json()["error"]
    with pytest.raises(urllib.error.HTTPError) as info:
        DesktopClient(handle.base_url, token="wrong").screen_size()
    assert info.value.code == 401


def test_desktop_upload_takes_osworlds_multipart_form(desktop: Any) -> None:
    """OSWorld's SetupController posts a MultipartEncoder form: a file_path field and a file_data file part."""
    session, handle = desktop
    data = os.urandom(100_000) + b"\r\n--boundary\r\n"
    body, ctype = _multipart({"file_path": "~/Desktop/data.bin", "file_data": ("data.bin", data)}, "9f3c1d0e7a")
    headers = {"Content-Type": ctype, "Authorization": "Bearer tok"}
    r = httpx.post(handle.base_url + "/setup/upload", content=body, headers=headers)
    assert r.status_code == 200 and r.json()["status"] == "success", r.text
    assert session.files[f"{session.home}/Desktop/data.bin"] == data
    # httpx's own multipart encoder (as requests' files=) works too
    r = httpx.post(
        handle.base_url + "/setup/upload",
        data={"file_path": "notes.txt"},
        files={"file_data": ("notes.txt", b"hello\n")},
        headers={"Authorization": "Bearer tok"},
    )
    assert r.status_code == 200, r.text
    assert session.files[f"{session.home}/notes.txt"] == b"hello\n"
    r = httpx.post(
        handle.base_url + "/setup/upload", content=body[:-20], headers=headers
    )  # truncated: no closing delimiter
    assert r.status_code == 400 and r.json()["status"] == "error"


def test_desktop_without_token_refuses_command_routes(tmp_path: Any) -> None:
    session = FakeSession(str(tmp_path))
    with serve_desktop(session) as handle, httpx.Client(base_url=handle.base_url) as http:
        r = http.post("/pyautogui", json={"code": "1"})
        assert r.status_code == 403 and "--token" in r.json()["error"]
        assert http.get("/screen_size").json() == {"width": 64, "height": 48}
    with serve_desktop(session, insecure_loopback=True) as handle:
        assert httpx.post(handle.base_url + "/pyautogui", json={"code": "1"}).json()["ok"] is True


def test_desktop_over_a_unix_socket(tmp_path: Any) -> None:
    session = FakeSession(str(tmp_path))
    with serve_desktop(session, token="tok", unix_socket=str(tmp_path / "d.sock")) as handle:
        assert handle.base_url == f"unix:{tmp_path / 'd.sock'}"
        client = DesktopClient(handle.base_url, token="tok")
        assert client.screen_size() == (64, 48)
        assert client.screenshot_array().shape == (48, 64, 3)
        assert client.upload_file("x.txt", b"1")["status"] == "success"


def test_desktop_upload_json_is_kept(desktop: Any) -> None:
    session, handle = desktop
    body = {"file_path": "~/j.txt", "content_b64": base64.b64encode(b"json").decode()}
    r = httpx.post(handle.base_url + "/setup/upload", json=body, headers={"Authorization": "Bearer tok"})
    assert r.status_code == 200 and session.files[f"{session.home}/j.txt"] == b"json"
