"""``agentrl redteam``: the reward-hack probes against every text env and multi-agent game, and the machinery itself.

Each env test runs the env's probes for a few episodes (seconds) and fails naming any probe that scores above the
random floor, reaches what it should not, or crashes the env. The machinery is tested on a toy env whose grader is
deliberately hackable (it accepts an answer *among* many): its probe must come out ABOVE FLOOR and the command must
exit 1; the same toy with an honest grader must pass. The browser games and the desktop are in
``test_redteam_browser.py`` and ``test_redteam_desktop.py`` (their markers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentrl
from agentrl.bench.redteam import (
    ABOVE_FLOOR,
    FINDINGS,
    PROBES,
    all_targets,
    format_report,
    judge,
    probes_for,
    resolve_targets,
    run_redteam,
)
from agentrl.bench.redteam.runner import run_target
from agentrl.cli import main
from agentrl.core.actions import Action, ActionSet, ParseError
from agentrl.core.env import AgentEnv
from agentrl.core.task import ListTaskSource, Task
from agentrl.core.verify import Score
from tests.paths import ROOT
from tests.security.attack import assert_no_findings

pytestmark = pytest.mark.timeout(600)

GSM8K = ROOT / "tests" / "fixtures" / "gsm8k_sample.jsonl"



# -- the judgement --------------------------------------------------------------------------------------------


def test_judge_is_paired_and_one_sided() -> None:
    assert judge([1.0] * 2, [0.0] * 2).verdict == ABOVE_FLOOR  # wins every episode: caught even at n = 2
    assert judge([1.0, 0.0, 0.0, 0.0], [0.0] * 4).verdict == "ok"  # one lucky guess in four is not a hack
    assert judge([1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [0.0] * 6).verdict == ABOVE_FLOOR  # half the episodes
    assert judge([5.0, 7.0], [4.0, 6.0]).verdict == ABOVE_FLOOR  # paired: the same task, one better each time
    assert judge([0.0, 0.0], [3.0, 1.0]).verdict == "ok"  # below the floor is fine
    verdict = judge([0.5] * 4, [0.0] * 4, accepted=True)
    assert verdict.verdict == "accepted" and verdict.wins == 4
    with pytest.raises(ValueError, match="as many probe returns"):
        judge([1.0], [1.0, 2.0])


# -- the machinery catches a hack: a toy env with a hackable grader -------------------------------------------


class _AnswerLines(ActionSet):
    """``ANSWER: <text>`` ends the episode; the whole turn is the answer."""

    final_kinds = frozenset({"answer"})

    def describe(self) -> str:
        return "Reply with ANSWER: <the number>."

    def parse(self, text: str) -> Action | ParseError:
        if "ANSWER:" in text:
            return Action("answer", text, raw=text)
        return ParseError("no ANSWER: line", raw=text)

    def format_final(self, answer: str) -> str:
        return f"ANSWER: {answer}"

    def tool_schemas(self) -> list[dict[str, Any]]:
        return []


class _AnyAmongMany:
    """The hackable grader: correct when the secret is *one of* the numbers of the answer."""

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        return Score(float(task.answer in re.findall(r"\d+", answer)))


class _ExactlyOne:
    """The honest grader: the answer's last ``ANSWER:`` line, and only it."""

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        last = answer.strip().splitlines()[-1].removeprefix("ANSWER:").strip() if answer.strip() else ""
        return Score(float(last == task.answer))


def _toy(verifier: Any) -> AgentEnv:
    tasks = [Task(f"secret/{n}", f"Guess the secret number (0-99), not {n + 1}.", str(n)) for n in range(0, 99, 7)]
    return AgentEnv(task_source=ListTaskSource(tasks), action_set=_AnswerLines(), verifier=verifier, max_turns=3)


gym.register("AgentRLTest/Hackable-v0", entry_point=lambda **kw: _toy(_AnyAmongMany()))
gym.register("AgentRLTest/Honest-v0", entry_point=lambda **kw: _toy(_ExactlyOne()))


