"""agentrl bench: resume, corrupt lines, broken agents, pass@k, tokens, fingerprints, compare, speed."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.agents.simple import OracleAgent
from agentrl.bench.results import ResultStore
from agentrl.bench.runner import BenchConfig, agent_seed_for, env_fingerprint, run_bench
from agentrl.cli import main
from benchmarks.concurrency import measure

ENV = "AgentRL/TIRMath-v0"
HOSTILE = "</script><script>alert(1)</script>"


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


# -- resume ---------------------------------------------------------------------------------------
def test_second_run_adds_nothing_and_says_so(tmp_path, capsys):
    argv = ["bench", "--env", ENV, "--agent", "oracle", "--episodes", "2", "--seeds", "0", "1", "--out",
            str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "running 4 episodes" in first and "mean reward" in first and "report.html" in first
    lines = (tmp_path / "results.jsonl").read_text()
    assert main(argv) == 0
    second = capsys.readouterr().out
    assert "all 4 episodes already done; nothing to run" in second
    assert (tmp_path / "results.jsonl").read_text() == lines  # byte for byte: nothing appended
    assert main([*argv[:6], "3", *argv[7:]]) == 0  # --episodes 3: only the new ones run
    assert "4 of 6 episodes already done; running 2" in capsys.readouterr().out
    records = _lines(tmp_path)
    assert len(records) == 6 == len({r["key"] for r in records})
    assert all(r["reward"] == 1.0 and r["success"] and r["turns"] == 2 for r in records)
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["total_episodes"] == 6 and run["agent"]["agent"] == "oracle" and run["command"][:2] == ["agentrl",
                                                                                                       "bench"]
    first_record = records[0]
    for name in ("env_id", "env_version", "env_fingerprint", "agent", "seed", "task_id", "reward", "success",
                 "turns", "tokens", "wall_s", "trajectory"):
        assert name in first_record
    assert [t["role"] for t in first_record["trajectory"]] == ["env", "agent", "env", "agent", "env"]
    assert "<!DOCTYPE html>" in (tmp_path / "report.html").read_text()


def test_corrupt_line_is_reported_with_its_number_and_its_episode_reruns(tmp_path, capsys):
    argv = ["bench", "--env", ENV, "--agent", "oracle", "--episodes", "4", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    path = tmp_path / "results.jsonl"
    lines = path.read_text().splitlines()
    lost_key = json.loads(lines[1])["key"]
    lines[1] = '{"key": "broken", "reward": '  # line 2 is now garbage
    path.write_text("\n".join(lines) + "\n")
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"{path}:2: not valid JSON" in captured.err
    assert "3 of 4 episodes already done; running 1" in captured.out
    loaded = ResultStore(path).load()
    assert lost_key in loaded.records and len(loaded.records) == 4
    assert [(p.line, p.reason.split(":")[0]) for p in loaded.problems] == [(2, "not valid JSON")]
    assert "were skipped" in (tmp_path / "report.html").read_text()  # the report lists it too


def test_truncated_last_line_then_append_starts_on_a_fresh_line(tmp_path):
    store = ResultStore(tmp_path / "results.jsonl")
    store.append({"key": "a", "env_id": "E", "reward": 1.0})
    with open(store.path, "ab") as f:
        f.write(b'{"key": "b", "env_id": "E", "rew')  # a kill in the middle of a write
    store.append({"key": "c", "env_id": "E", "reward": 0.0})
    loaded = store.load()
    assert list(loaded.records) == ["a", "c"]
    assert [p.line for p in loaded.problems] == [2]
    assert store.path.read_text().count("\n") == 3
    store.append({"key": "a", "env_id": "E", "reward": 0.5})  # a duplicate key is reported, the first kept
    again = store.load()
    assert again.records["a"]["reward"] == 1.0 and "duplicate" in again.problems[-1].reason
    store.close()


# -- broken agents --------------------------------------------------------------------------------
RELEASE = threading.Event()  # lets the abandoned "hung" threads finish when the test is over


class Misbehaving(OracleAgent):
    """The oracle, except on the first action of the episode it was built for: then it misbehaves."""

    def __init__(self, mode: str | None) -> None:
        super().__init__()
        self.mode = mode
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}

    def act(self, observation, info):
        self.usage["prompt_tokens"] += 10
        self.usage["completion_tokens"] += 3
        if self.mode == "raise":
            raise RuntimeError("the agent crashed " + HOSTILE)
        if self.mode == "none":
            return None
        if self.mode == "huge":
            return "x" * 10_000_000
        if self.mode == "hang":
            RELEASE.wait(60)
        return super().act(observation, info)


class AsyncHanging(OracleAgent):
    async def aact(self, observation, info):
        await asyncio.sleep(3600)


@dataclass
class _Spec:
    """A stand-in for AgentSpec: one mode per episode index (seed 0, attempt 0)."""

    modes: dict[int, str]
    built: list[Any] = field(default_factory=list)

    def config(self):
        return {"agent": "tests:Misbehaving", "modes": {str(k): v for k, v in self.modes.items()}}

    def build(self):
        by_seed = {agent_seed_for(0, index, 0): mode for index, mode in self.modes.items()}
        spec = self

        class Builder:
            def __call__(self, seed=None):
                mode = by_seed.get(seed)
                agent = AsyncHanging() if mode == "async-hang" else Misbehaving(mode)
                spec.built.append(agent)
                return agent

            def close(self):
                pass

        return Builder()


def test_broken_agents_cost_one_episode_each(tmp_path):
    modes = {1: "raise", 2: "none", 3: "huge", 4: "hang", 5: "async-hang"}
    spec = _Spec(modes)
    config = BenchConfig([ENV], spec, tmp_path, episodes=8, concurrency=2, action_timeout=1.5, progress=False)
    try:
        outcome = run_bench(config, log=lambda message: None)
    finally:
        RELEASE.set()
    assert outcome.ran == 8 and len(outcome.records) == 8
    by_index = {r["episode"]: r for r in outcome.records}
    for index in (0, 6, 7):  # before and after the broken ones: fine
        assert by_index[index]["success"] and by_index[index]["error"] is None
    raised, none, huge, hang, async_hang = (by_index[i] for i in (1, 2, 3, 4, 5))
    assert "RuntimeError: the agent crashed" in raised["error"] and raised["error_kind"] == "agent"
    assert "not accepted" in none["error"] and "NoneType" in none["error"]
    assert none["trajectory"][1] == {"role": "agent", "text": "None", "seconds": none["trajectory"][1]["seconds"],
                                     "type": "NoneType"}
    assert hang["error"] == "agent did not act within 1.5s" and hang["error_kind"] == "timeout"
    assert async_hang["error"] == "agent did not act within 1.5s"
    for record in (raised, none, hang, async_hang):
        assert record["reward"] == 0.0 and record["success"] is False
    # 10 MB actions: the env refuses them with an error observation until the turn budget runs out;
    # the stored copy is capped, so the line stays small.
    assert huge["error"] is None and huge["success"] is False and huge["done_reason"] == "max_turns"
    assert huge["trajectory"][2]["text"].startswith("[error] your message is 10000000 characters long")
    assert len(huge["trajectory"][1]["text"]) <= 20_000 and "chars cut" in huge["trajectory"][1]["text"]
    assert max(len(line) for line in (tmp_path / "results.jsonl").read_bytes().splitlines()) < 500_000
    assert huge["tokens"] == 130 and huge["prompt_tokens"] == 100  # per-episode usage is recorded


def _table_rows(out: str) -> list[str]:
    """The body rows of the summary table ``agentrl bench`` printed (between its ``---`` rule and a blank line)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_each_run_into_one_out_dir_prints_only_its_own_rows(tmp_path, capsys):
    """`make demo`'s pattern: runs sharing --out each print their rows; the report line counts them all."""
    common = ["bench", "--env", ENV, "--episodes", "1", "--env-kwarg", "max_turns=2", "--out", str(tmp_path),
              "--no-progress"]
    assert main([*common, "--agent", "oracle"]) == 0
    first = capsys.readouterr().out
    rows = _table_rows(first)
    assert len(rows) == 1 and " oracle " in rows[0]
    assert main([*common, "--agent", "random"]) == 0
    second = capsys.readouterr().out
    rows = _table_rows(second)
    assert len(rows) == 1 and " random " in rows[0]  # the oracle's row is not printed again
    assert f"report:  {tmp_path / 'report.html'} (1 row)" in first
    assert f"report:  {tmp_path / 'report.html'} (2 rows from every run into this directory; the table above " \
           "is this run's 1)" in second
    assert "results: " in second and "(2 episodes)" in second
    html = (tmp_path / "report.html").read_text()
    assert "oracle" in html and "random" in html  # the report still holds every row


