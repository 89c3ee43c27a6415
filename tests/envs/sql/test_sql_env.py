"""AgentRL/SQL-v0 end to end: generated databases, the SQLite sandbox, Spider scoring."""

from __future__ import annotations

import hashlib
from pathlib import Path

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from agentrl.envs.sql.env import EASY_INSTRUCTIONS
from agentrl.testing import check_domain
from tests.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR


def sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def env():
    environment = gym.make("AgentRL/SQL-v0", query_timeout_s=2.0)
    yield environment
    environment.close()


def test_check_domain_with_the_test_suite():
    check_domain("AgentRL/SQL-v0", seeds=(0, 1), make_kwargs={"test_suite": 2})


def test_observation_has_schema_question_and_format(env):
    observation, info = env.reset(seed=3)
    assert "CREATE TABLE" in observation and "Question:" in observation and "<solution>" in observation
    assert info["task_id"].startswith("sql/")
    assert env.metadata["stop_sequences"] == ("</sql>", "</solution>")


def test_easy_tier_shows_only_the_named_table_and_passes_check_domain():
    check_domain("AgentRL/SQL-v0", seeds=(0, 1), make_kwargs={"difficulty": 0})
    easy = gym.make("AgentRL/SQL-v0", difficulty=0)
    try:
        for seed in range(4):
            observation, info = easy.reset(seed=seed)
            table = easy.unwrapped.task.answer.rsplit(" FROM ", 1)[1]
            assert info["task_id"].split("/")[3] == "d0"
            assert observation.count("CREATE TABLE") == 1 and f"CREATE TABLE {table} (" in observation
            assert EASY_INSTRUCTIONS in observation and "<sql>" not in observation
            assert observation.endswith(f"Question: {easy.unwrapped.task.prompt}\nAnswer:")
            if seed == 0:  # copying the example never scores: no database has a table 'cities'
                _, reward, terminated, _, _ = easy.step("<solution>SELECT name FROM cities</solution>")
                assert reward == 0.0 and terminated
                easy.reset(seed=seed)
            _, reward, terminated, _, _ = easy.step(easy.unwrapped.task.oracle_actions[0])
            assert reward == 1.0 and terminated
    finally:
        easy.close()


def test_easy_tier_alone_takes_a_fenced_select_and_other_ranges_do_not():
    """difficulty=0 submits the last SELECT of a ```sql fence (how chat models write SQL); (0, 1) stays strict."""
    easy = gym.make("AgentRL/SQL-v0", difficulty=0)
    mixed = gym.make("AgentRL/SQL-v0", difficulty=(0, 1))
    try:
        easy.reset(seed=2)
        gold = easy.unwrapped.task.answer
        reply = f"The answer is:\n\n```sql\nSELECT 1\n```\nor better:\n```\n{gold};\n```\nThis query lists them."
        _, reward, terminated, _, _ = easy.step(reply)
        assert terminated and reward == 1.0
        easy.reset(seed=2)
        _, _, terminated, _, info = easy.step("```python\nprint(1)\n```")  # not a query: still a format error
        assert not terminated and "action_error" in info
        mixed.reset(seed=2)
        _, _, terminated, _, info = mixed.step(f"```sql\n{gold}\n```")
        assert not terminated and "action_error" in info
    finally:
        easy.close()
        mixed.close()


def test_exploration_shows_rows_and_turns_left(env):
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step("<sql>SELECT 1 AS one, 'x' AS two</sql>")
    assert "one" in observation and "two" in observation and "turns left" in observation
    assert not terminated and reward == 0.0 and info["tool_error"] is None
    observation, *_, info = env.step("<sql>SELECT * FROM no_such_table</sql>")
    assert "no such table" in observation and "no such table" in info["tool_error"]


