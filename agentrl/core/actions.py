"""Action sets: how an agent's text turns into a structured action.

An :class:`ActionSet` is the contract between an LLM and an env (after BrowserGym's split of task and
action set): :meth:`ActionSet.describe` says in the prompt what the agent may write,
:meth:`ActionSet.parse` turns the agent's text into an :class:`Action` or a :class:`ParseError`
(never raises on the agent's text), and :meth:`ActionSet.tool_schemas` gives the same actions as
OpenAI-style function schemas for agents that use tool calling.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Action", "ActionSet", "ParseError", "function_schema"]


@dataclass(frozen=True)
class Action:
    """A parsed action.

    Attributes:
        kind: what to do, e.g. ``"code"``, ``"answer"``, ``"search"``.
        content: the payload (the code, the answer, the query).
        raw: the agent's full text for this turn.
        args: extra structured arguments (for tool calls with several parameters).
    """

    kind: str
    content: str
    raw: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ParseError:
    """The agent's text could not be parsed; ``message`` says what was expected and how to fix it.

    ``void`` marks a turn with no usable action at all (SimpleTIR's "void turn").
    """

    message: str
    raw: str = ""
    void: bool = True


def function_schema(name: str, description: str, **parameters: str) -> dict[str, Any]:
    """An OpenAI-style function schema with required string parameters (``name=description``).

    >>> schema = function_schema("search", "Search the knowledge base.", query="a short query")
    >>> schema["function"]["name"], schema["function"]["parameters"]["required"]
    ('search', ['query'])
    """
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string", "description": text} for key, text in parameters.items()},
                "required": list(parameters),
            },
        },
    }


class ActionSet(abc.ABC):
    """What an agent may do in an env, and how its text maps to actions.

    Subclasses set :attr:`final_kinds` (the action kinds that end the episode and go to the
    verifier) and implement the three methods below plus :meth:`format_final`.
    """

    #: action kinds that end the episode and are scored by the verifier
    final_kinds: frozenset[str] = frozenset({"answer"})

    @abc.abstractmethod
    def describe(self) -> str:
        """Instructions for the prompt: the action format, with an example."""

    @abc.abstractmethod
    def parse(self, text: str) -> Action | ParseError:
        """Parse one agent turn. Never raises on the agent's text."""

    @abc.abstractmethod
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The actions as OpenAI-style ``{"type": "function", "function": {...}}`` schemas."""

    @abc.abstractmethod
    def format_final(self, answer: str) -> str:
        """The text an agent would write to give ``answer`` as its final answer."""

    def malformed_examples(self) -> Sequence[str]:
        """Texts that must parse to a :class:`ParseError` (used by ``check_domain``)."""
        return ("",)