# -- k attempts, fingerprints, compare --------------------------------------------------------------
def test_k_attempts_share_the_task_and_feed_pass_at_k(tmp_path, capsys):
    argv = ["bench", "--env", ENV, "--agent", "random", "--episodes", "2", "--k", "3", "--env-kwarg",
            "max_turns=1", "--out", str(tmp_path), "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    records = _lines(tmp_path)
    assert len(records) == 6
    for index in (0, 1):
        attempts = [r for r in records if r["episode"] == index]
        assert sorted(r["attempt"] for r in attempts) == [0, 1, 2]
        assert len({r["task_id"] for r in attempts}) == 1 and len({r["reset_seed"] for r in attempts}) == 1
        assert len({r["agent_seed"] for r in attempts}) == 3
    assert "@1=0.000, @3=0.000" in out and "max_turns=1" in out


def test_fingerprint_covers_code_and_dataset_files(tmp_path):
    data = tmp_path / "tasks.jsonl"
    data.write_text('{"prompt": "1+1?", "answer": "2"}\n')
    first = env_fingerprint(ENV, {"dataset": str(data)})
    assert first == env_fingerprint(ENV, {"dataset": str(data)})
    assert first != env_fingerprint(ENV)
    data.write_text('{"prompt": "1+2?", "answer": "3"}\n')
    assert env_fingerprint(ENV, {"dataset": str(data)}) != first


def test_compare_two_runs(tmp_path, capsys):
    common = ["--env", ENV, "--episodes", "6", "--env-kwarg", "max_turns=2", "--no-progress"]
    assert main(["bench", "--agent", "oracle", "--out", str(tmp_path / "a"), *common]) == 0
    assert main(["bench", "--agent", "random", "--out", str(tmp_path / "b"), *common]) == 0
    assert main(["bench", "--agent", "random", "--seeds", "7", "--out", str(tmp_path / "c"), *common]) == 0
    capsys.readouterr()
    assert main(["bench", "--compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(ENV))
    assert "oracle" in row and "random" in row
    assert "paired (6 pairs)" in row  # same seeds and episodes: the same 6 tasks
    assert "-1.000 [-1.000, -1.000] *" in row  # reward B - A per task, constant: exact and significant
    assert "-100.0pp [-100.0pp, -100.0pp] *" in row and "0.0312 (6:0)" in row  # McNemar: 2 / 2**6
    assert main(["bench", "--compare", str(tmp_path / "a"), str(tmp_path / "c")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(ENV))
    assert "independent" in row and "-100.0pp [" in row  # another seed: other tasks, nothing pairs
    assert main(["bench", "--compare", str(tmp_path / "a"), str(tmp_path / "missing")]) == 2
    assert "no benchmark results" in capsys.readouterr().err


def test_cli_errors_are_clear(tmp_path, capsys):
    assert main(["bench", "--env", ENV, "--out", str(tmp_path)]) == 2
    assert "--agent" in capsys.readouterr().err
    assert main(["bench", "--agent", "oracle", "--out", str(tmp_path)]) == 2
    assert "--env" in capsys.readouterr().err
    assert main(["bench", "--agent", "orcale", "--env", ENV, "--out", str(tmp_path)]) == 2
    assert "did you mean 'oracle'" in capsys.readouterr().err
    assert main(["bench", "--suite", "nope", "--agent", "oracle", "--out", str(tmp_path)]) == 2
    assert "unknown suite" in capsys.readouterr().err


# -- concurrency ------------------------------------------------------------------------------------
def test_concurrency_speeds_up_latency_bound_agents():
    # The sandbox-free InstantEnv: the timings measure the runner and the agent's 0-100 ms waits
    # (TIRMath's per-episode sandbox restart is CPU-bound on a 2-core machine).
    result = measure((1, 8), env_id="instant", episodes=32, max_delay=0.1)
    assert result.errors == {1: 0, 8: 0}
    assert result.ratio(8) >= 4.0, result.seconds
