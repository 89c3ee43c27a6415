"""What several commands share: ``KEY=VALUE`` options, and the options that build an agent and its LLM backend."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from agentrl.core.options import parse_key_values

__all__ = ["add_backend_options", "add_env_kwarg", "agent_spec", "parse_kwargs"]

GYM_KWARG_HELP = "gym.make keyword argument, JSON value (repeatable)"


def parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """:func:`~agentrl.core.options.parse_key_values`, exiting with the message on a malformed pair.

    >>> parse_kwargs(["difficulty=0", "name=x"])
    {'difficulty': 0, 'name': 'x'}
    """
    try:
        return parse_key_values(pairs)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None


def add_env_kwarg(parser: Any, help: str = GYM_KWARG_HELP) -> None:
    """``--env-kwarg KEY=VALUE`` (repeatable), into ``args.env_kwarg``."""
    parser.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help=help)


def add_backend_options(group: Any) -> None:
    """The options that build an agent's LLM backend (shared by ``bench`` and ``league``)."""
    group.add_argument("--backend", help="LLM backend: smollm2, transformers, openai")
    group.add_argument("--model-path", help="model directory (transformers backend)")
    group.add_argument("--model", help="model name (openai backend)")
    group.add_argument("--base-url", help="server URL, like http://127.0.0.1:8000/v1 (openai backend)")
    group.add_argument("--temperature", type=float, help="sampling temperature")
    group.add_argument("--max-tokens", "--max-new-tokens", dest="max_tokens", type=int, help="most tokens per turn")
    group.add_argument(
        "--agent-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="agent constructor argument, JSON value (repeatable)",
    )


def agent_spec(args: argparse.Namespace, **agent_options: Any) -> Any:
    """The :class:`~agentrl.agents.registry.AgentSpec` of ``--agent`` and :func:`add_backend_options`' options.

    ``agent_options`` are set before ``--temperature`` and ``--max-tokens``, after ``--agent-option``.
    """
    from agentrl.agents.registry import AgentSpec

    backend_options = {key: getattr(args, key) for key in ("model_path", "model", "base_url")
                       if getattr(args, key) is not None}  # fmt: skip
    options = {**parse_kwargs(args.agent_option), **agent_options}
    if args.temperature is not None:
        options["temperature"] = args.temperature
    if args.max_tokens is not None:
        options["max_tokens"] = args.max_tokens
    return AgentSpec(args.agent, backend=args.backend, backend_options=backend_options, agent_options=options)
