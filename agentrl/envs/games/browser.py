"""The browser sandbox of the game envs: one headless Chromium per process, one context per env.

Playwright's API is bound to the thread and event loop that started it, while envs are stepped from
any thread (vector envs, the rollout engine's workers). So a :class:`BrowserHost` runs async
Playwright on its own thread and event loop, and every call from an env is a coroutine submitted to
it with a deadline: a page stuck in an endless script is closed from the browser side when its
deadline passes (``PageHung``), a crashed renderer is reported (``PageCrashed``), and a browser
that died is relaunched on the next page. Each env gets its own browser context (cookies, storage,
cache), whose network is cut off: requests to ``http://agentrl.games/`` are answered from the
package's assets (and any extra folder an env names); everything else is aborted.

Chromium is Debian's ``/usr/bin/chromium`` (``AGENTRL_CHROMIUM`` overrides it); ``playwright install``
is never needed.

A file larger than :data:`DIRECT_BYTES` (Ruffle's 14 MB wasm, its script) does not cross Playwright's driver:
a fulfilled body travels base64-encoded from Python to the driver and on to Chromium, which cost the driver 2 to 4
CPU-seconds for every Flash page. The route hands such a request on to the host's :class:`AssetFileServer`, a
loopback server that serves only the files the route resolved, each at an unguessable address; the page still
sees ``http://agentrl.games/...`` and can reach nothing else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.server
import mimetypes
import os
import secrets
import shutil
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agentrl.core.deadlines import load_note, scaled_timeout
from agentrl.core.errors import AgentRLError, DependencyNotInstalled

__all__ = [
    "ASSET_HOST",
    "AssetFileServer",
    "BrowserError",
    "BrowserHost",
    "GamePage",
    "PageCrashed",
    "PageHung",
    "find_chromium",
]

ASSET_HOST = "http://agentrl.games"
ASSETS = Path(__file__).parent / "assets"
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
)
# One start of Playwright's driver or of Chromium may take this long on an idle machine (stretched with the
# load, see agentrl.core.deadlines); a start that fails is tried once more.
LAUNCH_TIMEOUT_S = 30.0
LAUNCH_TRIES = 2
#: Served files larger than this reach Chromium from the :class:`AssetFileServer`, not through Playwright's driver.
DIRECT_BYTES = 64 * 1024
T = TypeVar("T")


class BrowserError(AgentRLError, RuntimeError):
    """The browser failed; the env ends the episode with ``done_reason="env_error"``."""


class PageCrashed(BrowserError):
    """The page's renderer crashed."""


class PageHung(BrowserError):
    """The page did not answer within its deadline and was closed."""


