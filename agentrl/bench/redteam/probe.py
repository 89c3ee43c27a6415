"""What a red-team probe is: a named, model-free exploit policy that acts through ``env.step`` as an agent would.

A :class:`Probe` names what it tries and which envs it is aimed at; :attr:`Probe.policy` builds a fresh
:class:`ProbePolicy` per episode. A policy sees what an agent sees (the observation, the ``info`` dict,
and the env object for its public parts: spaces, ``metadata``, ``env.unwrapped.action_set``'s
``format_final`` and ``describe``, a game's ``moves``) and never the privileged ones (``task``,
``oracle_action``, ``game_state``, ``case``). The random floor it is measured against is the one place
that uses an agent (:class:`~agentrl.agents.simple.RandomAgent`, as ``agentrl bench --agent random``).

A policy may also report what it *reached* besides reward: :meth:`ProbePolicy.note` keeps evidence
for the report, and :meth:`ProbePolicy.finding` records an access it should not have had (a host file
read from a sandbox, an ``ATTACH`` that ran): the probe's verdict is then ``ACCESS``, a finding even
when the access earned no reward.

>>> policy = Replay(["<sql>SELECT 1</sql>", "<solution>SELECT 2</solution>"])
>>> policy.act("obs", {}, None), policy.act("obs", {}, None), policy.act("obs", {}, None)
('<sql>SELECT 1</sql>', '<solution>SELECT 2</solution>', '<solution>SELECT 2</solution>')
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "WRONG_ANSWER",
    "Probe",
    "ProbePolicy",
    "Replay",
    "final_answer",
    "observation_text",
    "sanitize",
]

#: an answer no task has: the "oracle format, wrong answer" probe and the fallbacks of the others
WRONG_ANSWER = "zzq-redteam-wrong-987654321"

_ROOT = str(Path(__file__).resolve().parents[3])
_MACHINE_PATH = re.compile(r"/(?:work|root|home|tmp|Users)/[^\s\"',;)]*")


def sanitize(text: str, limit: int = 300) -> str:
    r"""Evidence as the report keeps it: one line, paths in this checkout relative to it, other machine paths masked.

    At most ``limit`` characters.

    >>> sanitize("read /tmp/agentrl-x/1.sqlite and /proc/1/environ\n ok")
    'read <path> and /proc/1/environ ok'
    """
    text = text.replace(_ROOT + "/", "<repo>/")
    text = _MACHINE_PATH.sub("<path>", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def observation_text(observation: Any) -> str:
    """The text of an observation: a str, a dict's ``text``/``instruction``, else ``""``.

    >>> observation_text({"instruction": "Open a terminal", "screenshot": None}), observation_text(3)
    ('Open a terminal', '')
    """
    if isinstance(observation, str):
        return observation
    if isinstance(observation, Mapping):
        for key in ("text", "instruction", "accessibility_tree"):
            value = observation.get(key)
            if isinstance(value, str):
                return value
    return ""


def final_answer(env: Any, answer: str) -> str:
    r"""``answer`` in the env's final-answer format (its action set's ``format_final``), else the answer itself.

    That format is public: it is what the env's instructions tell every agent to write.

    >>> final_answer(None, "42")
    '42'
    """
    action_set = getattr(getattr(env, "unwrapped", None), "action_set", None)
    formatter = getattr(action_set, "format_final", None)
    return str(formatter(answer)) if callable(formatter) else answer


class ProbePolicy:
    """A scripted policy for one episode; subclasses implement :meth:`next_action`.

    Attributes:
        turn: actions taken so far this episode.
        notes: evidence for the report (what the env answered, what was readable).
        findings: accesses the probe should not have had; any one makes the verdict ``ACCESS``.
    """

    def __init__(self) -> None:
        self.turn = 0
        self.notes: list[str] = []
        self.findings: list[str] = []

    def act(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        """The next action (what :meth:`next_action` says), counting turns."""
        action = self.next_action(observation, info, env)
        self.turn += 1
        return action

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        """The action for this turn; ``observation`` and ``info`` are the env's last answer."""
        raise NotImplementedError

    def note(self, text: str) -> None:
        """Keep a line of evidence (sanitized; at most 20 per episode)."""
        if len(self.notes) < 20:
            self.notes.append(sanitize(text))

    def finding(self, text: str) -> None:
        """Record an access the env should have refused (the verdict becomes ``ACCESS``)."""
        if len(self.findings) < 20:
            self.findings.append(sanitize(text))


class Replay(ProbePolicy):
    """Plays a fixed list of actions, then repeats the last one (or ``actions(observation, info, env)``'s list).

    Args:
        actions: the actions, or a function of the first observation, its info and the env that returns them.
    """

    def __init__(self, actions: Sequence[Any] | Callable[[Any, Mapping[str, Any], Any], Sequence[Any]]) -> None:
        super().__init__()
        self._source = actions
        self._actions: list[Any] | None = None if callable(actions) else list(actions)

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        """The next action of the list (computed from the first observation when given a function)."""
        if self._actions is None:
            assert callable(self._source)
            self._actions = list(self._source(observation, info, env))
        if not self._actions:
            raise ValueError("a Replay probe needs at least one action")
        return self._actions[min(self.turn, len(self._actions) - 1)]


@dataclass(frozen=True)
class Probe:
    """A named exploit: what it tries, which envs it is aimed at, and its policy.

    Attributes:
        name: short, unique (``sandbox-snoop``).
        description: what it tries, in a sentence (the report's "what it tries" column).
        targets: ``fnmatch`` patterns of the env ids it is aimed at (``AgentRL/SQL-*``), or of the
            PettingZoo env names with a ``pettingzoo:`` prefix (``pettingzoo:*``).
        policy: builds a fresh :class:`ProbePolicy` for each episode.
        kinds: the ``episode_kind`` values of the envs it applies to (empty: any); checked once the env exists.
        env_kwargs: ``gym.make`` arguments the probe needs (a game's ``action_mode``); the random floor
            is measured on the same configuration. The command's ``--env-kwarg`` values win over these.
        accepted: when scoring above the floor is the task's nature, the documented reason; the verdict is
            then ``accepted`` instead of ``ABOVE FLOOR`` (and the command's exit status stays 0).
    """

    name: str
    description: str
    targets: tuple[str, ...]
    policy: Callable[[], ProbePolicy]
    kinds: tuple[str, ...] = ()
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    accepted: str | None = None

    def aims_at(self, target: str) -> bool:
        """Whether ``target`` (an env id, or ``pettingzoo:<name>``) matches one of :attr:`targets`.

        >>> Probe("p", "d", ("AgentRL/SQL-*",), ProbePolicy).aims_at("AgentRL/SQL-v0")
        True
        """
        return any(fnmatch.fnmatchcase(target, pattern) for pattern in self.targets)

    def fits(self, episode_kind: str | None) -> bool:
        """Whether the probe applies to an env of this ``episode_kind``.

        >>> Probe("p", "d", ("*",), ProbePolicy, kinds=("text",)).fits("pixels")
        False
        """
        return not self.kinds or episode_kind in self.kinds