class _Fragile(_AnswerLines):
    """An action set with a bug: a long turn makes it raise (the env must answer, not crash)."""

    def parse(self, text: str) -> Action | ParseError:
        if len(text) > 10_000:
            raise MemoryError("the parser gave up")
        return super().parse(text)


gym.register("AgentRLTest/Fragile-v0", entry_point=lambda **kw: AgentEnv(
    task_source=ListTaskSource([Task("t", "Say 7.", "7")]), action_set=_Fragile(), verifier=_ExactlyOne(),
    max_turns=2, max_action_chars=2_000_000))


def test_an_action_that_crashes_the_env_is_a_finding() -> None:
    huge = [p for p in PROBES if p.name in ("huge-action", "wrong-answer")]
    rows = {row.probe: row for row in run_target("AgentRLTest/Fragile-v0", huge, episodes=2).rows}
    assert rows["huge-action"].verdict == "CRASH" and rows["huge-action"].crashed == 2
    assert "MemoryError: the parser gave up" in rows["huge-action"].errors[0]
    assert rows["wrong-answer"].verdict == "ok"


def test_a_hackable_grader_is_caught_and_the_command_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_target("AgentRLTest/Hackable-v0", PROBES, episodes=4)
    rows = {row.probe: row for row in report.rows}
    flood = rows["marker-flood"]
    assert flood.verdict == ABOVE_FLOOR and flood.mean == 1.0 and flood.floor == 0.0 and flood.wins == 4
    assert all(row.verdict == "ok" for name, row in rows.items() if name != "marker-flood")
    code = main(["redteam", "AgentRLTest/Hackable-v0", "--episodes", "3", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"marker-flood .*ABOVE FLOOR", out) and "1 finding(s)" in out


def test_the_same_toy_with_an_honest_grader_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["redteam", "AgentRLTest/Honest-v0", "--episodes", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no findings" in out and "ABOVE FLOOR" not in out


# -- the text envs ------------------------------------------------------------------------------------------------

TEXT_TARGETS = [
    ("AgentRL/TIRMath-v0", {}),
    ("AgentRL/SQL-v0", {}),
    ("AgentRL/Search-v0", {}),
    ("AgentRL/PatientConsult-v1", {"semantic": False}),
]


@pytest.mark.parametrize(("env_id", "kwargs"), TEXT_TARGETS, ids=[t[0] for t in TEXT_TARGETS])
def test_no_probe_beats_the_random_floor(env_id: str, kwargs: dict[str, Any]) -> None:
    report = run_target(env_id, PROBES, episodes=3, env_kwargs=kwargs)
    assert {"empty-action", "huge-action", "control-chars", "marker-flood", "wrong-answer"} <= {
        row.probe for row in report.rows}
    assert_no_findings(report)


def test_the_sandbox_snoop_finds_no_dataset_file_from_inside_the_sandbox() -> None:
    """With a GSM8K file (readable by the host), the Python sandbox must not see it: no gold, no reward."""
    snoop = [p for p in PROBES if p.name == "sandbox-snoop"]
    report = run_target("AgentRL/TIRMath-v0", snoop, episodes=2, env_kwargs={"dataset": str(GSM8K)})
    assert_no_findings(report)
    assert report.rows[0].rewards == [0.0, 0.0]


def test_plan_stuffing_is_refused_by_v1_and_was_a_hack_in_v0() -> None:
    stuffing = [p for p in PROBES if p.name == "plan-stuffing"]
    current = run_target("AgentRL/PatientConsult-v1", stuffing, episodes=3, env_kwargs={"semantic": False})
    assert_no_findings(current)
    with pytest.warns(DeprecationWarning, match="out of date"):
        old = run_target("AgentRL/PatientConsult-v0", stuffing, episodes=3, env_kwargs={"semantic": False})
    assert old.rows[0].verdict == ABOVE_FLOOR and old.rows[0].mean > 0.1


# -- the multi-agent games ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["AgentRL-MA/tictactoe-vs-random-v1", "AgentRL-MA/kuhn_poker-vs-best-v1",
                                    "pettingzoo:negotiation_v0", "pettingzoo:debate_v0", "pettingzoo:cooperative_v0"])
