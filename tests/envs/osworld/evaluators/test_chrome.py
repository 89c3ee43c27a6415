"""OSWorld's Chrome tasks on Chromium: the metrics (pure), the getters' URL logic, the config steps, and
one desktop-marked module that starts Chromium once and runs a task in OSWorld's real Chrome shape
(``google-chrome --remote-debugging-port=1337``, ``socat`` forward, ``chrome_open_tabs``) end to end.

The evaluator objects below are copied in shape from OSWorld's evaluation_examples/examples/chrome files.
"""

from __future__ import annotations

import ast
import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from agentrl.envs.osworld.evaluators import METRICS, chrome
from agentrl.envs.osworld.evaluators.chrome import (
    compare_urls,
    is_expected_active_tab,
    is_expected_tabs,
    is_expected_url_pattern_match,
)
from agentrl.envs.osworld.evaluators.general import check_direct_json_object
from agentrl.envs.osworld.runtime import cdp
from agentrl.envs.osworld.runtime.apps import resolve_command
from agentrl.envs.osworld.tasks import chrome_setup
from agentrl.envs.osworld.tasks.evaluate import evaluate
from agentrl.envs.osworld.tasks.format import OSWorldTask, unsupported
from agentrl.envs.osworld.tasks.pool import required_apps

LAUNCH = [
    {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
    {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
]


def chrome_task(task_id: str, urls: list[str], evaluator: dict[str, Any]) -> dict[str, Any]:
    return {"id": task_id, "snapshot": "chrome", "instruction": "x", "source": "test",
            "config": [*LAUNCH, {"type": "chrome_open_tabs", "parameters": {"urls_to_open": urls}}],
            "trajectory": "trajectories/", "related_apps": ["chrome"], "evaluator": evaluator}


# -- metrics: pure ----------------------------------------------------------------------------------------------------


def test_metrics_are_registered() -> None:
    for name in ("is_expected_url_pattern_match", "is_expected_active_tab", "is_expected_tabs",
                 "check_direct_json_object"):
        assert name in METRICS


def test_is_expected_url_pattern_match_real_rules() -> None:
    rules = {"type": "url", "url": "?hl=en&", "expected": ["https://scholar.google.com/citations", "user=qRAQ5BsAAAAJ"]}
    assert is_expected_url_pattern_match("https://scholar.google.com/citations?hl=en&user=qRAQ5BsAAAAJ", rules) == 1.0
    assert is_expected_url_pattern_match("https://scholar.google.com/citations?hl=en", rules) == 0.0
    assert is_expected_url_pattern_match({"url": "https://www.x.org/forms?title=&field_component_target_id=431"},
                                         {"expected": ["forms\\?title=&field_component_target_id=431"]}) == 1.0
    assert is_expected_url_pattern_match(None, rules) == 0.0


def test_is_expected_active_tab_normalizes_urls() -> None:
    rule = {"type": "url", "url": "https://www.babycenter.com/baby-names/details/carl-853"}
    assert is_expected_active_tab("https://www.babycenter.com/baby-names/details/carl-853", rule) == 1.0
    assert is_expected_active_tab({"url": "https://babycenter.com/baby-names/details/carl-853"}, rule) == 1.0
    assert is_expected_active_tab("https://www.babycenter.com/baby-names/details/carl-854", rule) == 0.0
    assert is_expected_active_tab("https://www.babycenter.com/x", {"type": "title", "url": "x"}) == 0.0
    assert compare_urls(None, None) and not compare_urls(None, "x")


def test_is_expected_tabs_compares_as_unordered_lists() -> None:
    rule = {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com", "https://www.tripadvisor.com"]}
    tabs = [{"title": t, "url": f"https://www.{t}.com/"} for t in ("tripadvisor", "lonelyplanet", "airbnb")]
    assert is_expected_tabs(tabs, rule) == 1.0
    assert is_expected_tabs(tabs[:2], rule) == 0.0
    assert is_expected_tabs([*tabs, {"title": "x", "url": "https://x.com"}], rule) == 0.0


def test_check_direct_json_object_both_modes() -> None:
    exact = {"expected": {"start": "SEA", "end": "NYC", "time": "Sun, Jul 21"}}
    assert check_direct_json_object({"start": "SEA", "end": "NYC", "time": "Sun, Jul 21", "more": 1}, exact) == 1.0
    assert check_direct_json_object({"start": "SEA", "end": "BOS", "time": "Sun, Jul 21"}, exact) == 0.0
    assert check_direct_json_object('{"start": "SEA", "end": "NYC", "time": "Sun, Jul 21"}', exact) == 1.0
    within = {"expect_in_result": True, "expected": {"name": "Carl", "tags": ["boy", "german"]}}
    assert check_direct_json_object({"name": "Carl (boy)", "tags": ["german"]}, within) == 1.0
    assert check_direct_json_object({"name": "Karl", "tags": ["german"]}, within) == 0.0
    assert check_direct_json_object({"tags": ["german"]}, within) == 0.0  # missing key: 0, not a crash
    assert check_direct_json_object("not json", exact) == 0.0
    assert check_direct_json_object(None, exact) == 0.0


# -- getters, launch mapping, config support: no desktop -----------------------------------------------------------


class CannedClient:
    """Answers ``run_python`` as the in-sandbox DevTools client would, from a fixed tab list (tests only)."""

    def __init__(self, tabs: list[dict[str, Any]]) -> None:
        self.tabs = tabs
        self.requests: list[dict[str, Any]] = []

    def run_python(self, code: str) -> dict[str, Any]:
        request = json.loads(ast.literal_eval(code.rsplit("_json.loads(", 1)[1].rsplit("))))", 1)[0]))
        self.requests.append(request)
        assert request["op"] == "tabs"
        return {"status": "success", "output": json.dumps({"value": self.tabs}) + "\n"}


def test_active_url_and_url_parse_follow_osworld_prefix_rules() -> None:
    client = CannedClient([
        {"id": "b", "url": "https://www.recreation.gov/search?q=Albion+Basin&type=x", "title": "B", "visible": False},
        {"id": "a", "url": "https://www.drugs.com/npc/?searchterm=Aspirin&sort=1", "title": "A", "visible": True},
    ])
    assert chrome.active_url_from_accessTree(client, {"goto_prefix": "https://www."}) == \
        "https://www.drugs.com/npc/?searchterm=Aspirin&sort=1"
    assert chrome.active_url_from_accessTree(client, {}) == "https://drugs.com/npc/?searchterm=Aspirin&sort=1"
    spec = {"type": "active_tab_url_parse", "goto_prefix": "https://www.", "parse_keys": ["searchterm", "page"],
            "replace": {"searchterm": "drug"}}
    assert chrome.active_tab_url_parse(client, spec) == {"page": "", "drug": "Aspirin"}
    dash = {"goto_prefix": "https://www.", "partIndex": 4, "needDeleteId": True, "returnType": "json", "key": "k"}
    assert chrome.url_dashPart(client, dash) == {"k": ""}
    assert chrome.open_tabs_info(client, {}) == [{"title": t["title"], "url": t["url"]} for t in client.tabs]
    assert chrome.active_url_from_accessTree(CannedClient([]), {}) is None


def test_a_devtools_error_names_the_fix() -> None:
    class Down:
        def run_python(self, code: str) -> dict[str, Any]:
            return {"output": json.dumps({"error": "CDPError: nothing answers DevTools on 127.0.0.1:9222"})}

    with pytest.raises(chrome.ChromeError, match="nothing answers DevTools"):
        chrome.open_tabs_info(Down(), {})
    with pytest.raises(chrome.ChromeError, match="urls_to_open"):
        chrome_setup.open_tabs(Down(), "https://x.org")


def test_google_chrome_launch_maps_to_chromium_on_9222_and_socat_is_satisfied() -> None:
    argv = resolve_command(["google-chrome", "--remote-debugging-port=1337"])
    assert argv[0] == "chromium" and "--remote-debugging-port=9222" in argv
    assert not any(a == "--remote-debugging-port=1337" for a in argv)
    assert cdp.is_cdp_forward(["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"])
    assert not cdp.is_cdp_forward(["socat", "tcp-listen:9223,fork", "tcp:localhost:1337"])
    assert cdp.ws_frame(b"x" * 200, mask=b"\0\0\0\0")[:4] == bytes([0x81, 0xFE, 0, 200])


def test_real_shaped_chrome_task_is_supported_and_needs_no_socat() -> None:
    task = OSWorldTask.from_dict(chrome_task("t", ["https://www.lonelyplanet.com"], {
        "func": ["is_expected_url_pattern_match", "check_direct_json_object"],
        "result": [{"type": "active_url_from_accessTree", "goto_prefix": "https://www."},
                   {"type": "active_tab_html_parse", "goto_prefix": "https://www.", "category": "class",
                    "class_singleObject": {"price": "price"}}],
        "expected": [{"type": "rule", "rules": {"expected": ["lonelyplanet"]}},
                     {"type": "rule", "rules": {"expected": {"price": "$1"}}}]}))
    assert unsupported(task) == []
    assert [app for app, _ in required_apps(task)] == ["chromium", "chromium"]


# -- on a real desktop: one Chromium for the module ------------------------------------------------------------------


def data_url(title: str, body: str) -> str:
    """A page needing no server or file; written as Chromium reports it back (unencoded: no ``%`` or ``#``)."""
    return f"data:text/html;charset=utf-8,<title>{title}</title>{body}"


PAGE_A = data_url("Alpha", "<p>first</p>")
PAGE_B = data_url("Beta", '<h1>Fare finder</h1><span class="price">$12</span><span class="price">$15</span>'
                          '<div><b>Total due</b></div><form><input id="q" value=" Albion Basin "></form>')


@pytest.fixture(scope="module")
def desktop_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if shutil.which("Xvfb") is None or shutil.which("chromium") is None:
        pytest.skip("needs Xvfb and chromium (apt-get install xvfb chromium)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    from agentrl.envs.osworld.env import OSWorldEnv

    folder = tmp_path_factory.mktemp("tasks") / "chrome"
    folder.mkdir()
    task = chrome_task("chrome-tabs", [PAGE_A, PAGE_B], {
        "func": ["is_expected_tabs", "is_expected_url_pattern_match", "check_direct_json_object"],
        "result": [{"type": "open_tabs_info"},
                   {"type": "active_url_from_accessTree", "goto_prefix": ""},
                   {"type": "active_tab_html_parse", "goto_prefix": "", "category": "class",
                    "class_multiObject": {"price": {"0": "first", "1": "second"}}}],
        "expected": [{"type": "rule", "rules": {"type": "url", "urls": [PAGE_A, PAGE_B]}},
                     {"type": "rule", "rules": {"expected": ["Fare finder"]}},
                     {"type": "rule", "rules": {"expected": {"first": "$12", "second": "$15"}}}]})
    (folder / "chrome-tabs.json").write_text(json.dumps(task))
    env = OSWorldEnv(tasks=str(folder.parent), pause_s=0.0, obs_type="screenshot")
    try:
        env.reset(options={"task_id": "chrome-tabs"})
        yield env
    finally:
        env.close()


@pytest.mark.timeout(150)
def test_chrome_task_setup_getters_and_score_on_a_real_desktop(desktop_env: Any) -> None:
    client = desktop_env.client
    tabs = client.get({"type": "open_tabs_info"})
    assert sorted(t["title"] for t in tabs) == ["Alpha", "Beta"]  # the start tab was closed
    assert client.get({"type": "active_url_from_accessTree", "goto_prefix": ""}) == PAGE_B
    parse = {"type": "active_tab_html_parse", "goto_prefix": ""}
    assert client.get({**parse, "category": "label", "labelObject": {"total DUE": "t"}}) == {"t": "Total due"}
    assert client.get({**parse, "category": "xpath", "xpathObject": {"//h1": "h"}}) == {"h": "Fare finder"}
    assert client.get({**parse, "category": "input", "inputObject": {"//input[@id='q']": "q"}}) == {"q": "Albion Basin"}
    assert client.get({**parse, "goto_prefix": "https://"}) == {}  # no open tab has that URL: OSWorld's {}
    info = client.get({"type": "active_tab_info", "goto_prefix": ""})
    assert info["title"] == "Beta" and "Fare finder" in info["content"]
    assert sorted(t["title"] for t in client.get({"type": "open_tabs_info"})) == ["Alpha", "Beta"]
    score, details = evaluate(desktop_env.task, last_action="DONE", get=desktop_env._get)
    assert score == 1.0, details
    _, reward, terminated, _, info = desktop_env.step("DONE")
    assert terminated and reward == 1.0, info.get("eval_details")