def test_oracle_scores_one_and_wrong_query_zero(env):
    for seed in range(5):
        env.reset(seed=seed)
        task = env.unwrapped.task
        _, reward, terminated, _, info = env.step(task.oracle_actions[0])
        assert terminated and reward == 1.0, task.id
        assert info["reward_components"]["matches"] == 1.0
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("<solution>SELECT 12345</solution>")
    assert terminated and reward == 0.0 and info["reward_components"]["executes"] == 1.0


ATTACKS = [
    "<sql>DROP TABLE {table}</sql>",
    "<sql>DELETE FROM {table}</sql>",
    "<sql>INSERT INTO {table} DEFAULT VALUES</sql>",
    "<sql>PRAGMA writable_schema = 1</sql>",
    "<sql>ATTACH DATABASE '/tmp/agentrl-attach.db' AS other</sql>",
    "<sql>SELECT load_extension('/tmp/nope')</sql>",
    "<sql>VACUUM INTO '/tmp/agentrl-vacuum.db'</sql>",
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>",
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000) SELECT x FROM c</sql>",
    "<sql>SELECT * FROM {table} a, {table} b, {table} c, {table} d</sql>",
    "<sql>SELECT 1; DROP TABLE {table}</sql>",
    "<sql>this is not sql</sql>",
    "<sql>SELECT '\ud800\x00'</sql>",
    "<solution>DROP TABLE {table}</solution>",
]


@pytest.mark.parametrize("attack", ATTACKS, ids=range(len(ATTACKS)))
def test_writes_and_escapes_leave_the_database_unchanged(env, attack):
    env.reset(seed=0)
    task = env.unwrapped.task
    database = task.metadata["db_path"]
    before = sha256(database)
    table = env.unwrapped.sandbox.query("SELECT name FROM sqlite_master WHERE type = 'table' LIMIT 1", 5).rows[0][0]
    escapes = [Path("/tmp/agentrl-attach.db"), Path("/tmp/agentrl-vacuum.db")]
    for path in escapes:
        path.unlink(missing_ok=True)
    observation, reward, terminated, _, info = env.step(attack.format(table=table))
    assert isinstance(observation, str) and reward == 0.0
    assert sha256(database) == before
    assert not any(path.exists() for path in escapes)
    if not terminated:
        assert info["tool_error"] or info["action_error"], observation
        observation, *_ = env.step(f"<sql>SELECT count(*) AS n FROM {table}</sql>")
        assert "n" in observation and "[sql error]" not in observation
    env.reset(seed=0)
    _, reward, *_ = env.step(task.oracle_actions[0])
    assert reward == 1.0


@pytest.mark.parametrize("fmt", ["spider", "bird"])
def test_official_dataset_layouts(fmt):
    root = FIXTURES / f"{fmt}_mini"
    env = gym.make("AgentRL/SQL-v0", dataset=str(root), dataset_format=fmt)
    source = env.unwrapped.task_source
    for index in range(len(source)):
        env.reset(options={"task_index": index})
        _, reward, terminated, _, _ = env.step(env.unwrapped.task.oracle_actions[0])
        assert terminated and reward == 1.0
    env.close()


def test_process_sandbox_mode():
    env = gym.make("AgentRL/SQL-v0", sandbox_mode="process", query_timeout_s=1.0)
    env.reset(seed=1)
    observation, *_ = env.step(
        "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
    )
    assert "[sql error]" in observation
    _, reward, *_ = env.step(env.unwrapped.task.oracle_actions[0])
    assert reward == 1.0
    env.close()


def test_oracle_scores_one_on_every_schema_and_difficulty_with_a_test_suite():
    from agentrl.envs.sql.databases import SCHEMAS
    from agentrl.envs.sql.tasks import generate_question
    from agentrl.envs.sql.verify import SQLVerifier

    verifier = SQLVerifier(test_suite=2)
    for schema in SCHEMAS:
        for difficulty in range(0, 6):  # 0: the easy tier
            for seed in range(3):
                task = generate_question(schema, 0, difficulty, seed)
                score = verifier(task, task.metadata["gold_sql"], {})
                assert score.value == 1.0, (task.id, score)
