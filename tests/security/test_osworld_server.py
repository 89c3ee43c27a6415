"""Attacks on ``agentrl serve-desktop``'s HTTP layer (findings 5 and 6 of the trust audit of 036fe13).

The desktop is a stand-in (the HTTP layer is what is attacked here; the sandbox behind it has its own tests in
``tests/security/test_desktop_*``): a web page must not run ``/execute`` through a ``text/plain`` or form post,
a foreign ``Host`` must not be answered, ``/setup/download_file`` must not fetch what only the host can reach,
and an insecure unix socket must be its owner's alone.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")
pytest.importorskip("httpx")

import httpx

from agentrl.envs.osworld.server import serve_desktop
from tests.security.attack import page_server, raw_request, status_of
from tests.serving.test_serving import FakeSession

SECRET = b"host-only secret 7d1f"


def _secret_or_redirect(path: str) -> tuple[int, dict[str, str], bytes]:
    if path.startswith("/redirect"):
        return 302, {"Location": path.split("to=", 1)[1]}, b""
    return 200, {}, SECRET


@pytest.fixture
def host_only_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 holding a secret: what the host reaches and the sandbox must not."""
    with page_server(_secret_or_redirect) as url:
        yield url


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[tuple[FakeSession, Any]]:
    session = FakeSession(str(tmp_path / "home"))
    with serve_desktop(session, insecure_loopback=True) as handle:  # as OSWorld's clients need it: no token
        yield session, handle


def test_download_file_refuses_loopback_and_private_addresses(desktop: Any, host_only_server: str) -> None:
    session, handle = desktop
    for url in [f"{host_only_server}/secret", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/x",
                "http://[::1]:1/x", "http://0.0.0.0:1/x"]:
        answer = httpx.post(handle.url + "/setup/download_file", json={"url": url, "path": "~/got"}, timeout=30)
        assert answer.status_code == 403 and "not a public address" in answer.json()["message"], (url, answer.text)
    assert not session.files, "the sandbox received a file it must not have"


def test_download_file_checks_every_redirect(monkeypatch: pytest.MonkeyPatch, host_only_server: str) -> None:
    """A public URL that redirects to loopback: the second hop is refused (here 127.0.0.1 plays the public host)."""
    from agentrl.serving import guard as http_guard
    from agentrl.serving.guard import FetchRefused, fetch_public

    port = host_only_server.rsplit(":", 1)[1]
    public = f"http://127.0.0.1:{port}"
    monkeypatch.setattr(http_guard, "is_public_address", lambda address: address == "127.0.0.1")
    assert fetch_public(public + "/file", 1024, 10) == SECRET  # the stand-in public host answers
    with pytest.raises(FetchRefused, match="not a public address"):
        fetch_public(f"{public}/redirect?to=http://127.0.0.2:{port}/secret", 1024, 10)


def test_download_file_with_the_operators_flag_fetches_loopback(tmp_path: Path, host_only_server: str) -> None:
    session = FakeSession(str(tmp_path / "home"))
    with serve_desktop(session, insecure_loopback=True, allow_private_fetch=True) as handle:
        path = f"{session.home}/got"
        answer = httpx.post(handle.url + "/setup/download_file", json={"url": host_only_server, "path": path})
        assert answer.status_code == 200 and session.files[path] == SECRET


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("text/plain", json.dumps({"command": ["id"]})), ("application/x-www-form-urlencoded", "command=id")],
)
def test_execute_refuses_what_a_page_can_post_cross_site(desktop: Any, content_type: str, body: str) -> None:
    _session, handle = desktop
    answer = httpx.post(handle.url + "/execute", content=body, headers={"Content-Type": content_type})
    assert answer.status_code == 415, answer.text
    answer = httpx.post(handle.url + "/pyautogui", content=body, headers={"Content-Type": content_type})
    assert answer.status_code == 415, answer.text


def test_a_page_of_another_origin_is_refused_even_with_json(desktop: Any) -> None:
    _session, handle = desktop
    answer = httpx.post(handle.url + "/execute", json={"command": ["id"]}, headers={"Origin": "http://attacker.test"})
    assert answer.status_code == 403 and "origin" in answer.json()["message"]
    assert httpx.post(handle.url + "/execute", json={"command": ["id"]}).status_code == 200  # a plain client


def test_a_rebinding_host_name_is_refused(desktop: Any) -> None:
    _session, handle = desktop
    body = b'{"command": ["id"]}'
    request = (b"POST /execute HTTP/1.1\r\nHost: rebind.attacker.test:%d\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (handle.port, len(body)) + body)
    assert status_of(raw_request(handle.port, request)) == 403


def test_osworlds_form_routes_still_take_forms(desktop: Any) -> None:
    session, handle = desktop
    session.files[f"{session.home}/a.txt"] = b"hello"
    answer = httpx.post(handle.url + "/file", data={"file_path": "~/a.txt"})  # PythonController.get_file's form
    assert answer.status_code == 200 and answer.content == b"hello"


def test_an_insecure_unix_socket_is_its_owners_alone(tmp_path: Path) -> None:
    path = str(tmp_path / "desktop.sock")
    with serve_desktop(FakeSession(str(tmp_path / "home")), unix_socket=path, insecure_loopback=True):
        assert os.stat(path).st_mode & 0o777 == 0o600
    with serve_desktop(FakeSession(str(tmp_path / "home")), unix_socket=path, token="t" * 32):
        assert os.stat(path).st_mode & 0o777 == 0o666  # a token guards it; the folder decides who reaches it
    with socket.socket(socket.AF_UNIX) as sock:
        assert sock.connect_ex(path) != 0  # closed with its server


def test_a_short_token_is_refused_off_loopback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="too short"):
        serve_desktop(FakeSession(str(tmp_path)), host="0.0.0.0", allow_remote=True, token="x")
