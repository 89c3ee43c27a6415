"""report.html: self-contained, escaped, and working in a real Chromium (Playwright)."""

from __future__ import annotations

import os
import re

import pytest

from agentrl.bench.report import render_report, write_report
from agentrl.bench.results import LineProblem

HOSTILE = "</script><script>alert(1)</script>"
CHROMIUM = "/usr/bin/chromium"


def _records() -> list[dict]:
    base = {"env_id": "AgentRL/TIRMath-v0", "env_fingerprint": "f", "env_kwargs": {}, "seed": 0, "attempt": 0,
            "turns": 1, "tokens": 0, "wall_s": 0.1, "error": None}
    return [
        {**base, "key": "a", "agent": {"agent": "oracle"}, "episode": 0, "task_id": "t/0", "reward": 1.0,
         "success": True, "trajectory": [{"role": "env", "text": "What is 6*7?"},
                                         {"role": "agent", "text": "\\boxed{42}", "seconds": 0.01},
                                         {"role": "env", "text": "[episode over]", "reward": 1.0,
                                          "info": {"done_reason": "answered"}}]},
        {**base, "key": "b", "agent": {"agent": "oracle"}, "episode": 1, "task_id": HOSTILE, "reward": 0.0,
         "success": False, "error": "ValueError: " + HOSTILE,
         "trajectory": [{"role": "env", "text": "<img src=x onerror=alert(2)>"},
                        {"role": "agent", "text": HOSTILE + "<!-- \u2028 & &amp;", "seconds": 0.02}]},
        {**base, "key": "c", "agent": {"agent": f"evil:{HOSTILE}"}, "episode": 0, "task_id": "t/2", "reward": 0.5,
         "success": False, "trajectory": []},
    ]


def test_everything_is_escaped_and_nothing_is_external():
    page = render_report(_records(), problems=[LineProblem("r.jsonl", 3, HOSTILE)])
    assert HOSTILE not in page and "<img" not in page
    assert page.count("<script") == 2  # the JSON data block and the page's own script
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "&lt;/script&gt;" in page  # visible as text in the tables


def _chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install 'agentrl-gym[browser]')")
    return sync_playwright


def _real_run(out):
    from agentrl.agents.registry import AgentSpec
    from agentrl.bench.runner import BenchConfig, run_bench

    config = BenchConfig(["AgentRL/TIRMath-v0"], AgentSpec("oracle"), out, episodes=2, k=2, progress=False)
    return run_bench(config, log=lambda message: None).report_path


@pytest.mark.parametrize("source", ["hostile records", "a real run"])
def test_report_opens_in_chromium_without_errors(tmp_path, source):
    sync_playwright = _chromium()
    if source == "a real run":
        _check_page(sync_playwright, _real_run(tmp_path), hostile=False)
    else:
        _check_page(sync_playwright, write_report(_records(), tmp_path / "report.html"), hostile=True)


def _check_page(sync_playwright, path, hostile):
    errors: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"],
        )
        try:
            page = browser.new_page()
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: None if request.url.startswith("file://") else errors.append(
                f"external request: {request.url}"))

            def on_dialog(dialog):
                dialogs.append(dialog.message)
                dialog.dismiss()

            page.on("dialog", on_dialog)
            page.goto(path.as_uri())
            assert page.locator("svg.chart").count() >= 2
            (_click_hostile_episode if hostile else _click_real_episode)(page)
            page.wait_for_timeout(200)  # give a (wrongly) injected script the chance to run
        finally:
            browser.close()
    assert errors == []
    assert dialogs == []


def _click_real_episode(page):
    assert page.locator("table.summary").inner_text().count("pass@2") == 1
    page.locator("tr.episode").first.click()
    turns = page.locator("tr.detail .turn")
    assert turns.count() == 5 and turns.nth(4).is_visible()
    assert "\\boxed" in turns.nth(3).inner_text()


def _click_hostile_episode(page):
    assert page.locator("tr.episode").count() == 3
    row = page.locator("tr.episode", has_text="ValueError")
    row.click()
    detail = page.locator("tr.detail")
    detail.wait_for(state="visible", timeout=5000)
    turns = detail.locator(".turn")
    assert turns.count() == 3  # the error banner and two turns, all as plain text
    assert turns.nth(2).locator("pre").inner_text().startswith(HOSTILE)
    assert turns.nth(1).locator("pre").inner_text() == "<img src=x onerror=alert(2)>"
    assert row.get_attribute("aria-expanded") == "true"
    row.click()  # clicking again folds it
    assert detail.is_hidden()
    page.locator("#filter").fill("t/0")
    assert page.locator("tr.episode:visible").count() == 1
