"""The ``agentrl`` command: ``list``, ``play``, ``check``, ``demo``.

>>> main(["list"])  # doctest: +ELLIPSIS
AgentRL/TIRMath-v0 ...
0
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = ["main"]

_PLAY_HELP = (
    "Type your turn; finish it with a line holding only '.' (or press Ctrl-D).\n"
    "Commands on a line of their own: /reset (new episode), /quit, /system (show the system prompt)."
)


def _parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs to ``gym.make`` kwargs; values are JSON when they parse, else strings."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: expected key=value, got {pair!r} (for example --kw max_turns=5)")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    return kwargs


def _command_list(args: argparse.Namespace) -> int:
    from agentrl.core.registry import registered_domains

    specs = registered_domains()
    width = max(len(spec.env_id) for spec in specs)
    for spec in specs:
        print(f"{spec.env_id:<{width}}  {spec.description}")
    return 0


def _command_check(args: argparse.Namespace) -> int:
    from agentrl.testing import DomainCheckError, check_domain

    try:
        check_domain(args.env_id, seeds=tuple(args.seeds), make_kwargs=_parse_kwargs(args.kw), log=print)
    except DomainCheckError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"{args.env_id}: all checks passed")
    return 0


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


def play(env_id: str, *, seed: int | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None,
         **make_kwargs: Any) -> list[float]:
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


def _command_play(args: argparse.Namespace) -> int:
    rewards = play(args.env_id, seed=args.seed, **_parse_kwargs(args.kw))
    if rewards:
        print(f"\nfinished {len(rewards)} episode(s); mean return {sum(rewards) / len(rewards):g}")
    return 0


def _command_demo(args: argparse.Namespace) -> int:
    from agentrl.demo import run_demo

    run_demo(env_id=args.env_id, seeds=range(args.seeds), agents=args.agents)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentrl`` command."""
    import agentrl

    parser = argparse.ArgumentParser(prog="agentrl", description="AgentRL: environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentrl {agentrl.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list every env id with a one-line description")
    listing.set_defaults(run=_command_list)

    check = commands.add_parser("check", help="run agentrl.testing.check_domain on an env id")
    check.add_argument("env_id")
    check.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    check.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="gym.make keyword arguments")
    check.set_defaults(run=_command_check)

    play_parser = commands.add_parser("play", help="play a text env yourself in the terminal")
    play_parser.add_argument("env_id")
    play_parser.add_argument("--seed", type=int, default=None)
    play_parser.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="gym.make keyword arguments")
    play_parser.set_defaults(run=_command_play)

    demo = commands.add_parser("demo", help="run the oracle and the random agent on a few seeds; print a table")
    demo.add_argument("--env-id", default="AgentRL/TIRMath-v0")
    demo.add_argument("--seeds", type=int, default=5, help="number of seeds (episodes per agent)")
    demo.add_argument("--agents", nargs="+", default=["oracle", "random"], choices=["oracle", "random"])
    demo.set_defaults(run=_command_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentrl`` command; returns the exit code."""
    import gymnasium as gym

    from agentrl.core.errors import AgentRLError

    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (AgentRLError, gym.error.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
