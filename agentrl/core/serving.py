"""Small HTTP servers in a background thread (uvicorn, or the stdlib), loopback by default.

Shared by the retrieval server (``agentrl serve-retriever``) and the model server
(``agentrl serve-model``): both bind 127.0.0.1 unless told otherwise, start in a daemon thread
for tests and benchmarks, and report the port they got.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "AppHTTPServer",
    "HTTPStatusError",
    "QuietHandler",
    "ServerHandle",
    "ThreadedServerHandle",
    "is_loopback",
    "refuse_remote",
    "start_server_thread",
]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("localhost")
    (True, True, False, True)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_remote(host: str, allow_remote: bool, server: str = "server") -> None:
    """Raise ``ValueError`` for a non-loopback ``host`` unless ``allow_remote``: our servers have no authentication.

    The message names both fixes (``allow_remote=True`` in Python, ``--allow-remote`` on the command line).

    >>> refuse_remote("127.0.0.1", allow_remote=False)
    >>> refuse_remote("0.0.0.0", allow_remote=True)
    """
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on non-loopback host {host!r}: the {server} has no authentication, so it "
            "binds to loopback only; pass allow_remote=True (--allow-remote) to expose it anyway"
        )


class HTTPStatusError(Exception):
    """An error a stdlib server's handler answers with: ``status`` and the ``message`` to send."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class QuietHandler(BaseHTTPRequestHandler):
    """The base of our stdlib request handlers: HTTP/1.1 keep-alive, ``TCP_NODELAY``, no access log.

    ``GET`` and ``POST`` go to ``_dispatch(method)``, which subclasses implement.
    """

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        """Set ``TCP_NODELAY``: small JSON replies must not wait for Nagle."""
        super().setup()
        with contextlib.suppress(OSError):  # a unix socket has no TCP options
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

    def do_GET(self) -> None:
        """Dispatch a GET."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """Dispatch a POST."""
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        raise NotImplementedError


class AppHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server over IPv4 or IPv6 (from the host's form) that holds its ``app``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: Any) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.app = app
        super().__init__(address, handler)


@dataclass
class ServerHandle:
    """A uvicorn server running in a daemon thread."""

    server: Any
    thread: threading.Thread
    url: str

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.url.rsplit(":", 1)[1])

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the server to exit and wait for its thread; idempotent."""
        self.server.should_exit = True
        self.thread.join(timeout_s)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_server_thread(
    app: Any, host: str = "127.0.0.1", port: int = 0, timeout_s: float = 10.0, *, name: str = "agentrl-server"
) -> ServerHandle:
    """Start ``app`` with uvicorn in a background thread; ``port=0`` picks a free port.

    Raises:
        RuntimeError: the server did not start within ``timeout_s`` (the port is taken, for instance).
    """
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"{name} on {host}:{port} did not start")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return ServerHandle(server, thread, f"http://{shown}:{bound}")


class ThreadedServerHandle:
    """A stdlib ``ThreadingHTTPServer`` serving in a daemon thread: ``base_url``, ``port``, ``close()``.

    ``close()`` (idempotent; also ``stop()`` and ``with``) runs ``before_close`` (release what the
    server's app holds), stops accepting, runs ``after_shutdown`` (hang up kept-alive connections),
    closes the socket and joins the thread.
    """

    def __init__(
        self,
        httpd: Any,
        host: str,
        *,
        name: str,
        app: Any = None,
        before_close: Callable[[], None] | None = None,
        after_shutdown: Callable[[], None] | None = None,
        url: str | None = None,
    ) -> None:
        self.httpd = httpd
        #: the application object the server serves (for tests and health checks)
        self.app = app
        self._before_close = before_close
        self._after_shutdown = after_shutdown
        shown = f"[{host}]" if ":" in host else host
        self.url = url or f"http://{shown}:{httpd.server_address[1]}"  # ``url``: e.g. a unix socket's
        self._closed = False
        self.thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        """The URL to give a client (the same as ``url``)."""
        return self.url

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.httpd.server_address[1])

    def close(self) -> None:
        """Stop the server; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._before_close is not None:
            self._before_close()
        self.httpd.shutdown()
        if self._after_shutdown is not None:
            self._after_shutdown()
        self.httpd.server_close()
        self.thread.join(5.0)

    stop = close

    def __enter__(self) -> ThreadedServerHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
