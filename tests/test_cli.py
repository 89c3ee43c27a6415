"""The agentrl command, in process and as a real subprocess."""

from __future__ import annotations

import io
import subprocess
import sys

from agentrl.cli import main, play
from agentrl.demo import run_demo


def test_list(capsys):
    assert main(["list"]) == 0
    assert "AgentRL/TIRMath-v0" in capsys.readouterr().out


def test_check_passes_and_unknown_id_is_a_clear_error(capsys):
    assert main(["check", "AgentRL/TIRMath-v0", "--seeds", "0"]) == 0
    assert "all checks passed" in capsys.readouterr().out
    assert main(["check", "AgentRL/TIRMaht-v0"]) == 2
    assert "TIRMath" in capsys.readouterr().err


def test_play_a_scripted_session():
    stdin = io.StringIO(
        "```python\nprint(6 * 7)\n```\n.\n/system\n\\boxed{-12345}\n.\n/quit\n"
    )
    stdout = io.StringIO()
    rewards = play("AgentRL/TIRMath-v0", seed=0, stdin=stdin, stdout=stdout)
    text = stdout.getvalue()
    assert "```output\n42\n```" in text and "expert mathematician" in text
    assert rewards == [0.0] and "Episode over (answered)" in text


def test_play_ends_cleanly_on_eof():
    assert play("AgentRL/TIRMath-v0", seed=0, stdin=io.StringIO(""), stdout=io.StringIO()) == []


def test_demo_table():
    out = io.StringIO()
    results = run_demo("AgentRL/TIRMath-v0", seeds=range(2), agents=["oracle", "random"], out=out)
    oracle = [r for r in results if r.agent == "oracle"]
    rand = [r for r in results if r.agent == "random"]
    assert all(r.episode_return == 1.0 for r in oracle)
    assert all(r.episode_return == 0.0 and r.done_reason == "max_turns" for r in rand)
    assert "mean return" in out.getvalue() and "isolation" in out.getvalue()


def test_console_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "agentrl.cli", "list"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "TIRMath" in result.stdout
