"""OpenAI-style function calling over a local chat model, in the Hermes/Qwen format.

The request's ``tools`` and the conversation's past tool calls are rendered by the model's own chat template when
it knows tools (Qwen2.5's does: ``{% if tools %}``); for a template that does not, they are written as Hermes
prompts write them, which is what Qwen's template produces too: the tool signatures in a ``<tools>`` block of the
system message, each past call as ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` in the assistant's
text, each result as ``<tool_response>...</tool_response>`` in a user turn. The model's reply is parsed back the
same way: every ``<tool_call>`` block becomes one of OpenAI's ``tool_calls``, the text around them the content.

>>> content, calls = parse_tool_calls('Let me add.<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>')
>>> content, calls[0]["function"]
('Let me add.', {'name': 'add', 'arguments': '{"a": 1}'})
>>> parse_tool_calls("<tool_call>{name: add}</tool_call>")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
agentrl.llm.tool_calls.ToolCallError: tool call 0 is not JSON ({name: add}): Expecting property name ...
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentrl.core.errors import AgentRLError

__all__ = ["ToolCallError", "needs_tool_rendering", "parse_tool_calls", "render_tool_chat"]

_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


class ToolCallError(AgentRLError, ValueError):
    """The model wrote a ``<tool_call>`` block that is not a JSON object with a ``name`` and ``arguments``."""


def needs_tool_rendering(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> bool:
    """Whether a request uses function calling: ``tools`` given, or tool calls or results in the history."""
    return bool(tools) or any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip() else {}
    if not isinstance(raw, dict):
        raise ValueError(f"tool call arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def _native_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The history for a template that renders tools itself (arguments as objects, as HF templates expect)."""
    native = []
    for message in messages:
        entry = {k: v for k, v in message.items() if v is not None}
        entry.setdefault("content", "")
        if message.get("tool_calls"):
            entry["tool_calls"] = [
                {
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": _arguments(c["function"].get("arguments")),
                    },
                }
                for c in message["tool_calls"]
            ]
        native.append(entry)
    return native


def _hermes_messages(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> list[dict[str, str]]:
    """The history written out in Hermes's text format, for a template that knows only role and content."""
    out: list[dict[str, str]] = []
    if tools:
        signatures = "\n".join(json.dumps(tool, sort_keys=True) for tool in tools)
        instructions = (
            "You may call one or more functions to assist with the user query.\n\n"
            f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{signatures}\n"
            "</tools>\n\nFor each function call, return a json object with function name and arguments within "
            '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}'
            "\n</tool_call>"
        )
        if messages and messages[0].get("role") == "system":
            out.append(
                {"role": "system", "content": f"{messages[0].get('content') or ''}\n\n# Tools\n\n{instructions}"}
            )
            messages = messages[1:]
        else:
            out.append({"role": "system", "content": f"# Tools\n\n{instructions}"})
    for message in messages:
        role, content = str(message.get("role")), str(message.get("content") or "")
        if message.get("tool_calls"):
            blocks = [
                "<tool_call>\n"
                + json.dumps({"name": c["function"]["name"], "arguments": _arguments(c["function"].get("arguments"))})
                + "\n</tool_call>"
                for c in message["tool_calls"]
            ]
            out.append({"role": "assistant", "content": "\n".join([content, *blocks]).strip("\n")})
        elif role == "tool":
            response = f"<tool_response>\n{content}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1]["content"].startswith("<tool_response>"):
                out[-1]["content"] += "\n" + response  # parallel results share one user turn, as Qwen's template
            else:
                out.append({"role": "user", "content": response})
        else:
            out.append({"role": role, "content": content})
    return out


def render_tool_chat(tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> str:
    """The prompt text (generation prompt included) of a conversation with tools (see the module docstring).

    Raises:
        ValueError: a past tool call whose arguments are not a JSON object.
    """
    template = str(getattr(tokenizer, "chat_template", "") or "")
    if "tools" in template and "tool_calls" in template:
        return str(
            tokenizer.apply_chat_template(
                _native_messages(messages), tools=list(tools or []) or None, add_generation_prompt=True, tokenize=False
            )
        )
    return str(
        tokenizer.apply_chat_template(_hermes_messages(messages, tools), add_generation_prompt=True, tokenize=False)
    )


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """A reply's content and its tool calls in OpenAI's shape (``arguments`` a JSON string).

    Raises:
        ToolCallError: a ``<tool_call>`` block that is not ``{"name": str, "arguments": object}``.
    """
    calls: list[dict[str, Any]] = []
    for number, match in enumerate(_CALL.finditer(text)):
        body = match.group(1).strip()
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"tool call {number} is not JSON ({body[:200]}): {exc.msg}") from None
        if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
            raise ToolCallError(f'tool call {number} needs {{"name": str, "arguments": object}}, got {body[:200]}')
        try:
            arguments = _arguments(parsed.get("arguments", {}))
        except (ValueError, json.JSONDecodeError) as exc:
            raise ToolCallError(f"tool call {number} ({parsed['name']}): {exc}") from None
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": parsed["name"], "arguments": json.dumps(arguments)},
            }
        )
    content = _CALL.sub("", text).strip() if calls else text
    return content, calls
