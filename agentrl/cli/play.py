"""``agentrl play ID``: a person plays a text env in the terminal (:func:`play`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from agentrl.cli.options import parse_kwargs

__all__ = ["add_parser", "play", "run"]

_PLAY_HELP = (
    "Type your turn; finish it with a line holding only '.' (or press Ctrl-D).\n"
    "Commands on a line of their own: /reset (new episode), /quit, /system (show the system prompt)."
)


def add_parser(commands: Any) -> None:
    """Add ``play`` to the ``agentrl`` command's subparsers."""
    play_parser = commands.add_parser("play", help="play a text env yourself in the terminal")
    play_parser.add_argument("env_id")
    play_parser.add_argument("--seed", type=int, default=None)
    play_parser.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="gym.make keyword arguments")
    play_parser.set_defaults(run=run)


def _read_turn(read_line: Callable[[], str], write: Callable[[str], Any]) -> str | None:
    """Lines until a lone '.', or ``None`` on EOF with nothing typed."""
    lines: list[str] = []
    while True:
        write("... " if lines else ">>> ")
        line = read_line()
        if line == "":  # EOF
            return "\n".join(lines) if lines else None
        line = line.rstrip("\n")
        if line == "." or (not lines and line.startswith("/")):
            return "\n".join(lines) if line == "." else line
        lines.append(line)


def play(
    env_id: str,
    *,
    seed: int | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    **make_kwargs: Any,
) -> list[float]:
    """Let a person play a text env in the terminal; returns the reward of each finished episode."""
    import gymnasium as gym

    source, sink = stdin or sys.stdin, stdout or sys.stdout

    def write(text: str) -> None:
        sink.write(text)
        sink.flush()

    env = gym.make(env_id, **make_kwargs)
    rewards: list[float] = []
    try:
        observation, info = env.reset(seed=seed)
        write(f"{_PLAY_HELP}\n\n[{info['task_id']}]\n{observation}\n\n")
        episode_return = 0.0
        while True:
            turn = _read_turn(source.readline, write)
            if turn is None or turn == "/quit":
                break
            if turn == "/system":
                write(env.unwrapped.system_prompt + "\n\n")
                continue
            if turn == "/reset":
                observation, info = env.reset()
                episode_return = 0.0
                write(f"\n[{info['task_id']}]\n{observation}\n\n")
                continue
            observation, reward, terminated, truncated, info = env.step(turn)
            episode_return += reward
            write(f"\n{observation}\n")
            write(f"(reward {reward:g}, turn {info['turn']}, {info['turns_left']} left)\n\n")
            if terminated or truncated:
                rewards.append(episode_return)
                write(f"Episode over ({info['done_reason']}), return {episode_return:g}. Next task:\n")
                observation, info = env.reset()
                episode_return = 0.0
                write(f"\n[{info['task_id']}]\n{observation}\n\n")
    finally:
        env.close()
    return rewards


def run(args: argparse.Namespace) -> int:
    """Play until ``/quit`` or EOF, then print the mean return of the finished episodes."""
    rewards = play(args.env_id, seed=args.seed, **parse_kwargs(args.kw))
    if rewards:
        print(f"\nfinished {len(rewards)} episode(s); mean return {sum(rewards) / len(rewards):g}")
    return 0
