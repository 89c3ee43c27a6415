"""Every ``agentrl train`` command in the bash blocks of the README and the guides runs as written, at its defaults.

A test that shortens a command's settings can pass while the README's own line fails (issue 30: the pixel
command failed at its defaults, its test passed with ``--max-turns 3``). So each command is taken from the
README text itself and run as it stands, in a scratch folder (its ``runs/...`` land there), through the
installed ``agentrl`` console script, in a process of its own that starts with torch and transformers imported
(``tests/warm_python.py``). A command with ``--resume true`` first runs the command before it
in its block, in the same folder, so it continues a run as the README says.

The few commands that are recorded measurements of long runs (the embedded SmolLM2 for tens of minutes) are
named in ``MEASURED_RUNS`` with the reason they are not run here; every other command is.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import warm_python
from tests.paths import ROOT

pytest.importorskip("torch", reason="torch is not installed (pip install 'agentrl-gym[train]')")
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'agentrl-gym[train]')")

#: the README and the site's hand-written pages (the guides hold the training commands)
README = "\n".join(path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])

#: Commands (by a fragment that only they contain) that the README gives as recorded long runs, and why not here.
MEASURED_RUNS = {
    "--model smollm2": "a recorded run of the real SmolLM2-135M (26 minutes on 2 cores); its figures are in the README",
}


def bash_commands(text: str) -> list[list[list[str]]]:
    """The words of each command line of every fenced bash block (continuations joined, comments dropped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", text, re.S | re.M)
    out = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        out.append([words for words in (shlex.split(line, comments=True) for line in joined.splitlines()) if words])
    return out


def is_assignment(word: str) -> bool:
    return re.fullmatch(r"[A-Z_]+=\S*", word) is not None


def train_commands(text: str) -> list[tuple[list[str], list[str] | None]]:
    """``(command, the command to run before it in the same folder, or None)`` for every ``agentrl train`` line."""
    found = []
    for lines in bash_commands(text):
        for index, words in enumerate(lines):
            if [w for w in words if not is_assignment(w)][:2] != ["agentrl", "train"]:
                continue
            resumes = "--resume" in words and words[words.index("--resume") + 1 :][:1] == ["true"]
            found.append((words, lines[index - 1] if resumes and index > 0 else None))
    return found


COMMANDS = train_commands(README)
#: The guides' lines that say a run learns: each learning claim is checked once, on the line that makes it (the
#: random tiny model writes the asked letter ~5% of the time; learning takes that several-fold up). GRPO's other
#: losses and PPO are checked in tests/train/test_train.py, the pixel line here only.
LEARNING_RUNS = (
    "grpo --env AgentRL/Letter-v0 --model tiny --output-dir runs/letter",
    "grpo --env AgentRL/ColourLetter-v0 --model tiny-vlm --max-steps 60",
)
#: A command that a ``--resume true`` command continues runs there first, in the same folder, with the same checks
#: on its steps (they are the first lines of the resumed run's metrics); running it on its own too would train it
#: twice.
RESUMED = [before for _, before in COMMANDS if before is not None]
RUN_ALONE = [(words, before) for words, before in COMMANDS if words not in RESUMED]


def check_multiagent_rows(words: list[str], rows: list[dict]) -> None:
    """What every multi-agent line must log, checked here on the guide's own lines (once, not on copies of them):
    every rollout collected (a trajectory per learner seat per game), each seat's metrics, the learner's Elo
    against the other players (none when every seat learns), a fixed random player anchored at 1000, and a
    snapshot opponent refreshed at each step when the line asks for it."""
    from agentrl.cli import build_parser

    args = build_parser().parse_args([w for w in words if not is_assignment(w)][1:])
    seats = args.seats.split(",") if args.seats else ["learner", args.opponent]
    learners, games = seats.count("learner"), args.group_size * args.prompts_per_step
    for row in rows:
        assert row["rollout/failed"] == 0 and row["rollout/trajectories"] == games * learners, row
        assert any(key.startswith("seat/") for key in row), sorted(row)
        if learners == len(seats):  # learner against learner: nobody to rate against
            assert "elo/learner" not in row, row
            continue
        assert isinstance(row["elo/learner"], float) and row["league/games"] == games, row
        if "random" in seats:
            assert row["elo/random"] == 1000.0, row
    if "snapshot" in seats and args.snapshot_every == 1:
        assert [row["multiagent/snapshot_step"] for row in rows] == [float(row["step"]) for row in rows]


def test_the_multiagent_check_catches_a_lost_rollout_and_a_drifting_anchor() -> None:
    words = ["agentrl", "train", "grpo", "--env", "agentrl.envs.multiagent.tictactoe_v0", "--seats", "learner,random"]
    row = {"step": 1, "rollout/failed": 0, "rollout/trajectories": 16, "seat/player_0/return": 0.0,
           "elo/learner": 900.0, "league/games": 16, "elo/random": 1000.0}  # fmt: skip
    check_multiagent_rows(words, [row])  # 4 prompts x 4 rollouts (the defaults) x 1 learner seat
    for key, wrong in (("rollout/trajectories", 8), ("elo/random", 990.0), ("league/games", 4), ("rollout/failed", 1)):
        with pytest.raises(AssertionError):
            check_multiagent_rows(words, [{**row, key: wrong}])


def marks_for(words: list[str]) -> list[pytest.MarkDecorator]:
    command = shlex.join(words)
    marks = [pytest.mark.slow]
    if "FlashGame-" in command:
        marks.append(pytest.mark.browser)
    if "OSWorld-" in command:
        marks.append(pytest.mark.desktop)
    return marks


def test_the_readme_has_training_commands() -> None:
    lines = [shlex.join(words) for words, _ in COMMANDS]
    assert len(lines) >= 10, lines
    assert any("tiny-vlm" in c and "FlashGame-Catch" in c and " grpo " in c for c in lines)
    assert any("tiny-vlm" in c and "FlashGame-Catch" in c and " ppo " in c for c in lines)
    assert any("--resume true" in c for c in lines) and all(b for w, b in COMMANDS if "--resume" in w)
    # every command runs: on its own, or first in the test of the command that resumes it
    assert len(RUN_ALONE) + len(RESUMED) == len(COMMANDS) and RESUMED


def run_as_written(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    words = list(command)
    # The README's harness commands run from the repository root, where `examples.harness_openai` imports; the
    # scratch folder stands in for it, so the repository is on the path as the root would put it there.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path}
    while words and is_assignment(words[0]):  # VAR=value prefixes, as the shell reads them
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    assert words[0] == "agentrl", command
    # The `agentrl` console script of this interpreter's install, as the line names it.
    argv = [str(Path(sys.executable).with_name("agentrl")), *words[1:]]
    return warm_python.run(argv, cwd=cwd, env=env, timeout=1500)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    ("words", "before"),
    [pytest.param(w, b, marks=marks_for(w), id=shlex.join(w).split("agentrl train ")[1][:90]) for w, b in RUN_ALONE],
)
def test_readme_training_command_runs_as_written(words: list[str], before: list[str] | None, tmp_path: Path) -> None:
    command = shlex.join(words)
    for fragment, reason in MEASURED_RUNS.items():
        if fragment in command:
            pytest.skip(reason)
    if "FlashGame-" in command and shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    if "OSWorld-" in command and shutil.which("Xvfb") is None:
        pytest.skip("needs Xvfb (make setup installs the desktop's packages)")
    if before is not None:
        first = run_as_written(before, tmp_path)
        assert first.returncode == 0, f"{shlex.join(before)}\n{first.stderr[-3000:]}"
    started = time.monotonic()
    done = run_as_written(words, tmp_path)
    print(f"\n{command}\n  ran in {time.monotonic() - started:.0f}s")
    assert done.returncode == 0, f"{command}\n{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    if "--help" in words:
        assert "--env" in done.stdout
        return
    metrics = sorted(tmp_path.glob("runs/**/metrics.jsonl"))
    assert metrics, f"no metrics.jsonl under {tmp_path}/runs"
    rows = [json.loads(line) for line in metrics[-1].read_text().splitlines() if line.strip()]
    assert rows and all(row["update/tokens"] > 0 for row in rows if "update/tokens" in row), rows[-1:]
    if before is not None:  # --resume true continued the run before it: one line per step, none twice
        steps = [row["step"] for row in rows]
        assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 2, steps
        if "--tensorboard" not in words:  # on by default: both runs wrote event files beside the metrics
            assert list((metrics[-1].parent / "tensorboard").iterdir()), metrics[-1].parent
    if "agentrl.envs.multiagent." in command:
        check_multiagent_rows(words, rows)
    # the trainer's logprobs (pixels in, for a VLM) equal the sampler's on every trained token
    assert all(row["update/logprob_mismatch"] < 1e-4 for row in rows if "update/logprob_mismatch" in row), rows
    for fragment in LEARNING_RUNS:
        if fragment in command:  # the guide says this run learns: it is where that claim is checked, once
            rewards = [row["reward/mean"] for row in rows]
            start, end = sum(rewards[:3]) / 3, sum(rewards[-5:]) / 5
            assert end > start + 0.15 and end > 3 * start, (command, rewards)
