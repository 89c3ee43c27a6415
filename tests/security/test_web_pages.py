"""A hostile web page in a real Chromium on the same machine (finding 6 of the trust audit of 036fe13).

The audit loaded a page from another origin in Chromium: it opened ``serve-env``'s WebSocket, took the oracle's
answer and sent it out, and its ``text/plain`` and form posts ran ``/execute`` on the desktop. Here the same
page (served from another loopback port, so another origin, as a game page or any local web app would be) tries
all three against servers started as the audit found them (no token, ``--insecure-loopback``), and must get
nothing: no session, no answer, no command run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="uvicorn is missing: pip install 'agentrl-gym[serve]'")
pytest.importorskip("playwright.sync_api", reason="playwright is missing: pip install playwright")

from playwright import sync_api as playwright

from agentrl.envs.games.browser import CHROMIUM_ARGS, find_chromium
from agentrl.envs.osworld.server import serve_desktop
from agentrl.serving.env_server import serve_env
from tests.security.attack import page_server
from tests.serving.test_serving import FakeSession

PAGE = """<!doctype html><html><body><form id="f" method="POST" enctype="text/plain" target="sink">
<input name='{"command": ["id"], "x": "' value='"}'></form><iframe name="sink"></iframe><script>
window.results = {ws: "pending"};
const ws = new WebSocket("WS_URL");
ws.onopen = () => ws.send(JSON.stringify({type: "reset", data: {seed: 0}}));
ws.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.type === "observation") ws.send(JSON.stringify({type: "oracle", data: {}}));
  else window.results.ws = "answered: " + event.data;
};
ws.onerror = () => { if (window.results.ws === "pending") window.results.ws = "error"; };
ws.onclose = (event) => { if (window.results.ws === "pending") window.results.ws = "closed " + event.code; };
fetch("DESKTOP/execute", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
      body: JSON.stringify({command: ["id"]})}).then(() => window.results.fetch = "sent",
                                                       (e) => window.results.fetch = "failed " + e);
fetch("DESKTOP/execute", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({command: ["id"]})}).then((r) => window.results.cors = "status " + r.status,
                                                     (e) => window.results.cors = "failed");
document.getElementById("f").action = "DESKTOP/execute";
document.getElementById("f").submit();
</script></body></html>"""


class CountingSession(FakeSession):
    """The desktop stand-in, counting the commands that reach it."""

    def __init__(self, home: str) -> None:
        super().__init__(home)
        self.commands: list[list[str]] = []

    def run(self, argv: list[str], timeout_s: float, cap: int) -> tuple[int, str, str]:
        self.commands.append(list(argv))
        return super().run(argv, timeout_s, cap)


@pytest.fixture
def attacker() -> Iterator[tuple[str, dict[str, str]]]:
    """A loopback web server for the attacker's pages (another port: another origin)."""
    pages: dict[str, str] = {}
    with page_server(lambda path: (200, {"Content-Type": "text/html"}, pages.get(path, "").encode())) as url:
        yield url, pages


def test_a_page_of_another_origin_gets_no_answer_and_runs_no_command(
    tmp_path: Path, attacker: tuple[str, dict[str, str]]
) -> None:
    try:
        chromium = find_chromium()
    except Exception as exc:
        pytest.skip(f"Chromium is not installed: {exc}")
    origin, pages = attacker
    session = CountingSession(str(tmp_path / "home"))
    with serve_env("AgentRL/SQL-v0", insecure_loopback=True) as env_server, serve_desktop(
        session, insecure_loopback=True
    ) as desktop:
        pages["/attack.html"] = PAGE.replace("WS_URL", env_server.base_url.replace("http://", "ws://") + "/ws").replace(
            "DESKTOP", desktop.url
        )
        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=chromium, headless=True, args=list(CHROMIUM_ARGS))
            try:
                page = browser.new_page()
                page.goto(origin + "/attack.html")
                page.wait_for_function("window.results.ws !== 'pending' && window.results.fetch && window.results.cors",
                                       timeout=20_000)
                page.wait_for_timeout(1000)  # the form post's navigation
                results = page.evaluate("window.results")
            finally:
                browser.close()
        assert env_server.app.opened == 0, "the page opened a session on the env server"
    assert not results["ws"].startswith("answered"), results
    assert results["cors"] == "failed", results  # refused (403, and no CORS headers for the page to read)
    assert session.commands == [], f"the page ran commands on the desktop: {session.commands}"
    assert "<solution>" not in json.dumps(results)
