"""agentrl bench heals: infrastructure errors run again by themselves, agent errors wait for --retry-errors;
envs whose system parts are missing are skipped, said and recorded; errors are grouped by reason."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from agentrl.agents.base import BaseAgent
from agentrl.bench.report import format_error_lines, render_report
from agentrl.bench.results import SkipLog, error_class, group_errors
from agentrl.bench.runner import BenchConfig, agent_seed_for, run_bench
from agentrl.bench.suites import A11Y_PARTS, missing_requirements
from agentrl.cli import main
from agentrl.core.errors import SandboxUnavailable

FLAKY = "AgentRLTest/Flaky-v0"


def _count(state: Path, name: str) -> int:
    """Bump the counter ``state/name`` and return its value before the bump."""
    path = state / name
    value = int(path.read_text()) if path.exists() else 0
    path.write_text(str(value + 1))
    return value


class FlakyEnv(gym.Env):
    """Answer "ok" for reward 1. Its first ``make_failures`` constructions raise SandboxUnavailable, and its
    first ``crashes`` episodes end with ``done_reason="env_error"`` (counters in ``state_dir``, a folder,
    which the fingerprint does not hash, so every run has the same episode keys)."""

    def __init__(self, state_dir: str, make_failures: int = 0, crashes: int = 0) -> None:
        self.state = Path(state_dir)
        if _count(self.state, "made") < make_failures:
            raise SandboxUnavailable("Xvfb :100 did not answer xdpyinfo within 12.0 s (load 3.1 on 2 CPUs)")
        self.crashes = crashes
        self.observation_space = gym.spaces.Text(64)
        self.action_space = gym.spaces.Text(64)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """The prompt."""
        super().reset(seed=seed)
        return "say ok", {"task_id": "ok"}

    def step(self, action: Any):
        """Reward 1 for "ok"; an env_error end while crashes are left."""
        if _count(self.state, "episodes") < self.crashes:
            return "", 0.0, True, False, {"done_reason": "env_error", "env_error": "the page's renderer crashed"}
        return "", float(action == "ok"), True, False, {"done_reason": "answered"}


if FLAKY not in gym.registry:
    gym.register(FLAKY, entry_point=FlakyEnv, disable_env_checker=True)


class SaysOk(BaseAgent):
    """Says "ok", except in the episode it was told to fail in."""

    def __init__(self, fail: bool) -> None:
        super().__init__()
        self.fail = fail

    def act(self, observation, info):
        """"ok", or a crash."""
        if self.fail:
            raise RuntimeError("the agent crashed")
        return "ok"


@dataclass
class _Spec:
    """A stand-in for AgentSpec: the agent fails in episode ``fail_index`` (seed 0, attempt 0)."""

    fail_index: int

    def config(self):
        return {"agent": "tests:SaysOk", "fail": self.fail_index}

    def build(self):
        failing = agent_seed_for(0, self.fail_index, 0)

        class Builder:
            def __call__(self, seed=None):
                return SaysOk(seed == failing)

            def close(self):
                pass

        return Builder()


def _config(tmp_path: Path, **overrides: Any) -> BenchConfig:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    settings: dict[str, Any] = dict(episodes=5, progress=False, env_kwargs={"state_dir": str(state),
                                                                          "make_failures": 2, "crashes": 1})
    settings.update(overrides)
    return BenchConfig([FLAKY], _Spec(3), tmp_path / "out", **settings)


def test_infrastructure_errors_run_again_by_themselves_agent_errors_wait(tmp_path):
    messages: list[str] = []
    first = run_bench(_config(tmp_path), log=messages.append)
    by_index = {r["episode"]: r for r in first.records}
    # episodes 0, 1: the env could not be made; 2: it crashed mid-episode; 3: the agent raised; 4: fine
    assert [error_class(by_index[i]) for i in range(5)] == ["infrastructure"] * 3 + ["agent", None]
    assert "could not make the env: SandboxUnavailable: Xvfb :100" in by_index[0]["error"]
    assert "done_reason env_error" in by_index[2]["error"] and "renderer crashed" in by_index[2]["error"]
    assert first.infrastructure_errors == 3 and first.agent_errors == 1
    lines = format_error_lines(first.planned)
    assert lines[0] == "errors: 3 infrastructure errors (re-run next time) / 1 agent error (re-run with --retry-errors)"
    assert lines[1].startswith("  2 x [infrastructure] could not make the env: SandboxUnavailable: Xvfb :100")
    assert "episode 0" in lines[2] and "episode 1" in lines[2]

    messages.clear()
    second = run_bench(_config(tmp_path), log=messages.append)  # the same command, no flag
    assert second.ran == 3 and second.healed == 3
    assert "2 of 5 episodes already done; running 3 (3 again after an infrastructure error; 1 agent error(s) " \
           "kept: --retry-errors runs them again)" in messages
    by_index = {r["episode"]: r for r in second.records}
    assert [by_index[i]["success"] for i in range(5)] == [True, True, True, False, True]
    assert second.infrastructure_errors == 0 and second.agent_errors == 1
    assert format_error_lines(second.planned)[0] == "errors: 1 agent error (re-run with --retry-errors)"

    third = run_bench(_config(tmp_path), log=messages.append)
    assert third.ran == 0  # the agent error stays until asked for
    fourth = run_bench(_config(tmp_path, retry_errors=True), log=messages.append)
    assert fourth.ran == 1 and fourth.agent_errors == 1  # it ran again (and failed again)
    lines = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 5 + 3 + 1


def test_errors_are_grouped_by_reason_in_the_report(tmp_path):
    outcome = run_bench(_config(tmp_path), log=lambda message: None)
    groups = group_errors(outcome.records)
    assert [(g.error_class, g.count) for g in groups] == [("infrastructure", 2), ("infrastructure", 1), ("agent", 1)]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Errors by reason" in page and "3 infrastructure errors" in page and "1 agent error" in page
    assert "could not make the env: SandboxUnavailable" in page


CHROMIUM_MISSING = [
    {"part": "chromium", "package": "chromium", "installed": False, "tiers": ["browser"],
     "fix": "apt-get install -y chromium"},
    {"part": "Xvfb", "package": "xvfb", "installed": True, "tiers": ["desktop"], "fix": ""},
    {"part": "at-spi-bus-launcher", "package": "at-spi2-core", "installed": False, "tiers": ["desktop"],
     "fix": "apt-get install -y --no-install-recommends at-spi2-core"},
]


def test_requirements_follow_the_system_deps_table(monkeypatch):
    from agentrl import _system_deps

    names = {part.name for part in _system_deps.PARTS}
    assert set(A11Y_PARTS) <= names and "chromium" in names  # the names the requirements use exist
    monkeypatch.delenv("AGENTRL_CHROMIUM", raising=False)
    missing = missing_requirements(["AgentRL/FlashGame-Catch-v0", "AgentRL/OSWorld-v0", "AgentRL/TIRMath-v0"], {},
                                   CHROMIUM_MISSING)
    assert list(missing) == ["AgentRL/FlashGame-Catch-v0"]  # the a11y tree is optional for the desktop
    assert missing["AgentRL/FlashGame-Catch-v0"][0].fix == "apt-get install -y chromium"
    docker_missing = [{"part": "dockerd", "package": "docker.io", "installed": False, "tiers": ["docker"],
                       "fix": "apt-get install -y docker.io"}]
    assert missing_requirements(["AgentRL/OSWorld-v0"], {}, docker_missing) == {}
    assert list(missing_requirements(["AgentRL/OSWorld-v0"], {"provider": "docker"}, docker_missing)) == [
        "AgentRL/OSWorld-v0"]


def test_a_suite_whose_system_part_is_missing_is_skipped_said_and_recorded(tmp_path, monkeypatch, capsys):
    import agentrl.cli.bench as bench_command

    monkeypatch.delenv("AGENTRL_CHROMIUM", raising=False)
    monkeypatch.setattr(bench_command, "_system_parts", lambda: CHROMIUM_MISSING)
    out = tmp_path / "demo"
    argv = ["bench", "--suite", "games", "--agent", "oracle", "--episodes", "2", "--out", str(out), "--no-progress"]
    assert main(argv) == 0  # `make demo` goes on
    text = capsys.readouterr().out
    assert "skipping 10 env(s) (AgentRL/FlashGame-Catch-v0" in text
    assert "system part missing: chromium" in text and "install with: apt-get install -y chromium" in text
    assert "nothing to run: every env of this command was skipped" in text
    assert not (out / "results.jsonl").exists()  # no 20 errored episodes
    entries = SkipLog(out).load()
    assert len(entries) == 10 and entries[0]["missing"][0]["part"] == "chromium"
    run = json.loads((out / "run.json").read_text())
    assert len(run["skipped_env_ids"]) == 10
    page = (out / "report.html").read_text()
    assert "10 env(s) were skipped" in page and "apt-get install -y chromium" in page

    # A text run into the same folder keeps the skip in its report; so does the skip's own command.
    assert main(["bench", "--env", "AgentRL/TIRMath-v0", "--agent", "oracle", "--episodes", "1", "--out", str(out),
                 "--no-progress"]) == 0
    assert "10 env(s) were skipped" in (out / "report.html").read_text()
    # Once the part is there, the env runs and its skip entry goes.
    skip = SkipLog(out)
    agent = entries[0]["agent"]
    skip.forget(["AgentRL/FlashGame-Catch-v0"], agent, {})
    assert len(skip.load()) == 9


def test_report_lists_skips_and_escapes_them():
    hostile = "</script><script>alert(1)</script>"
    page = render_report([], skipped=[{"env_id": hostile, "agent": {"agent": "oracle"}, "reason": hostile,
                                       "missing": [{"part": hostile, "package": "p"}], "fix": [hostile]}])
    assert hostile not in page and "1 env(s) were skipped" in page


@pytest.mark.parametrize("kind", ["agent", "timeout"])
def test_old_records_without_a_class_are_classified_by_their_kind(kind):
    assert error_class({"error": "x", "error_kind": kind}) == "agent"
    assert error_class({"error": "x", "error_kind": "env"}) == "infrastructure"
