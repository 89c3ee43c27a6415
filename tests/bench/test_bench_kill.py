"""``kill -9`` in the middle of ``agentrl bench``, then the same command again: every episode exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

EPISODES, SEEDS = 6, ("0", "1")


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "agentrl.cli", "bench", "--env", "AgentRL/TIRMath-v0",
            "--agent", "agentrl.rollout.workloads:ScriptedAgent", "--agent-option", "max_delay=0.15",
            "--episodes", str(EPISODES), "--seeds", *SEEDS, "--concurrency", "2", "--out", str(out), "--no-progress"]


def _count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_sigkill_mid_run_then_rerun_gives_every_episode_exactly_once(tmp_path):
    results = tmp_path / "results.jsonl"
    first = subprocess.Popen(_command(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while _count_lines(results) < 3 and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.poll() is None, "the run finished before it could be killed; make it longer"
        os.kill(first.pid, signal.SIGKILL)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    done_before = _count_lines(results)
    assert 3 <= done_before < EPISODES * len(SEEDS)
    # What a kill in the middle of a write would leave: half a line, no newline.
    with open(results, "ab") as f:
        f.write(b'{"format": 1, "key": "0123456789abcdef", "env_id": "AgentRL/TIRMath-v0", "rew')

    second = subprocess.run(_command(tmp_path), capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    bad_line = done_before + 1
    assert f"results.jsonl:{bad_line}: not valid JSON (truncated" in second.stderr
    assert f"{done_before} of {EPISODES * len(SEEDS)} episodes already done" in second.stdout

    lines = results.read_bytes().split(b"\n")
    assert lines[-1] == b""  # the file ends with a complete line
    records, bad = [], []
    for number, line in enumerate(lines[:-1], start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad.append(number)
    assert bad == [bad_line]
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == EPISODES * len(SEEDS)
    assert {(r["seed"], r["episode"]) for r in records} == {(s, j) for s in (0, 1) for j in range(EPISODES)}
    assert all(r["error"] is None and r["success"] for r in records)

    third = subprocess.run(_command(tmp_path), capture_output=True, text=True, timeout=120)
    assert third.returncode == 0 and "all 12 episodes already done; nothing to run" in third.stdout
