"""The agentrl command, in process and as a real subprocess."""

from __future__ import annotations

import io
import subprocess
import sys

from agentrl.cli import main
from agentrl.cli.play import play
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


def test_train_options_are_the_args_fields_with_their_help(capsys, monkeypatch):
    """`agentrl train ALGO --help` shows every field of the args dataclass, with its metadata's help."""
    import dataclasses

    import pytest

    from agentrl.train.args import field_help
    from agentrl.train.grpo import GRPOArgs
    from agentrl.train.ppo import PPOArgs

    monkeypatch.setenv("COLUMNS", "2000")  # no wrapping: the help reads as one line per option
    for algorithm, cls in (("grpo", GRPOArgs), ("ppo", PPOArgs)):
        with pytest.raises(SystemExit):
            main(["train", algorithm, "--help"])
        out = capsys.readouterr().out
        for spec in dataclasses.fields(cls):
            text = field_help(cls, spec.name)
            assert text, f"{cls.__name__}.{spec.name} has no metadata['help']"
            # the docstrings' field lists (the class's own fields, then its bases') are generated from it
            assert any(f"    {spec.name}: " in (klass.__doc__ or "") for klass in cls.__mro__), spec.name
            if spec.name not in ("env_fn", "env_kwargs"):  # API only / --env-kwarg KEY=VALUE
                option = "--" + spec.name.replace("_", "-")
                assert f"{option} " in out and f"{text} (default: {spec.default})" in out, option


def test_one_name_for_the_token_budget_everywhere():
    """``--max-tokens`` in bench, league and train; ``--max-new-tokens`` is its alias in all three."""
    from agentrl.cli import build_parser

    parser = build_parser()
    for budget in ("--max-tokens", "--max-new-tokens"):
        train = parser.parse_args(["train", "grpo", "--env", "AgentRL/Letter-v0", budget, "7"])
        bench = parser.parse_args(["bench", "--env", "AgentRL/Letter-v0", budget, "7"])
        league = parser.parse_args(["league", "--env", "tictactoe_v0", budget, "7"])
        assert (train.max_new_tokens, bench.max_tokens, league.max_tokens) == (7, 7, 7), budget
