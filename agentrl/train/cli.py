"""``agentrl train grpo|ppo``: every field of the algorithm's args dataclass as a command-line option.

Options are generated from the dataclass's typed fields (``GRPOArgs.max_steps: int`` becomes
``--max-steps``, type ``int``), with the help text from each field's ``metadata["help"]`` (as
Hugging Face's ``HfArgumentParser`` reads TRL's configs), so the command line and the Python API
never drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from agentrl.train.args import field_help

__all__ = ["add_train_parser", "args_from_namespace", "reward_curve", "run_train"]

ALGORITHMS = ("grpo", "ppo")


def _base_type(annotation: Any) -> tuple[Any, bool]:
    """(the non-None type, whether None is allowed) of an annotation like ``int | None``."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return annotation, False


def _parse_optional(kind: Any) -> Any:
    def parse(text: str) -> Any:
        return None if text.lower() in ("none", "null", "") else kind(text)

    parse.__name__ = getattr(kind, "__name__", "value")
    return parse


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


OPTION_NAMES = {"max_new_tokens": ("--max-tokens", "--max-new-tokens")}
"""Fields whose command-line name differs from the field's: the name ``agentrl bench`` and ``league`` use for the
same budget comes first, the field's own name stays as an alias."""


def add_train_parser(commands: Any) -> None:
    """Add ``train grpo`` and ``train ppo`` to the ``agentrl`` command's subparsers."""
    train = commands.add_parser("train", help="train an LLM policy on an env with GRPO or PPO")
    algorithms = train.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    for name in ALGORITHMS:
        cls = _args_class(name)
        parser = algorithms.add_parser(
            name,
            help=f"{name.upper()} (options: agentrl train {name} --help)",
            description=(_module_doc(name) or "").split("\n\n")[0],
        )
        hints = typing.get_type_hints(cls)
        for spec in dataclasses.fields(cls):
            if spec.name == "env_fn":
                continue  # a Python callable: API only
            options = OPTION_NAMES.get(spec.name, ("--" + spec.name.replace("_", "-"),))
            help_text = field_help(cls, spec.name)
            if spec.name == "env_kwargs":
                parser.add_argument(
                    "--env-kwarg",
                    action="append",
                    default=[],
                    metavar="KEY=VALUE",
                    help="gym.make keyword argument, JSON value (repeatable)",
                )
                continue
            default = spec.default if spec.default is not dataclasses.MISSING else None
            kind, optional = _base_type(hints[spec.name])
            if kind is bool:
                parser.add_argument(
                    *options,
                    dest=spec.name,
                    type=_parse_optional(_bool) if optional else _bool,
                    default=default,
                    metavar="BOOL",
                    help=f"{help_text} (default: {default})",
                )
            else:
                converter = _parse_optional(kind) if optional else kind
                parser.add_argument(
                    *options, dest=spec.name, type=converter, default=default, help=f"{help_text} (default: {default})"
                )
        parser.set_defaults(run=run_train)


def _args_class(name: str) -> type:
    if name == "grpo":
        from agentrl.train.grpo import GRPOArgs

        return GRPOArgs
    from agentrl.train.ppo import PPOArgs

    return PPOArgs


def _module_doc(name: str) -> str | None:
    import importlib

    return importlib.import_module(f"agentrl.train.{name}").__doc__


def args_from_namespace(algorithm: str, namespace: argparse.Namespace) -> Any:
    """The args dataclass of ``algorithm`` built from parsed command-line options."""
    cls = _args_class(algorithm)
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if spec.name == "env_fn":
            continue
        if spec.name == "env_kwargs":
            from agentrl.core.options import parse_key_values

            values["env_kwargs"] = parse_key_values(namespace.env_kwarg)
            continue
        values[spec.name] = getattr(namespace, spec.name)
    return cls(**values)


def run_train(namespace: argparse.Namespace) -> int:
    """Run ``agentrl train ALGORITHM``; print where the metrics and the plot are."""
    import importlib

    args = args_from_namespace(namespace.algorithm, namespace)
    module = importlib.import_module(f"agentrl.train.{namespace.algorithm}")
    history = module.train(args)
    out = args.output_dir
    if history:
        first, last = history[0], history[-1]
        print(
            f"{namespace.algorithm}: {len(history)} step(s); reward {first.get('reward/mean', float('nan')):.3f} "
            f"-> {last.get('reward/mean', float('nan')):.3f}"
        )
        from agentrl.train.metrics import failure_warning

        warning = failure_warning(history, args.max_failure_rate)
        if warning:
            print(warning)
    else:
        print(f"{namespace.algorithm}: nothing to do (the run in {out} is already at max_steps={args.max_steps})")
    print(reward_curve(Path(out) / "metrics.jsonl"))
    if history and "elo/learner" in history[-1]:
        print(reward_curve(Path(out) / "metrics.jsonl", key="elo/learner", label="learner Elo", digits=0))
    print(f"metrics: {out}/metrics.jsonl   plot: {out}/curves.png   checkpoints: {out}/checkpoints/")
    return 0


def reward_curve(
    metrics_path: Path, points: int = 10, *, key: str = "reward/mean", label: str = "reward", digits: int = 2
) -> str:
    r"""A one-line text view of ``key`` (``reward/mean``) over the run (about ``points`` steps, evenly spaced).

    Example:
        >>> import json, tempfile
        >>> path = Path(tempfile.mkdtemp()) / "metrics.jsonl"
        >>> _ = path.write_text("".join(json.dumps({"step": i, "reward/mean": i / 10}) + "\n" for i in range(1, 4)))
        >>> reward_curve(path)
        'reward by step: 1:0.10  2:0.20  3:0.30'
    """
    if not metrics_path.is_file():
        return f"{label} by step: (no metrics yet)"
    rows = [json.loads(line) for line in metrics_path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if isinstance(r.get(key), (int, float))]
    if not rows:
        return f"{label} by step: (no {key} logged)"
    stride = max(1, len(rows) // points)
    chosen = rows[::stride]
    if chosen[-1] is not rows[-1]:
        chosen.append(rows[-1])
    return f"{label} by step: " + "  ".join(f"{r['step']}:{r[key]:.{digits}f}" for r in chosen)
