"""What the attack tests share: a server started as a user starts it (``agentrl serve-...`` in its own process),
its memory high-water mark, and raw sockets for requests no well-behaved client sends.

Every attack talks only to 127.0.0.1 (or a unix socket the test made), is bounded in count and time, and stops
its server itself.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.paths import ROOT


class ServerProcess:
    """An ``agentrl serve-*`` command in its own process; ``url`` is what it printed once it listened."""

    def __init__(self, argv: Sequence[str], *, ready: str, timeout_s: float = 120.0, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # closed in close()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentrl.cli", *argv], stdout=subprocess.PIPE, stderr=self._stderr, text=True,
            cwd=ROOT, env=env,
        )
        self.url = self._wait(ready, timeout_s)

    def _wait(self, ready: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}): {self.stderr()[-2000:]}")
            if line.startswith(ready):
                return line.split()[-1]
        raise TimeoutError(f"the server did not print {ready!r} in {timeout_s}s: {self.stderr()[-2000:]}")

    @property
    def port(self) -> int:
        """The TCP port it listens on."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def high_water_mb(self) -> float:
        """The process's peak resident memory so far (``VmHWM``), in MB."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmHWM")

    def stderr(self) -> str:
        """What it wrote on stderr so far."""
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def close(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and close its files."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()


@contextlib.contextmanager
def server_process(
    argv: Sequence[str], tmp_path: Path, *, ready: str, timeout_s: float = 120.0
) -> Iterator[ServerProcess]:
    """:class:`ServerProcess` as a context manager."""
    server = ServerProcess(argv, ready=ready, timeout_s=timeout_s, stderr_path=tmp_path / "server.err")
    try:
        yield server
    finally:
        server.close()


def raw_request(port: int, request: bytes, *, timeout_s: float = 10.0) -> bytes:
    """Send ``request`` as it is on a fresh connection to 127.0.0.1:``port``; everything the server answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(request)
        chunks = []
        with contextlib.suppress(TimeoutError, ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    """The status code of a raw HTTP answer (0 when there is none)."""
    if not answer.startswith(b"HTTP/1."):
        return 0
    return int(answer.split(b" ", 2)[1])


def raise_own_files_limit(wanted: int) -> None:
    """Let this (test) process hold ``wanted`` sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


Answer = tuple[int, dict[str, str], bytes]
"""What a page server answers: status, headers, body."""


@contextlib.contextmanager
def page_server(answer: Callable[[str], Answer]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 answering each GET with ``answer(path)``; yields its ``http://127.0.0.1:PORT``.

    The attacker's web page, or a host-only service that holds a secret: what the tests aim at the servers.
    """

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = answer(self.path)
            self.send_response(status)
            for key, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def assert_no_findings(report: Any) -> None:
    """Fail naming every probe of an ``agentrl redteam`` report whose verdict is a finding, with its evidence."""
    assert report.skipped is None, report.skipped
    assert report.rows, f"no probe ran on {report.target}"
    found = [f"{row.probe}: {row.verdict} (mean {row.mean:.3f} against the floor's {row.floor:.3f}; "
             f"{(row.findings or row.errors or row.notes or [''])[0]})" for row in report.findings]
    assert not found, f"{report.target}: " + "; ".join(found)
