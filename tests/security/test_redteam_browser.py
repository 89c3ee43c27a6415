"""``agentrl redteam`` on the browser games: off-screen pointers, keys outside the action set, script where an
action goes, stacked moves and out-of-range indices must not score above the random agent nor crash the page."""

from __future__ import annotations

import pytest

import agentrl  # noqa: F401  (registers the ids)
from agentrl.bench.redteam import PROBES
from agentrl.bench.redteam.runner import run_target
from tests.security.attack import assert_no_findings

pytestmark = pytest.mark.timeout(600)

pytest.importorskip("playwright", reason="playwright is missing: pip install 'agentrl-gym[browser]'")




@pytest.mark.parametrize("env_id", ["AgentRL/FlashGame-Game2048-v0", "AgentRL/FlashGame-Sokoban-v0",
                                    "AgentRL/FlashGame-Catch-v0"])
def test_no_game_probe_beats_the_random_floor(env_id: str) -> None:
    report = run_target(env_id, PROBES, episodes=1, max_steps=15)
    if report.skipped and ("Chromium" in report.skipped or "chromium" in report.skipped):
        pytest.skip(f"Chromium is not installed: {report.skipped}")
    assert {"offscreen-pointer", "foreign-keys", "script-actions", "stacked-moves", "discrete-out-of-range"} == {
        row.probe for row in report.rows}
    assert_no_findings(report)
    refused = {row.probe: row.refused for row in report.rows}
    assert refused["discrete-out-of-range"] == 1  # InvalidActionType: the documented refusal, not a crash
