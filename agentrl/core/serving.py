"""Small HTTP servers in a background thread (uvicorn, or the stdlib), loopback by default.

Shared by the retrieval server (``agentrl serve-retriever``) and the model server
(``agentrl serve-model``): both bind 127.0.0.1 unless told otherwise, start in a daemon thread
for tests and benchmarks, and report the port they got.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ServerHandle", "ThreadedServerHandle", "is_loopback", "refuse_remote", "start_server_thread"]


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