def _first_line(exc: BaseException) -> str:
    """``Type: first line of the message`` (Playwright's messages carry a long call log after it)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"


def find_chromium() -> str:
    """The Chromium executable: ``$AGENTRL_CHROMIUM``, else Debian's ``chromium``."""
    candidates = [
        os.environ.get("AGENTRL_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    for path in candidates:
        if path and Path(path).is_file():
            return path
    raise DependencyNotInstalled(
        "chromium", command="sudo apt-get install -y chromium  (or set AGENTRL_CHROMIUM=/path/to/chrome)"
    )


class _AssetRequest(http.server.BaseHTTPRequestHandler):
    """``GET``/``HEAD /<token>``: the file registered under that token; anything else is 404 (or 501)."""

    server: _AssetHTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        entry = self.server.files.lookup(self.path.lstrip("/"))
        try:
            # O_NOFOLLOW: a file swapped for a link after the route resolved it is not followed out of its folder
            fd = os.open(entry[0], os.O_RDONLY | os.O_NOFOLLOW) if entry else -1
        except OSError:
            fd = -1
        if fd < 0 or entry is None:
            self.send_error(404)
            return
        with os.fdopen(fd, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            self.send_response(200)
            self.send_header("Content-Type", entry[1])
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if body:
                shutil.copyfileobj(file, self.wfile, 1 << 20)
        self.server.files.count_served()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # (a page's requests are not the host's log)


class _AssetHTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, files: AssetFileServer) -> None:
        self.files = files
        super().__init__(("127.0.0.1", 0), _AssetRequest)


class AssetFileServer:
    """A loopback HTTP server that serves the files registered with :meth:`url`, and nothing else.

    Each file gets a random 32-character token as its address, so a process of the machine that does not
    hold the address cannot read anything through it; there are no folders, names or ``..`` to walk.
    :class:`GamePage` registers a large file only after its route has checked that the file lies in a
    served folder, and hands the request on to its address: the page itself never sees the address, and
    a page's own request to ``127.0.0.1`` is aborted by the route like any other.

    >>> import tempfile, urllib.request
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "a.txt").write_text("hello")
    ...     files = AssetFileServer()
    ...     urllib.request.urlopen(files.url(Path(folder) / "a.txt", "text/plain")).read()
    b'hello'
    >>> files.close()
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[Path, str] = {}
        self._files: dict[str, tuple[Path, str]] = {}
        self.served = 0
        self._server = _AssetHTTPServer(self)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="agentrl-browser-files", daemon=True)
        self._thread.start()

    def url(self, path: Path, content_type: str) -> str:
        """The address that serves ``path`` (an absolute, resolved file) as ``content_type``."""
        with self._lock:
            token = self._tokens.get(path)
            if token is None:
                token = secrets.token_urlsafe(24)
                self._tokens[path] = token
            self._files[token] = (path, content_type)
        return f"http://127.0.0.1:{self.port}/{token}"

    def count_served(self) -> None:
        """Count one file served (:attr:`served`; the server answers on several threads)."""
        with self._lock:
            self.served += 1

    def lookup(self, token: str) -> tuple[Path, str] | None:
        """The file and content type registered under ``token``, or ``None``."""
        with self._lock:
            return self._files.get(token)

    def close(self) -> None:
        """Stop serving; safe to call twice."""
        self._server.shutdown()
        self._server.server_close()


class BrowserHost:
    """Async Playwright and one Chromium on a private thread; see the module docstring.

    Use :meth:`shared` for the process-wide host (recreated after a fork).
    """

    _shared: BrowserHost | None = None
    _shared_pid = -1
    _shared_lock = threading.Lock()

    def __init__(self, executable: str | None = None) -> None:
        try:
            import playwright  # noqa: F401
        except ImportError as exc:
            raise DependencyNotInstalled("playwright", extra="browser") from exc
        self.executable = executable or find_chromium()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentrl-browser", daemon=True)
        self._thread.start()
        self._playwright: Any = None
        self._browser: Any = None
        self._launch_lock: asyncio.Lock | None = None
        self._closed = False
        self._files: AssetFileServer | None = None
        self._files_lock = threading.Lock()
        self.launches = 0

    @classmethod
    def shared(cls) -> BrowserHost:
        """The process-wide host (one Chromium for all envs of this process)."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared_pid != os.getpid() or cls._shared._closed:
                cls._shared = cls()
                cls._shared_pid = os.getpid()
            return cls._shared

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coroutine`` on the host's loop and wait for it (at most ``timeout_s``)."""
        if self._closed:
            coroutine.close()
            raise BrowserError("the browser host was closed")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=timeout_s)

    async def browser(self) -> Any:
        """The running browser (launched, or relaunched after it died).

        A launch that fails or does not finish within :meth:`launch_timeout_s` (stretched with the
        machine's load) is tried once more; then :class:`BrowserError` names the step that failed.
        """
        if self._launch_lock is None:  # (made here: it belongs to the host's loop)
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:  # envs opening pages at once share one launch
            if self._browser is None or not self._browser.is_connected():
                await self._launch_with_retry()
        return self._browser

    async def _launch_with_retry(self) -> None:
        failures: list[str] = []
        for _ in range(LAUNCH_TRIES):
            try:
                self._browser = await self._launch(self.launch_timeout_s())
            except BrowserError as exc:
                failures.append(str(exc))
                continue
            self.launches += 1
            return
        distinct = list(dict.fromkeys(failures))
        raise BrowserError(f"Chromium did not start ({LAUNCH_TRIES} tries{', each' if len(distinct) == 1 else ''}): "
                           + " | ".join(distinct))

    @staticmethod
    def launch_timeout_s() -> float:
        """The deadline of one start of Playwright's driver or of Chromium: 30 s on an idle machine, more under load."""
        return scaled_timeout(LAUNCH_TIMEOUT_S)

    async def _launch(self, timeout_s: float) -> Any:
        """Start Playwright's driver (once) and Chromium, each within ``timeout_s``; the error names the step."""
        if self._playwright is None:
            from playwright.async_api import async_playwright

            try:
                self._playwright = await asyncio.wait_for(async_playwright().start(), timeout_s)
            except asyncio.TimeoutError:
                raise BrowserError(
                    f"Playwright's driver did not start within {timeout_s:.1f} s ({load_note()})"
                ) from None
            except Exception as exc:
                raise BrowserError(f"Playwright's driver did not start: {_first_line(exc)}") from None
        try:
            # Playwright's own launch timeout, and ours around it in case the driver itself is stuck.
            return await asyncio.wait_for(
                self._playwright.chromium.launch(
                    executable_path=self.executable, headless=True, args=self.chromium_args(), timeout=timeout_s * 1000
                ),
                timeout_s + 5,
            )
        except asyncio.TimeoutError:
            raise BrowserError(
                f"{self.executable} did not start within {timeout_s:.1f} s ({load_note()})"
            ) from None
        except Exception as exc:
            if type(exc).__name__ == "TimeoutError":  # playwright's own TimeoutError
                raise BrowserError(
                    f"{self.executable} did not start within {timeout_s:.1f} s ({load_note()})"
                ) from None
            raise BrowserError(f"{self.executable} did not start: {_first_line(exc)}") from None

    def chromium_args(self) -> list[str]:
        """Chromium's flags: :data:`CHROMIUM_ARGS`, and the asset server's one address counted as public.

        A page of ``http://agentrl.games`` counts as public, and Chromium's Private Network Access refuses a
        public page a response from a loopback address, even one the route handed on. Only the asset server's
        own ``127.0.0.1:<port>`` is declared public; every other loopback address keeps the rule.
        """
        return [*CHROMIUM_ARGS, f"--ip-address-space-overrides=127.0.0.1:{self.files().port}=public"]

    def files(self) -> AssetFileServer:
        """The host's loopback server of large assets (started on first use)."""
        with self._files_lock:
            if self._files is None:
                self._files = AssetFileServer()
            return self._files

    def start(self) -> None:
        """Launch the browser now if it is not running (:meth:`browser` with a deadline that covers its retry)."""
        budget = LAUNCH_TRIES * (2 * self.launch_timeout_s() + 5) + 5
        try:
            self.run(self.browser(), timeout_s=budget)
        except concurrent.futures.TimeoutError:
            raise BrowserError(f"Chromium did not start within {budget:.1f} s ({load_note()})") from None

    def close(self) -> None:
        """Close the browser and stop the thread; safe to call twice."""
        if self._closed:
            return

        async def shutdown() -> None:
            if self._browser is not None:
                await self._browser.close()
            if self._playwright is not None:
                await self._playwright.stop()

        try:
            self.run(shutdown(), timeout_s=10)
        except Exception:  # (closing a broken browser: nothing left to save)
            pass
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        with self._files_lock:
            files, self._files = self._files, None
        if files is not None:
            files.close()


def _content_type(path: Path) -> str:
    if path.suffix == ".js" or path.suffix == ".mjs":
        return "text/javascript"
    if path.suffix == ".wasm":
        return "application/wasm"
    if path.suffix == ".swf":
        return "application/x-shockwave-flash"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


class GamePage:
    """One env's browser context and page (every call goes through the host, with a deadline).

    Args:
        roots: URL prefix -> folder: ``http://agentrl.games/<prefix>/<file>`` serves ``folder/<file>``
            (``""`` -> the package's assets). Nothing else is reachable.
        pages: path -> HTML served at ``http://agentrl.games/<path>``.
        viewport: the page size in CSS pixels.
        timeout_s: the deadline of every call.
        host: the :class:`BrowserHost` (default: the process-wide one).
    """

    def __init__(
        self,
        *,
        roots: Mapping[str, Path] | None = None,
        pages: Mapping[str, str] | None = None,
        viewport: tuple[int, int] = (640, 640),
        timeout_s: float = 10.0,
        host: BrowserHost | None = None,
    ) -> None:
        self.host = host or BrowserHost.shared()
        self.roots = {"": ASSETS, **{k.strip("/"): Path(v) for k, v in (roots or {}).items()}}
        self.pages = {k.strip("/"): v for k, v in (pages or {}).items()}
        self.viewport = viewport
        self.timeout_s = timeout_s
        self.crashed = False
        self._context: Any = None
        self._page: Any = None
        self.aborted_requests = 0

    # -- lifecycle ------------------------------------------------------------------------
    def open(self, path: str, init_scripts: Sequence[str] = ()) -> None:
        """A fresh context and page at ``http://agentrl.games/<path>`` (the old ones are closed).

        Raises:
            BrowserError: Chromium did not start (twice), or the page did not open in time; says which.
        """
        self.host.start()
        try:
            self.host.run(self._open(path, list(init_scripts)), timeout_s=self.timeout_s + 20)
        except concurrent.futures.TimeoutError:
            raise BrowserError(
                f"the page {path} did not open within {self.timeout_s + 20:g} s ({load_note()})"
            ) from None

    async def _open(self, path: str, init_scripts: list[str]) -> None:
        await self._close()
        browser = await self.host.browser()
        self._context = await browser.new_context(
            viewport={"width": self.viewport[0], "height": self.viewport[1]},
            device_scale_factor=1,
            java_script_enabled=True,
            service_workers="block",
        )
        await self._context.route("**/*", self._serve)
        for script in init_scripts:
            await self._context.add_init_script(script=script)
        self._page = await self._context.new_page()
        self.crashed = False
        self._crash_event = asyncio.Event()

        def crashed(*_: Any) -> None:
            self.crashed = True
            self._crash_event.set()

        self._page.on("crash", crashed)
        self._page.set_default_timeout(self.timeout_s * 1000)
        await self._page.goto(f"{ASSET_HOST}/{path.lstrip('/')}", wait_until="load")

    async def _serve(self, route: Any) -> None:
        url: str = route.request.url
        if not url.startswith(ASSET_HOST + "/"):
            self.aborted_requests += 1
            await route.abort("blockedbyclient")
            return
        path = url[len(ASSET_HOST) + 1 :].split("?", 1)[0].split("#", 1)[0]
        if path in self.pages:
            await route.fulfill(status=200, content_type="text/html", body=self.pages[path])
            return
        prefix, _, rest = path.partition("/")
        root, relative = (self.roots[prefix], rest) if prefix in self.roots and prefix else (self.roots[""], path)
        target = (root / relative).resolve()
        if root.resolve() not in target.parents or not target.is_file():
            await route.fulfill(status=404, content_type="text/plain", body=f"not found: {path}")
            return
        if target.stat().st_size > DIRECT_BYTES:  # (see the module docstring)
            await route.continue_(url=self.host.files().url(target, _content_type(target)))
            return
        await route.fulfill(status=200, content_type=_content_type(target), body=target.read_bytes())

    def close(self) -> None:
        """Close the context; safe to call twice."""
        if self._context is None:
            return
        try:
            self.host.run(self._close(), timeout_s=10)
        except Exception:  # (the page or browser is already gone)
            self._context = self._page = None

    async def _close(self) -> None:
        context, self._context, self._page = self._context, None, None
        if context is not None:
            try:
                await context.close()
            except Exception:  # (a crashed page's context may already be gone)
                pass

    # -- calls ----------------------------------------------------------------------------
    def call(self, make: Callable[[Any], Coroutine[Any, Any, T]], timeout_s: float | None = None) -> T:
        """Run ``make(page)`` with a deadline; a hung page is closed (``PageHung``), a crash reported."""
        if self._page is None:
            raise BrowserError("the page is not open; call open() first")
        deadline = timeout_s or self.timeout_s

        async def guarded() -> T:
            work = asyncio.ensure_future(make(self._page))
            crash = asyncio.ensure_future(self._crash_event.wait())
            try:
                done, _ = await asyncio.wait({work, crash}, timeout=deadline, return_when=asyncio.FIRST_COMPLETED)
            finally:
                crash.cancel()
            if work not in done:
                work.cancel()
                await self._close()
                if crash in done:
                    raise PageCrashed("the page's renderer crashed")
                raise PageHung(f"the page did not answer within {deadline:g} s and was closed")
            try:
                return work.result()
            except Exception as exc:
                if self.crashed or "crash" in str(exc).lower():
                    await self._close()
                    raise PageCrashed(f"the page crashed: {exc}") from None
                if "closed" in str(exc).lower() or "disconnected" in str(exc).lower():
                    await self._close()
                    raise BrowserError(f"the browser went away: {exc}") from None
                raise

        return self.host.run(guarded(), timeout_s=deadline + 15)

    def evaluate(self, expression: str, arg: Any = None, timeout_s: float | None = None) -> Any:
        """``page.evaluate(expression, arg)``."""
        return self.call(lambda page: page.evaluate(expression, arg), timeout_s)

    @property
    def is_open(self) -> bool:
        """Whether a page is open (not closed after a crash or a hang)."""
        return self._page is not None