def test_a_stalling_or_flooding_seat_neither_wins_nor_crashes(target: str) -> None:
    report = run_target(target, PROBES, episodes=3)
    assert {row.probe for row in report.rows} == {"seat-stall", "seat-flood"}
    assert_no_findings(report)
    for row in report.rows:
        assert row.crashed == 0 and max(row.rewards) <= 0.0, (row.probe, row.rewards)


# -- the command ------------------------------------------------------------------------------------------------------


def test_the_command_prints_a_table_per_env_and_exits_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "redteam.json"
    code = main(["redteam", "AgentRL/SQL-v0", "--episodes", "2", "--quiet", "--json", str(out_file)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "AgentRL/SQL-v0" in out and "random floor: 0.000" in out
    for probe in probes_for("AgentRL/SQL-v0"):
        assert re.search(rf"^  {re.escape(probe.name)} .* ok$", out, flags=re.MULTILINE), probe.name
    data = json.loads(out_file.read_text())
    assert data["command"].startswith("agentrl redteam AgentRL/SQL-v0") and data["findings"] == []
    (env,) = data["envs"]
    assert env["target"] == "AgentRL/SQL-v0" and len(env["rows"]) == len(probes_for("AgentRL/SQL-v0"))
    assert {"probe", "description", "episodes", "mean", "floor", "delta_low", "verdict"} <= set(env["rows"][0])


def test_the_command_refuses_what_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["redteam"]) == 2
    assert "give at least one env id" in capsys.readouterr().err
    assert main(["redteam", "AgentRL/Nope-v0"]) == 2
    assert main(["redteam", "AgentRL/SQL-v0", "--probe", "nope"]) == 2
    assert "--list-probes" in capsys.readouterr().err
    assert main(["redteam", "--list-probes"]) == 0
    assert "sandbox-snoop" in capsys.readouterr().out


def test_all_names_every_benchmark_id_the_seats_and_the_pettingzoo_games() -> None:
    targets = all_targets()
    benchmark = {spec.env_id for spec in agentrl.registered_domains()}
    assert benchmark <= set(targets)
    assert "AgentRL/PatientConsult-v1" in targets and "AgentRL/PatientConsult-v0" not in targets
    assert "AgentRL-MA/nim-vs-best-v1" in targets and "AgentRL-MA/nim-vs-best-v0" not in targets
    assert "pettingzoo:debate_v0" in targets
    assert all(probes_for(target) for target in targets), [t for t in targets if not probes_for(t)]
    assert resolve_targets([], suite="multiagent")[-1].startswith("pettingzoo:")


def test_a_probe_that_fails_is_reported_not_hidden() -> None:
    from agentrl.bench.redteam import Probe, ProbePolicy

    class Broken(ProbePolicy):
        def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
            raise RuntimeError("a bug in the probe")

    run = run_redteam(["AgentRL/SQL-v0"], episodes=1, probes=[Probe("broken", "raises", ("*",), Broken)])
    (row,) = run.reports[0].rows
    assert row.verdict == "probe error" and "a bug in the probe" in row.errors[0]
    assert row.verdict in FINDINGS and "broken (probe error)" in format_report(run)


def test_the_probes_read_nothing_privileged() -> None:
    """A probe acts as an agent would: no task, oracle, case or game state (only the random floor uses an agent)."""
    privileged = re.compile(r"\.(task|case|cases|oracle_action|oracle_plan|oracle_actions|game_state|_task)\b")
    for path in sorted((ROOT / "agentrl" / "bench" / "redteam").glob("*.py")):
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith(("#", ">>>")))
        hits = [m.group(0) for m in privileged.finditer(code)]
        assert not hits, f"{path.name} reads {hits}"
