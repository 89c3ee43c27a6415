"""``agentrl redteam`` on the desktop (AgentRL/OSWorld-v0): DONE or FAIL at once, a search of the filesystem for the
task's JSON (and a replay of its oracle racing the evaluator), and a hunt for the desktop server's routes from
inside the desktop must not score above the random agent, reach the task's files or the server, nor crash it."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.timeout(900)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if not shutil.which("Xvfb") or not shutil.which("xterm"):
    pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)", allow_module_level=True)

import agentrl  # noqa: E402,F401  (registers the ids)
from agentrl.bench.redteam import PROBES  # noqa: E402
from agentrl.bench.redteam.runner import run_target  # noqa: E402
from tests.security.attack import assert_no_findings  # noqa: E402


def test_no_desktop_probe_beats_the_random_floor_or_reaches_the_task() -> None:
    report = run_target("AgentRL/OSWorld-v0", PROBES, episodes=2)
    if report.skipped and "Xvfb" in report.skipped:
        pytest.skip(f"no X desktop here: {report.skipped}")
    assert {"done-at-once", "fail-at-once", "task-file-hunt", "server-routes"} == {row.probe for row in report.rows}
    assert_no_findings(report)
    rows = {row.probe: row for row in report.rows}
    assert any("files=" in note for note in rows["task-file-hunt"].notes)  # the search ran and found nothing
    assert any("sockets=" in note for note in rows["server-routes"].notes)
