"""A sandbox on a sandbox server (``agentrl serve-sandbox``): the :class:`Sandbox` protocol over HTTP.

:class:`RemoteSandbox` opens its server session lazily (at the first ``execute``), keeps one keep-alive
connection, and never raises because of the agent's code. Failures of the link come back as results:

* connection refused / unreachable: idempotent calls (session creation, reset, close) and calls that
  never reached the server are retried ``retries`` times with backoff; then ``execute`` answers
  ``ok=False`` with an error naming the server;
* the connection dropped after the code was sent: the outcome is unknown, so the call is *not* retried
  (the code may have run) and the result says so;
* the server lost the session (404: it restarted, or the session expired): a new session is opened
  and the result says that earlier variables are lost and the code was not run;
* a per-call deadline of the code's timeout plus ``margin_s`` bounds every call.

Misuse raises: executing after :meth:`close` (:class:`~agentrl.core.errors.SandboxClosed`), or a token
the server refuses (:class:`~agentrl.core.errors.SandboxUnavailable`).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from agentrl.core.errors import AgentRLError, SandboxClosed, SandboxUnavailable
from agentrl.sandboxes.base import ExecutionRequest, ExecutionResult

__all__ = ["RemoteSandbox"]

_RETRY_STATUS = (502, 503, 504)


class _Unreachable(AgentRLError):
    """No response: the server could not be reached (after retries) or the link broke mid-call."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class RemoteSandbox:
    """Run code in a session on a sandbox server.

    Args:
        url: the server, like ``http://127.0.0.1:8787``.
        token: the bearer token (``None`` for a server without tokens).
        tier: the tier to ask the server for (it must be the one it runs).
        options: session options the server lets clients set: ``timeout_s``, ``cpu_s``,
            ``max_output_chars``, ``preimport``, ``memory_mb``, ``max_file_mb``, ``mode``.
        timeout_s: the default code timeout of the session (unless ``options`` names one).
        retries: extra attempts for calls that are safe to repeat.
        connect_timeout_s: how long to wait for a connection.
        margin_s: added to the code's timeout for the HTTP deadline (the server must kill and answer).

    Example:
        >>> from agentrl.sandboxes.server import serve_sandbox
        >>> with serve_sandbox(tokens={"s3cret": "me"}) as server:
        ...     with RemoteSandbox(server.url, token="s3cret", options={"preimport": []}) as box:
        ...         print(box.execute(ExecutionRequest("x = 6 * 7; x")).output, end="")
        42
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        tier: str = "process",
        options: dict[str, Any] | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
        connect_timeout_s: float = 2.0,
        margin_s: float = 15.0,
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.tier = tier
        self.options = dict(options or {})
        self.options.setdefault("timeout_s", float(timeout_s))
        self.timeout_s = float(self.options["timeout_s"])
        self.retries = max(0, int(retries))
        self.connect_timeout_s = float(connect_timeout_s)
        self.margin_s = float(margin_s)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s + self.margin_s, connect=self.connect_timeout_s),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        self._lock = threading.RLock()
        self._session: str | None = None
        self._server_isolation: str | None = None
        self._closed = False

    # -- HTTP --------------------------------------------------------------------------------
    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        idempotent: bool,
        timeout: float | None = None,
    ) -> Any:
        """One request with retries; returns the response or raises :class:`_Unreachable`."""
        import httpx

        kwargs: dict[str, Any] = {}
        if body is not None:
            # ASCII JSON: lone surrogates in the agent's code travel as \udXXX escapes, not as invalid UTF-8.
            kwargs["content"] = json.dumps(body).encode("ascii")
            kwargs["headers"] = {"Content-Type": "application/json"}
        if timeout is not None:
            kwargs["timeout"] = httpx.Timeout(timeout, connect=self.connect_timeout_s)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(0.1 * 2 ** (attempt - 1), 1.0))
            try:
                resp = self._http.request(method, path, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # never reached the server
                last = f"{type(exc).__name__}: {exc}"
                continue
            except httpx.TimeoutException as exc:
                raise _Unreachable(
                    f"no reply from the sandbox server {self.url} within the deadline ({type(exc).__name__})",
                    timed_out=True,
                ) from None
            except httpx.TransportError as exc:  # sent, then the link broke: unknown outcome
                last = f"{type(exc).__name__}: {exc}"
                if idempotent:
                    continue
                raise _Unreachable(
                    f"the connection to the sandbox server {self.url} broke during the call "
                    f"({last}); the code may or may not have run"
                ) from None
            if resp.status_code in _RETRY_STATUS and (idempotent or resp.status_code == 503):
                last = f"HTTP {resp.status_code}: {_message(resp)}"
                if attempt < self.retries:
                    continue
            return resp
        raise _Unreachable(f"the sandbox server {self.url} is unreachable after {self.retries + 1} attempts ({last})")

    def _open(self) -> str:
        """The session id, creating the session if needed; raises _Unreachable or SandboxUnavailable."""
        if self._session is not None:
            return self._session
        resp = self._call("POST", "/v1/sessions", {"tier": self.tier, "options": self.options}, idempotent=True)
        if resp.status_code != 200:
            raise SandboxUnavailable(
                f"the sandbox server {self.url} refused to open a session (HTTP {resp.status_code}): {_message(resp)}"
            )
        data = resp.json()
        self._session = str(data["session"])
        self._server_isolation = str(data.get("isolation") or "") or self._server_isolation
        self.timeout_s = float(data.get("timeout_s", self.timeout_s))
        return self._session

    # -- the protocol ------------------------------------------------------------------------
    @property
    def isolation(self) -> str:
        """``"remote (URL): <the isolation of the server's sandboxes>"``."""
        if self._server_isolation is None and not self._closed:
            try:
                resp = self._call("GET", "/v1/health", idempotent=True)
                if resp.status_code == 200:
                    self._server_isolation = str(resp.json().get("isolation", ""))
            except _Unreachable:
                return f"remote ({self.url}): unknown (the server is unreachable)"
        return f"remote ({self.url}): {self._server_isolation or 'unknown'}"

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run ``request`` in the server session; link failures come back as ``ok=False`` results."""
        with self._lock:
            if self._closed:
                raise SandboxClosed("RemoteSandbox")
            start = time.monotonic()

            def failed(error: str, timed_out: bool = False) -> ExecutionResult:
                return ExecutionResult(
                    ok=False, output="", error=error, timed_out=timed_out, latency_s=time.monotonic() - start
                )

            code = request.code
            if isinstance(code, (bytes, bytearray)):
                code = bytes(code).decode("utf-8", errors="replace")
            timeout = self.timeout_s if request.timeout_s is None else float(request.timeout_s)
            try:
                sid = self._open()
                resp = self._call(
                    "POST",
                    f"/v1/sessions/{sid}/execute",
                    {"code": str(code), "timeout_s": timeout},
                    idempotent=False,
                    timeout=timeout + self.margin_s,
                )
            except _Unreachable as exc:
                if exc.timed_out:
                    # The server may still be running it: start over in a new session next time.
                    self._forget()
                return failed(str(exc), exc.timed_out)
            if resp.status_code == 404:
                self._session = None
                note = f"the sandbox server {self.url} lost this session (it restarted, or the session expired); "
                try:
                    self._open()
                    note += "a new session was opened, earlier variables are lost; the code was not run: send it again"
                except _Unreachable as exc:
                    note += f"opening a new one failed: {exc}"
                return failed(note)
            if resp.status_code == 401:
                raise SandboxUnavailable(f"the sandbox server {self.url} refused the token: {_message(resp)}")
            if resp.status_code != 200:
                return failed(
                    f"the sandbox server {self.url} refused the call (HTTP {resp.status_code}): {_message(resp)}"
                )
            try:
                data = resp.json()
                error = data.get("error")
                return ExecutionResult(
                    ok=bool(data["ok"]),
                    output=str(data.get("output") or ""),
                    error=None if error is None else str(error),
                    timed_out=bool(data.get("timed_out")),
                    truncated=bool(data.get("truncated")),
                    latency_s=time.monotonic() - start,
                )
            except (ValueError, KeyError, AttributeError) as exc:
                return failed(f"the sandbox server {self.url} sent a malformed reply ({exc})")

    def reset(self) -> None:
        """Start over from a clean interpreter (a server-side reset; a new session if that fails)."""
        with self._lock:
            if self._closed:
                raise SandboxClosed("RemoteSandbox")
            if self._session is None:
                return
            try:
                resp = self._call("POST", f"/v1/sessions/{self._session}/reset", idempotent=True)
                if resp.status_code == 200:
                    return
            except _Unreachable:
                pass
            self._forget()

    def _forget(self) -> None:
        """Drop the session: delete it on the server if it answers; the next execute opens a new one."""
        sid, self._session = self._session, None
        if sid is not None:
            try:
                self._call("DELETE", f"/v1/sessions/{sid}", idempotent=True, timeout=self.connect_timeout_s + 1)
            except _Unreachable:
                pass  # the server expires idle sessions

    def close(self) -> None:
        """Delete the server session and close the connection; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._forget()
            finally:
                self._http.close()

    def __enter__(self) -> RemoteSandbox:
        """Return the sandbox itself."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the sandbox."""
        self.close()

    def __repr__(self) -> str:
        """Show the server and the session."""
        return f"RemoteSandbox({self.url!r}, tier={self.tier!r}, session={self._session!r})"


def _message(resp: Any) -> str:
    try:
        data = resp.json()
        if isinstance(data, dict) and "error" in data:
            return str(data["error"])
    except ValueError:
        pass
    return resp.text[:500]
