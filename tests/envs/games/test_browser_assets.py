"""The game pages' large assets: served by the host's loopback file server, and nothing more through it.

A file over ``DIRECT_BYTES`` (Ruffle's wasm) is handed from the page's route to the host's ``AssetFileServer``
instead of crossing Playwright's driver. These tests attack that server as a local process would (guessed
addresses, walks out of a folder, other methods, a file swapped for a link) and as a page would (asking for the
server's address itself), and check that a page still gets the bytes it asked for, under the name it asked for.
"""

from __future__ import annotations

import http.client
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agentrl.envs.games.browser import DIRECT_BYTES, AssetFileServer, BrowserHost, GamePage


@pytest.fixture
def files() -> Iterator[AssetFileServer]:
    server = AssetFileServer()
    yield server
    server.close()


def _request(url_or_path: str, server: AssetFileServer, method: str = "GET") -> tuple[int, bytes]:
    path = urlsplit(url_or_path).path if url_or_path.startswith("http") else url_or_path
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_serves_a_registered_file_with_its_type_on_loopback_only(files: AssetFileServer, tmp_path: Path) -> None:
    (tmp_path / "a.wasm").write_bytes(b"\0asm-bytes")
    url = files.url((tmp_path / "a.wasm").resolve(), "application/wasm")
    assert urlsplit(url).hostname == "127.0.0.1" and files._server.server_address[0] == "127.0.0.1"
    assert files.url((tmp_path / "a.wasm").resolve(), "application/wasm") == url  # one address per file
    connection = http.client.HTTPConnection("127.0.0.1", files.port, timeout=10)
    connection.request("GET", urlsplit(url).path)
    response = connection.getresponse()
    assert (response.status, response.getheader("Content-Type"), response.read()) == (
        200, "application/wasm", b"\0asm-bytes"
    )
    connection.close()
    assert _request(url, files, "HEAD") == (200, b"")


@pytest.mark.parametrize(
    "path",
    ["/", "/a.txt", "/../a.txt", "/%2e%2e/etc/passwd", "/etc/passwd", "//etc/passwd", "/x" * 40, "/AAAAAAAAAAAA"],
)
def test_nothing_but_a_registered_token_is_served(files: AssetFileServer, tmp_path: Path, path: str) -> None:
    (tmp_path / "a.txt").write_text("secret-ish")
    registered = files.url((tmp_path / "a.txt").resolve(), "text/plain")
    status, body = _request(path, files)
    assert status == 404 and b"secret-ish" not in body
    assert _request(registered + "/../a.txt", files)[0] == 404  # a token is a whole path, not a folder


def test_other_methods_are_refused(files: AssetFileServer, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    url = files.url((tmp_path / "a.txt").resolve(), "text/plain")
    for method in ("POST", "PUT", "DELETE"):
        assert _request(url, files, method)[0] == 501
    assert (tmp_path / "a.txt").read_text() == "x"


def test_a_file_swapped_for_a_link_after_registration_is_not_followed(files: AssetFileServer, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("outside the served folder")
    served = tmp_path / "served"
    served.mkdir()
    (served / "big.bin").write_bytes(b"ok")
    url = files.url((served / "big.bin").resolve(), "application/octet-stream")
    (served / "big.bin").unlink()
    os.symlink(tmp_path / "outside.txt", served / "big.bin")
    status, body = _request(url, files)
    assert status == 404 and b"outside" not in body


def test_closed_server_refuses_connections(tmp_path: Path) -> None:
    server = AssetFileServer()
    port = server.port
    server.close()
    server.close()  # twice is fine
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).request("GET", "/")


# ------------------------------------------------------------------------------------------------ in a page


@pytest.fixture(scope="module")
def host() -> Iterator[BrowserHost]:
    if not shutil.which("chromium") and not os.environ.get("AGENTRL_CHROMIUM"):
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    made = BrowserHost()
    yield made
    made.close()


FETCH = """async (url) => {
  try { const r = await fetch(url); const b = new Uint8Array(await r.arrayBuffer());
        return {status: r.status, size: b.length, first: b[0], type: r.headers.get('content-type'), url: r.url}; }
  catch (e) { return {error: String(e)}; } }"""


def test_a_page_gets_a_large_file_from_the_server_under_its_own_name(host: BrowserHost, tmp_path: Path) -> None:
    (tmp_path / "big.wasm").write_bytes(b"\7" * (DIRECT_BYTES + 1))
    (tmp_path / "small.js").write_text("1")
    page = GamePage(roots={"x": tmp_path}, pages={"p.html": "<html></html>"}, host=host)
    try:
        page.open("p.html")
        before = host.files().served
        big = page.evaluate(FETCH, "/x/big.wasm")
        assert big == {"status": 200, "size": DIRECT_BYTES + 1, "first": 7, "type": "application/wasm",
                       "url": "http://agentrl.games/x/big.wasm"}
        assert host.files().served == before + 1
        assert page.evaluate(FETCH, "/x/small.js")["status"] == 200  # small files: fulfilled by the route
        assert host.files().served == before + 1
        assert page.evaluate(FETCH, "/x/../../etc/passwd")["status"] == 404
    finally:
        page.close()


def test_a_page_cannot_reach_the_server_by_its_address(host: BrowserHost, tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"\1" * (DIRECT_BYTES + 1))
    page = GamePage(roots={"x": tmp_path}, pages={"p.html": "<html></html>"}, host=host)
    try:
        page.open("p.html")
        assert page.evaluate(FETCH, "/x/big.bin")["status"] == 200
        address = host.files().url((tmp_path / "big.bin").resolve(), "application/octet-stream")
        aborted = page.aborted_requests
        for url in (address, f"http://127.0.0.1:{host.files().port}/", f"http://localhost:{host.files().port}/"):
            assert "error" in page.evaluate(FETCH, url), url
        assert page.aborted_requests == aborted + 3
    finally:
        page.close()
