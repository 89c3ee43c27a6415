"""The built documentation site in a real Chromium (Playwright): pages load, no console error, no broken image.

The site is served from ``site/`` on 127.0.0.1 (as ``mkdocs serve`` or any static host would serve it; the
search index is fetched, which a ``file://`` page may not do) and every request must stay on that server:
the site works offline.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator

import pytest

from tests.artifacts.test_docs import SITE, built_site

CHROMIUM = "/usr/bin/chromium"
PAGES = ["", "envs/AgentRL/FlashGame-Catch-v0/", "envs/AgentRL/OSWorld-v0/", "guides/quickstart/",
         "guides/train-text/", "reproduce/"]



@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    built_site()
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_site_pages_load_in_chromium_with_no_error_and_no_broken_image(server: str) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    problems: list[str] = []
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
        )
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: None if r.url.startswith(server) else problems.append(f"external: {r.url}"))
            page.on("response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
            for path in PAGES:
                response = page.goto(server + path, wait_until="load")
                assert response is not None and response.ok, path
                assert page.locator("article h1").count() == 1, f"{path}: no page title"
                broken = page.evaluate(
                    "() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
                )
                assert broken == [], f"{path}: broken images {broken}"
                if path.startswith("envs/"):
                    assert page.evaluate("() => document.images.length") >= 2, f"{path}: no picture and GIF"
            # the search box answers from the built index
            page.goto(server, wait_until="load")
            page.keyboard.press("/")
            page.keyboard.type("TIRMath")
            page.wait_for_selector(".md-search-result__item", timeout=15_000)
        finally:
            browser.close()
    assert problems == []


def test_the_site_links_only_to_pages_it_has(server: str) -> None:
    # --strict fails the build on a broken Markdown link; this checks the HTML the theme wrote around them
    import re

    missing = []
    for page in SITE.rglob("*.html"):
        for link in re.findall(r'href="([^"#:?]+)(?:#[^"]*)?"', page.read_text()):
            if link.startswith("/") or not link:
                continue
            target = (page.parent / link).resolve()
            if not (target.exists() or (target / "index.html").exists()):
                missing.append(f"{page.relative_to(SITE)} -> {link}")
    assert missing == [], missing[:20]
