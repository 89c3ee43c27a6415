"""The Search-R1 action format: ``<search>query</search>`` and ``<answer>...</answer>``.

Only the agent's own turn is parsed (Search-R1 once parsed prompt + response, so the example answer
in its instructions counted as the model's answer). A closing tag may be missing at the very end
of a turn, because LLMs are stopped *at* ``</search>`` / ``</answer>`` (the env's stop sequences).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentrl.core.actions import Action, ActionSet, ParseError, function_schema

__all__ = ["SearchActionSet"]

_TAGS = re.compile(r"<(/?)(search|answer)>", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class SearchActionSet(ActionSet):
    """One search or one answer per turn.

    Args:
        max_query_chars: longer queries are refused with an error observation.

    >>> actions = SearchActionSet()
    >>> actions.parse("I need the founder. <search>Velmora Group founder</search>").content
    'Velmora Group founder'
    >>> actions.parse("<answer>Tarsen Ulbrick").kind  # stopped at </answer>
    'answer'
    >>> actions.parse("<search>a</search><search>b</search>").message
    'one <search> per turn; got 2'
    >>> actions.parse("<search>a <answer>b</answer></search>").message
    '<answer> cannot be nested inside <search>'
    """

    final_kinds = frozenset({"answer"})

    def __init__(self, max_query_chars: int = 500) -> None:
        self.max_query_chars = max_query_chars

    def describe(self) -> str:
        """The action format, for the prompt."""
        return (
            "Answer the question by reasoning and searching. To search the knowledge base, write "
            "<search> your query </search>; the top results come back between <information> and "
            "</information>. Search as often as you need (one search per turn). When you know the answer, "
            "write it between <answer> and </answer>, without detailed explanation, for example "
            "<answer> Beijing </answer>; that ends the episode."
        )

    def parse(self, text: str) -> Action | ParseError:
        """Parse one turn; never raises."""
        spans: list[tuple[str, int, int]] = []  # (tag, content start, content end)
        open_tag: tuple[str, int] | None = None
        for match in _TAGS.finditer(text):
            closing, name = bool(match.group(1)), match.group(2).lower()
            if not closing:
                if open_tag is not None:
                    return ParseError(f"<{name}> cannot be nested inside <{open_tag[0]}>", raw=text)
                open_tag = (name, match.end())
            elif open_tag is None or open_tag[0] != name:
                return ParseError(f"</{name}> closes nothing; write <{name}>...</{name}>", raw=text)
            else:
                spans.append((name, open_tag[1], match.start()))
                open_tag = None
        if open_tag is not None:  # runs to the end of the turn: the model was stopped at its closing tag
            spans.append((open_tag[0], open_tag[1], len(text)))
        if not spans:
            return ParseError(
                "no <search>...</search> and no <answer>...</answer> found; search with <search>query</search> "
                "or answer with <answer>...</answer>",
                raw=text,
            )
        answers = [span for span in spans if span[0] == "answer"]
        if not answers and len(spans) > 1:
            return ParseError(f"one <search> per turn; got {len(spans)}", raw=text)
        name, start, end = answers[-1] if answers else spans[0]
        content = text[start:end].strip()
        if not content:
            return ParseError(f"your <{name}> is empty", raw=text)
        if name == "answer":
            return Action("answer", content, raw=text)
        if len(content) > self.max_query_chars:
            return ParseError(
                f"your query is {len(content)} characters long; the limit is {self.max_query_chars}", raw=text
            )
        if _CONTROL.search(content):
            return ParseError("your query contains control or invalid characters; write plain text", raw=text)
        return Action("search", content, raw=text)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """``search`` and ``answer`` as OpenAI function schemas."""
        return [
            function_schema("search", "Search the knowledge base; returns the top passages.", query="a short query"),
            function_schema("answer", "Give the final short answer; ends the episode.", answer="a short answer"),
        ]

    def format_final(self, answer: str) -> str:
        """An answer turn."""
        return f"<answer>{answer}</answer>"

    def format_search(self, query: str) -> str:
        """A search turn."""
        return f"<search>{query}</search>"

    def malformed_examples(self) -> Sequence[str]:
        """Turns that must not parse."""
        return (
            "",
            "I think it is Paris.",
            "<search></search>",
            "<search>a <search>b</search></search>",
            "<answer>   </answer>",
            "<search>" + "x" * 2000 + "</search>",
            "<search>\x00\x01binary</search>",
        )
