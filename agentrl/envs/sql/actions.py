"""The SQL action format: ``<sql>...</sql>`` to explore, ``<solution>...</solution>`` to submit.

A closing tag may be missing at the very end of a turn: LLMs are usually stopped *at* ``</sql>`` /
``</solution>`` (the env's stop sequences), and the returned text then ends before the tag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentrl.core.actions import Action, ActionSet, ParseError, function_schema

__all__ = ["SQLActionSet"]

# A fenced block (```sql, ```sqlite or a bare ```) whose query starts with SELECT or WITH.
_FENCE = re.compile(r"```[ \t]*(?:sql|sqlite)?[ \t]*\n(\s*(?:SELECT|WITH)\b.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_TAG = {name: re.compile(rf"<{name}>(.*?)(?:</{name}>|\Z)", re.DOTALL | re.IGNORECASE) for name in ("sql", "solution")}


class SQLActionSet(ActionSet):
    r"""Exploration queries and the final query.

    >>> actions = SQLActionSet()
    >>> actions.parse("Let me look. <sql>SELECT count(*) FROM orders</sql>").content
    'SELECT count(*) FROM orders'
    >>> final = actions.parse("<solution>SELECT name FROM customers")  # stopped at </solution>
    >>> final.kind, final.content
    ('answer', 'SELECT name FROM customers')
    >>> actions.parse("SELECT 1").message[:30]
    'no <sql>...</sql> query and no'
    >>> SQLActionSet(fenced_solutions=True).parse("Here:\n```sql\nSELECT name FROM t\n```").content
    'SELECT name FROM t'
    """

    final_kinds = frozenset({"answer"})

    def __init__(self, *, fenced_solutions: bool = False) -> None:
        """Make the action set.

        Args:
            fenced_solutions: a turn with neither tag submits the last SELECT in a fenced code block
                (```sql ... ```), as text-to-SQL evaluations of chat models read a reply. The easy tier uses
                it: a small model answers in a fence, not in ``<solution>``.
        """
        self.fenced_solutions = fenced_solutions

    def describe(self) -> str:
        """The action format, for the prompt."""
        return (
            "To explore the database, write one SQLite query in <sql>...</sql>; you will see its result "
            "(at most 50 rows) or its error. Only SELECT queries work: the database is read-only.\n"
            "When you are sure, submit your final query as <solution>...</solution>; that ends the episode. "
            "It is scored by running it: its result must equal the correct query's result."
        )

    def parse(self, text: str) -> Action | ParseError:
        """Parse one turn; a ``<solution>`` wins over ``<sql>``; never raises."""
        for name, kind in (("solution", "answer"), ("sql", "sql")):
            match = _TAG[name].search(text)
            if match is None:
                continue
            query = match.group(1).strip()
            if not query:
                return ParseError(f"your <{name}> is empty; put one SQLite query inside it", raw=text)
            return Action(kind, query, raw=text)
        fenced = _FENCE.findall(text) if self.fenced_solutions else []
        if fenced:
            return Action("answer", fenced[-1].strip(), raw=text)
        return ParseError(
            "no <sql>...</sql> query and no <solution>...</solution> found; explore with <sql>SELECT ...</sql> "
            "or submit with <solution>SELECT ...</solution>",
            raw=text,
        )

    def tool_schemas(self) -> list[dict[str, Any]]:
        """``run_sql`` and ``submit_solution`` as OpenAI function schemas."""
        query = "one SQLite SELECT statement"
        return [
            function_schema("run_sql", "Run a read-only SQLite query; see up to 50 rows of its result.", query=query),
            function_schema("submit_solution", "Submit the final SQL query; ends the episode.", query=query),
        ]

    def format_final(self, answer: str) -> str:
        """A submission turn."""
        return f"<solution>{answer}</solution>"

    def format_query(self, query: str) -> str:
        """An exploration turn."""
        return f"<sql>{query}</sql>"

    def malformed_examples(self) -> Sequence[str]:
        """Turns that must not parse."""
        return ("", "SELECT 1", "<sql>   </sql>", "<solution></solution>", "sql: SELECT * FROM t")
