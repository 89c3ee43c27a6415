"""``AgentRL/SQL-v0``: multi-turn text-to-SQL on real SQLite databases (after SkyRL-SQL, VerlTool VT-SQL)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from agentrl.core.actions import Action
from agentrl.core.choices import level_range
from agentrl.core.dataset import DatasetCard, NoTaskDataset
from agentrl.core.env import AgentEnv
from agentrl.core.task import Task
from agentrl.envs.sql.actions import SQLActionSet
from agentrl.envs.sql.tasks import DIFFICULTIES, EASY
from agentrl.envs.sql.verify import SQLVerifier
from agentrl.sandboxes.base import ExecutionResult

__all__ = ["EASY_INSTRUCTIONS", "SYSTEM_PROMPT", "SQLEnv"]

SYSTEM_PROMPT = (
    "You are an expert data analyst who answers questions by writing SQLite queries. Look at the schema, "
    "explore the data when unsure (values, spellings, NULLs), then submit one query whose result answers "
    "the question exactly: the right columns, in a sensible order, with no extra rows."
)


#: The easy tier's answer format, with a worked example (a small model copies the format of what it
#: reads; the example's table, ``cities``, is in no generated database, so copying it never scores).
EASY_INSTRUCTIONS = (
    "Answer with one SQLite query in <solution>...</solution>, for example "
    "<solution>SELECT name FROM cities</solution> for the names in a table cities."
)


class SQLEnv(AgentEnv):
    r"""Answer a question about a SQLite database by exploring it with queries, then submitting one.

    ## Description

    The observation gives the question and the database schema (CREATE statements plus a few sample
    rows per table, cut to a budget). The agent explores with ``<sql>...</sql>`` and sees the result
    table (at most 50 rows, columns named, truncation marked, errors verbatim) and the turns left;
    ``<solution>...</solution>`` submits the final query and ends the episode. Databases are
    generated (shop, school, hospital, airline, library schemas with foreign keys and thousands of
    rows) or read from the Spider / BIRD directory layouts.

    ## Action Space

    ``UnicodeText(max_action_chars)``; see :class:`~agentrl.envs.sql.actions.SQLActionSet`.

    ## Observation Space

    ``UnicodeText(max_observation_chars)``: the question and schema, then query results or errors.

    ## Rewards

    On submission 1.0 when the query's result matches the gold query's, else 0.0. Spider datasets use
    the official test-suite evaluator's rules (``DISTINCT`` removed unless ``keep_distinct``; raw values;
    multisets, row order only when the gold query has ``ORDER BY``; column permutations allowed; every
    ``.sqlite`` in ``database/<db_id>/``); BIRD datasets its ``set(pred) == set(gold)``; generated
    databases Spider's comparison with floats rounded to 6 decimals. With ``test_suite=n`` also on ``n``
    perturbed copies.
    ``info["reward_components"]`` has ``format``, ``executes`` and ``matches``. Other turns: 0.

    ## Starting State

    A question drawn with ``np_random`` (or ``options={"task_id": ...}`` / ``{"task_index": i}``), and a
    private read-only copy of its database.

    ## Episode End

    Terminated by a submission; truncated after ``max_turns`` turns.

    ## Arguments

    * ``schemas``, ``difficulty`` (0-5 or a range), ``db_seeds``: the generated question pool. ``0`` is the
      easy tier: one table and a column that the question names (``SELECT name FROM authors``,
      ``SELECT COUNT(*) FROM members``), so that a small model such as the embedded SmolLM2-135M scores
      above zero; its first observation shows only that table, then a worked example of the answer
      format (on a table no database has) in place of the exploration instructions (``<sql>`` still
      works). An env of easy questions alone (``difficulty=0``) also takes a reply without tags by the last
      SELECT in a fenced block (```sql ... ```), as chat models write SQL. The verifier is unchanged.
      The default range is ``(1, 3)``.
    * ``dataset``: a Spider or BIRD root directory instead; ``dataset_format`` ``"spider"``/``"bird"``,
      ``split`` (``"dev"``). The env is then a :class:`~agentrl.core.dataset.TaskDataset`:
      ``agentrl bench --all-tasks`` sweeps the split's questions in order, scored by EX (execution accuracy).
    * ``test_suite``: perturbed copies to also score on (default 0).
    * ``keep_distinct``, ``plug_value``: the official Spider evaluator's options (default off).
    * ``query_timeout_s`` (5 s), ``score_timeout_s`` (30 s), ``max_rows`` (50), ``sandbox_mode``
      (``"thread"``, or ``"process"`` so that a runaway native query cannot block the env's thread).
    * ``max_turns`` (6), ``schema_budget_chars`` (6000).

    ## Version History

    * v0: initial release. Spider/BIRD datasets are scored by the official evaluators' rules (before:
      Spider's comparison with rounded floats on ``<db_id>.sqlite`` only); generated tasks are unchanged.
      Later added the easy tier ``difficulty=0`` (the default range is unchanged).

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/SQL-v0", schemas=["shop"], difficulty=1)
    >>> observation, info = env.reset(seed=0)
    >>> "CREATE TABLE" in observation
    True
    >>> env.close()
    """

    metadata: dict[str, Any] = {**AgentEnv.metadata, "stop_sequences": ("</sql>", "</solution>")}

    def __init__(
        self,
        *,
        schemas: Sequence[str] | None = None,
        difficulty: int | tuple[int, int] = (1, 3),
        db_seeds: Sequence[int] = (0, 1, 2),
        dataset: str | os.PathLike[str] | None = None,
        dataset_format: Literal["spider", "bird"] = "spider",
        split: str = "dev",
        test_suite: int = 0,
        keep_distinct: bool = False,
        plug_value: bool = False,
        query_timeout_s: float = 5.0,
        score_timeout_s: float = 30.0,
        max_rows: int = 50,
        sandbox_mode: Literal["thread", "process"] = "thread",
        schema_budget_chars: int = 6000,
        max_turns: int = 6,
        max_observation_chars: int = 16_000,
        max_action_chars: int = 65_536,
        render_mode: str | None = None,
    ) -> None:
        # Only an env of easy questions alone reads fenced replies: a mixed range keeps one strict format.
        easy_only = dataset is None and level_range(difficulty, DIFFICULTIES) == (EASY, EASY)
        if dataset is not None:
            from agentrl.envs.sql.datasets import SpiderSource

            task_source: Any = SpiderSource(dataset, split=split, format=dataset_format)
        else:
            from agentrl.envs.sql.tasks import ProceduralSQLSource

            task_source = ProceduralSQLSource(schemas=schemas, difficulty=difficulty, db_seeds=db_seeds)
        self.schema_budget_chars = schema_budget_chars

        def sandbox_factory() -> Any:
            from agentrl.sandboxes.sqlite import SQLiteSandbox

            return SQLiteSandbox(timeout_s=query_timeout_s, max_rows=max_rows, mode=sandbox_mode)

        super().__init__(
            task_source=task_source,
            action_set=SQLActionSet(fenced_solutions=easy_only),
            verifier=SQLVerifier(test_suite=test_suite, timeout_s=score_timeout_s, keep_distinct=keep_distinct,
                                 plug_value=plug_value),
            sandbox_factory=sandbox_factory,
            max_turns=max_turns,
            max_observation_chars=max_observation_chars,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
            system_prompt=SYSTEM_PROMPT,
            render_result=self._render_query_result,
        )

    def dataset_card(self) -> DatasetCard:
        """The Spider/BIRD split's card: its question file, the files that decide the gold results, EX.

        Raises:
            NoTaskDataset: the env generates its questions (no ``dataset=``).
        """
        from agentrl.envs.sql.datasets import SpiderSource

        source = self.task_source
        if not isinstance(source, SpiderSource):
            raise NoTaskDataset(
                "AgentRL/SQL-v0 generates its questions, which have no end; to sweep a benchmark give its folder: "
                "--env-kwarg dataset=path/to/spider (dev.json, tables.json, database/<db_id>/<db_id>.sqlite) "
                "and --split NAME for another split than dev"
            )
        files = tuple(str(path.resolve()) for path in source.data_files())
        name = {"spider": "Spider", "bird": "BIRD"}[source.format]
        return DatasetCard(name=name, path=files[0], metric="EX (execution accuracy)", split=source.split, files=files)

    def reset_sandbox(self, sandbox: Any, task: Task, *, used: bool) -> None:
        """A fresh private copy of this task's database (one copy, whether or not the last episode ran queries)."""
        sandbox.load(task.metadata["db_path"])

    def initial_observation(self, task: Task) -> str:
        """The question, the schema with sample rows, and the action format."""
        from agentrl.envs.sql.databases import schema_text

        tables = task.metadata.get("schema_tables")  # the easy tier: only the table the question names
        schema = schema_text(task.metadata["db_path"], budget_chars=self.schema_budget_chars, tables=tables)
        if tables:  # the easy tier: a worked example of the answer instead of the exploration instructions
            return (
                f"Database schema (with a few sample rows):\n{schema}\n\n{EASY_INSTRUCTIONS}\n\n"
                f"Question: {task.prompt}\nAnswer:"
            )
        return (
            f"Database schema (with a few sample rows per table):\n{schema}\n\n"
            f"Question: {task.prompt}\n\n{self.action_set.describe()}\n(You have {self.max_turns} turns.)"
        )

    def _render_query_result(self, action: Action, result: ExecutionResult) -> str:
        turns_left = self.max_turns - self._turn
        body = result.output.rstrip("\n") if result.ok else f"[sql error] {result.error}"
        if result.ok and not body:
            body = "(no rows)"
        return f"{body}\n[{turns_left} turn{'s' if turns_left != 1 else ''} left]"
