"""The smallest custom domain: a task list, an action set, a verifier and a sandbox plugged into ``AgentEnv``.

A text domain is five parts (README, "Add a domain"). Here each is a few lines, in one file:

* tasks: :data:`TASKS`, each with its gold answer and the oracle's actions (``ListTaskSource``);
* the action set: :class:`EchoActions` parses ``<echo>text</echo>`` (a tool call) and
  ``<answer>x</answer>`` (the final answer); anything else is a :class:`~agentrl.core.actions.ParseError`;
* the verifier: :func:`exact`, a pure function of the task and the answer;
* the sandbox: :class:`EchoSandbox` upper-cases the text it is given and runs nothing, so it needs no
  isolation; a domain that runs code or queries picks a backend from :mod:`agentrl.sandboxes` instead;
* the env: :func:`make_env` plugs them into :class:`~agentrl.core.env.AgentEnv`, which owns the turn
  loop, the budget, the info keys and the oracle.

Then :func:`register` gives it an id and :func:`~agentrl.testing.check_domain` runs the checks every
domain must pass. For a real domain, ``agentrl new-domain NAME`` writes the same parts as a package,
one file each, with a test. Run it::

    python examples/custom_domain.py --quick
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from agentrl.core import Action, ActionSet, AgentEnv, ListTaskSource, ParseError, Score, Task, register_domain
from agentrl.core.sandbox import ExecutionRequest, ExecutionResult

REQUIRES: list[str] = []
"""Optional packages this example needs (none beyond agentrl's core)."""

__all__ = ["TASKS", "EchoActions", "EchoSandbox", "exact", "make_env", "register"]


class EchoActions(ActionSet):
    """``<echo>text</echo>`` calls the echo tool; ``<answer>x</answer>`` is the final answer."""

    def describe(self) -> str:
        """The action format, for the prompt."""
        return "Write <echo>text</echo> to hear it back, or <answer>x</answer> to answer."

    def parse(self, text: str) -> Action | ParseError:
        """One turn -> an action, or a ``ParseError`` saying what to write; never raises."""
        if m := re.search(r"<answer>(.*?)</answer>", text, re.S):
            return Action("answer", m.group(1), raw=text)
        if m := re.search(r"<echo>(.*?)</echo>", text, re.S):
            return Action("echo", m.group(1), raw=text)
        return ParseError("expected <echo>...</echo> or <answer>...</answer>", raw=text)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """No function-calling schemas (agents write the tags)."""
        return []

    def format_final(self, answer: str) -> str:
        """The text of a final answer (``check_domain`` sends a garbage one)."""
        return f"<answer>{answer}</answer>"


class EchoSandbox:
    """The tool: echoes its input upper-cased and runs nothing (``"fail"`` fails, to show a tool error)."""

    isolation = "none (runs nothing: it echoes its input)"

    def __init__(self) -> None:
        self.resets = 0
        self.closed = 0

    def reset(self) -> None:
        """Clean state for the next episode (called after an episode that used the tool)."""
        self.resets += 1

    def execute(self, request: ExecutionRequest) -> ExecutionResult:
        """Run one tool call."""
        if request.code == "fail":
            return ExecutionResult(ok=False, output="", error="it failed")
        return ExecutionResult(ok=True, output=request.code.upper())

    def close(self) -> None:
        """Release everything (safe to call twice)."""
        self.closed += 1


def exact(task: Task, answer: str, state: Any) -> Score:
    """The verifier: 1 when the answer is the gold answer (spaces around it ignored), else 0.

    >>> exact(Task("echo/1", "Say 7.", "7"), " 7 ", {}).value, exact(Task("echo/1", "Say 7.", "7"), "8", {}).value
    (1.0, 0.0)
    """
    value = float(answer.strip() == task.answer)
    return Score(value, {"exact": value})


#: The tasks, each with its gold answer and the actions that solve it (the oracle).
TASKS = [
    Task(f"echo/{i}", f"Say {i * 7}.", str(i * 7), oracle_actions=(f"<answer>{i * 7}</answer>",)) for i in range(5)
]


def make_env(**kwargs: Any) -> AgentEnv:
    """The env: the parts above in ``AgentEnv`` (keyword arguments override them, e.g. ``max_turns=5``)."""
    options: dict[str, Any] = dict(
        task_source=ListTaskSource(TASKS), action_set=EchoActions(), verifier=exact, sandbox_factory=EchoSandbox,
        max_turns=3,
    )
    options.update(kwargs)
    return AgentEnv(**options)


def register() -> str:
    """Register ``AgentRL/CustomEcho-v0`` (``gym.make`` and ``agentrl check`` then find it); returns the id.

    A package does this in its ``__init__.py``, so that importing it registers the id.
    """
    return register_domain(
        "CustomEcho",
        f"{__name__}:make_env",
        description="The smallest custom domain: echo text with a tool, then answer.",
        tags=("text",),
    )


def main(argv: list[str] | None = None) -> int:
    """Register the domain, run ``check_domain`` on it, and play one episode with a tool call and the oracle."""
    import gymnasium as gym

    from agentrl.testing import check_domain

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="the CI run (this example is quick either way)")
    parser.parse_args(argv)

    env_id = register()
    check_domain(env_id, seeds=(0, 1, 2), log=print)

    env = gym.make(env_id, render_mode="ansi")
    env.reset(seed=0)
    base = env.unwrapped
    for action in ("<echo>hello</echo>", "no tags at all", *base.oracle_plan()):
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    print(f"\none episode of {env_id} (a tool call, a malformed turn, then the oracle's answer):\n")
    print(env.render())
    print(f"\nreward {reward:g}, done_reason {info['done_reason']!r}")
    env.close()
    return 0 if reward == 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
