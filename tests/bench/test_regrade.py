"""``agentrl bench --regrade``: plant a change, and regrade names exactly the episodes it flips; ``--compare``
refuses runs whose env locks differ; a resumed run says what moved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrl.bench.regrade import REGRADE_FILE, regrade_run
from agentrl.cli import main

ENV = "AgentRL/TIRMath-v0"
TASKS = [("3+4?", "7"), ("12*10?", "120"), ("2**5?", "32"), ("1000+24?", "1024"), ("9-9?", "0")]


def _write_tasks(path: Path, tasks: list[tuple[str, str]]) -> None:
    path.write_text("".join(json.dumps({"prompt": q, "answer": a}) + "\n" for q, a in tasks))


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str = "run") -> Path:
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / name
    if not tasks.exists():
        _write_tasks(tasks, TASKS)
    argv = ["bench", "--env", ENV, "--env-kwarg", f"dataset={tasks}", "--env-kwarg", "max_turns=3", "--all-tasks",
            "--agent", "oracle", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    return out


def test_an_altered_gold_answer_flips_exactly_its_episode(tmp_path, capsys):
    out = _run(tmp_path, capsys)
    assert regrade_run(out).flipped == []  # nothing changed: every verdict stands
    altered = list(TASKS)
    altered[3] = (TASKS[3][0], "1025")  # a corrected gold answer
    _write_tasks(tmp_path / "tasks.jsonl", altered)
    assert main(["bench", "--regrade", str(out)]) == 0
    printed = capsys.readouterr().out
    stored = json.loads((out / REGRADE_FILE).read_text())
    flipped = [e for e in stored["episodes"] if e["status"] == "flipped"]
    assert [e["episode"] for e in flipped] == [3], printed
    assert flipped[0]["verdict"] == "success -> failure" and flipped[0]["new_reward"] == 0.0
    assert "data kwarg:dataset" in flipped[0]["why"]  # the lock names what moved
    assert stored["counts"] == {"flipped": 1, "same": 4}
    assert "1 flipped, 4 same" in printed and "success -> failure" in printed


def test_a_changed_grader_rule_flips_the_episodes_it_reaches(tmp_path, capsys, monkeypatch):
    out = _run(tmp_path, capsys)
    from agentrl.envs.tirmath import verify

    original = verify.MathVerifier.__init__

    def two_chars_at_most(self, timeout_s: float = 10.0, max_answer_chars: int = 1000) -> None:
        original(self, timeout_s, max_answer_chars=2)  # the new rule: answers longer than 2 characters score 0

    monkeypatch.setattr(verify.MathVerifier, "__init__", two_chars_at_most)
    result = regrade_run(out, write=False)
    expected = sorted(i for i, (_, answer) in enumerate(TASKS) if len(answer) > 2)
    assert sorted(e.episode for e in result.flipped) == expected == [1, 3]
    assert all("not deterministic, or its lock misses" in e.why for e in result.flipped)  # code patched in memory


def test_episodes_that_cannot_be_replayed_say_why(tmp_path, capsys):
    out = _run(tmp_path, capsys)
    results = out / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    lines[0]["trajectory"][1]["text"] = "0123... [9000 chars cut] ...789"
    lines[1]["error"] = "RuntimeError: the agent crashed"
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = regrade_run(out, write=False)
    reasons = {e.episode: e.why for e in result.episodes if e.status == "not regraded"}
    assert set(reasons) == {0, 1}
    assert "stored cut" in reasons[0] and "ended in an error" in reasons[1]


def test_compare_refuses_runs_whose_locks_differ(tmp_path, capsys):
    first = _run(tmp_path, capsys, "first")
    altered = list(TASKS)
    altered[0] = (TASKS[0][0], "8")
    _write_tasks(tmp_path / "tasks.jsonl", altered)
    second = _run(tmp_path, capsys, "second")
    assert main(["bench", "--compare", str(first), str(second)]) == 2
    error = capsys.readouterr().err
    assert "not comparable" in error and "data kwarg:dataset" in error and "--allow-drift" in error
    page = tmp_path / "compare.html"
    assert main(["bench", "--compare", str(first), str(second), "--allow-drift", "--html", str(page)]) == 0
    assert "drift (--allow-drift): " in capsys.readouterr().out
    html = page.read_text()
    assert "paired (5 pairs)" in html and "Compared despite drift" in html and "kwarg:dataset" in html
    report = (second / "report.html").read_text()
    lock = json.loads((second / "results.jsonl").read_text().splitlines()[0])["lock"]
    assert "Env locks" in report and lock["data"]["kwarg:dataset"] in report and lock["code"] in report


def test_a_resumed_run_says_what_moved(tmp_path, capsys):
    out = _run(tmp_path, capsys)
    _write_tasks(tmp_path / "tasks.jsonl", [*TASKS[:4], ("9-8?", "1")])
    tasks = tmp_path / "tasks.jsonl"
    argv = ["bench", "--env", ENV, "--env-kwarg", f"dataset={tasks}", "--env-kwarg", "max_turns=3", "--all-tasks",
            "--agent", "oracle", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr()
    assert "since earlier results of this agent on AgentRL/TIRMath-v0 were recorded: data kwarg:dataset" in (
        text.out + text.err
    )
