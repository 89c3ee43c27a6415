"""agentrl bench --all-tasks: every task of a dataset once, in order, k attempts, resumable, the benchmark's score."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentrl.bench.sweep import SweepDataset, sweep_score
from agentrl.cli import main
from agentrl.core.dataset import DatasetCard, NoTaskDataset, TaskDataset
from agentrl.core.errors import TaskFormatError
from agentrl.envs.osworld.tasks.format import load_task_list
from tests.paths import FIXTURES as FIXTURES_DIR
from tests.paths import OSWORLD_FIXTURES

FIXTURES = FIXTURES_DIR
OSWORLD_ENV = OSWORLD_FIXTURES / "env"
GSM8K_ANSWERS = [14, 7, 1250, 36, 9]


def _gsm8k(tmp_path: Path) -> Path:
    """A GSM8K-format file: ``question`` and ``answer`` ending in ``#### N`` (one with a thousands separator)."""
    rows = [
        {"question": "Ann has 9 pens and buys 5 more. How many pens does she have?", "answer": "9 + 5 = 14\n#### 14"},
        {"question": "A box of 21 eggs is shared by 3 cooks. How many eggs each?", "answer": "21 / 3 = 7\n#### 7"},
        {"question": "A car costs 250 a day. What do 5 days cost?",
         "answer": "250 * 5 = <<250*5=1250>>1250\n#### 1,250"},
        {"question": "How many eggs are in 3 dozen?", "answer": "3 * 12 = 36\n#### 36"},
        {"question": "Tom is 4 and Sue is 5 years older. How old is Sue?", "answer": "4 + 5 = 9\n#### 9"},
    ]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _spider(tmp_path: Path) -> Path:
    """A Spider-layout folder: dev.json, tables.json, database/<db_id>/<db_id>.sqlite (two databases)."""
    root = tmp_path / "spider"
    tables = {"pets": ("CREATE TABLE pet (name TEXT, age INT)", [("rex", 3), ("tom", 5), ("fifi", 2)]),
              "shop": ("CREATE TABLE item (name TEXT, price REAL)", [("pen", 2.5), ("ink", 4.0)])}
    for db_id, (create, rows) in tables.items():
        (root / "database" / db_id).mkdir(parents=True)
        with sqlite3.connect(root / "database" / db_id / f"{db_id}.sqlite") as db:
            db.execute(create)
            db.executemany(f"INSERT INTO {create.split()[2]} VALUES (?, ?)", rows)
    (root / "tables.json").write_text("[]")
    questions = [
        {"db_id": "pets", "question": "How many pets are there?", "query": "SELECT count(*) FROM pet"},
        {"db_id": "shop", "question": "List the item names.", "query": "SELECT name FROM item"},
        {"db_id": "pets", "question": "Which pet is the oldest?",
         "query": "SELECT name FROM pet ORDER BY age DESC LIMIT 1"},
        {"db_id": "shop", "question": "What is the highest price?", "query": "SELECT max(price) FROM item"},
    ]
    (root / "dev.json").write_text(json.dumps(questions))
    return root


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def _score(out: Path) -> dict[str, Any]:
    sweeps = json.loads((out / "score.json").read_text())["sweeps"]
    assert len(sweeps) == 1
    return sweeps[0]


def _bench(out: Path, *args: str) -> list[str]:
    return ["bench", "--agent", "oracle", "--all-tasks", "--out", str(out), "--no-progress", "--no-system-check",
            *args]


# -- GSM8K (TIRMath) --------------------------------------------------------------------------------
def test_gsm8k_oracle_runs_every_task_once_in_order_and_scores_accuracy_one(tmp_path, capsys):
    data, out = _gsm8k(tmp_path), tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/TIRMath-v0", "--env-kwarg", f"dataset={data}", "--k", "2")
    assert main(argv) == 0
    printed = capsys.readouterr().out
    ids = [f"test/{i}" for i in range(5)]
    records = _records(out)
    assert [(r["task_id"], r["attempt"]) for r in records] == [(t, a) for t in ids for a in (0, 1)]
    assert [r["episode"] for r in records[::2]] == list(range(5))
    assert all(r["reward"] == 1.0 and r["success"] for r in records)
    # every attempt sees the answer of its own task: the oracle's boxed answer is the file's gold
    assert [r["trajectory"][1]["text"] for r in records[::2]] == [
        f"The answer is \\boxed{{{n}}}." for n in GSM8K_ANSWERS]
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    score = _score(out)
    assert score["score"] == 1.0 and score["metric"] == "accuracy" and score["complete"]
    assert score["per_attempt"] == [1.0, 1.0] and score["pass_at_k"] == {"1": 1.0, "2": 1.0}
    assert (score["episodes"], score["expected_episodes"], score["tasks_run"]) == (10, 10, 5)
    assert score["dataset"]["path"] == str(data.resolve()) and score["dataset"]["sha256"] == sha
    assert score["dataset"]["name"] == "GSM8K" and score["dataset"]["tasks"] == 5
    assert "GSM8K accuracy (AgentRL/TIRMath-v0, oracle): 1.000 over 5 tasks x k=2" in printed
    assert f"dataset: {data.resolve()} (sha256 {sha})" in printed
    run = json.loads((out / "run.json").read_text())
    assert run["all_tasks"] is True and run["datasets"]["AgentRL/TIRMath-v0"]["sha256"] == sha


def test_gsm8k_random_agent_scores_zero(tmp_path, capsys):
    data, out = _gsm8k(tmp_path), tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/TIRMath-v0", "--env-kwarg", f"dataset={data}", "--env-kwarg", "max_turns=2")
    argv[argv.index("oracle")] = "random"
    assert main(argv) == 0
    assert "GSM8K accuracy (AgentRL/TIRMath-v0, random): 0.000 over 5 tasks x k=1" in capsys.readouterr().out
    assert [r["task_id"] for r in _records(out)] == [f"test/{i}" for i in range(5)]
    assert _score(out)["score"] == 0.0 and _score(out)["complete"]


# -- Spider ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent, expected", [("oracle", 1.0), ("random", 0.0)])
def test_spider_folder_sweep_scores_execution_accuracy(tmp_path, capsys, agent, expected):
    root, out = _spider(tmp_path), tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/SQL-v0", "--env-kwarg", f"dataset={root}", "--split", "dev",
                  "--env-kwarg", "max_turns=2")
    argv[argv.index("oracle")] = agent
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert [r["task_id"] for r in _records(out)] == [f"spider/dev/{i}" for i in range(4)]
    score = _score(out)
    assert score["score"] == expected and score["metric"] == "EX (execution accuracy)" and score["complete"]
    dev = (root / "dev.json").resolve()
    assert score["dataset"]["path"] == str(dev) and score["dataset"]["split"] == "dev"
    assert score["dataset"]["sha256"] == hashlib.sha256(dev.read_bytes()).hexdigest()
    files = [Path(f["path"]).relative_to(root.resolve()).as_posix() for f in score["dataset"]["files"]]
    assert files == ["dev.json", "tables.json", "database/pets/pets.sqlite", "database/shop/shop.sqlite"]
    assert f"Spider dev EX (execution accuracy) (AgentRL/SQL-v0, {agent}): {expected:.3f} over 4 tasks" in printed


# -- resume ----------------------------------------------------------------------------------------
def test_rerun_skips_finished_pairs_and_runs_no_task_twice(tmp_path, capsys):
    data, out = _gsm8k(tmp_path), tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/TIRMath-v0", "--env-kwarg", f"dataset={data}", "--k", "2")
    assert main(argv) == 0
    path = out / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]))  # an interrupted run: 3 of 10 (task, attempt) pairs finished
    capsys.readouterr()
    assert main(argv) == 0
    assert "3 of 10 episodes already done; running 7" in capsys.readouterr().out
    after = path.read_text().splitlines(keepends=True)
    assert after[:3] == lines[:3]  # the finished pairs are kept as they were, not run again
    pairs = [(r["task_id"], r["attempt"]) for r in _records(out)]
    assert len(pairs) == 10 == len(set(pairs))
    assert _score(out)["score"] == 1.0 and _score(out)["complete"]
    assert main(argv) == 0  # the identical command again: nothing to run
    assert "all 10 episodes already done; nothing to run" in capsys.readouterr().out
    assert path.read_text().splitlines(keepends=True) == after


def test_incomplete_sweep_says_so_and_a_changed_dataset_starts_afresh(tmp_path, capsys):
    data, out = _gsm8k(tmp_path), tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/TIRMath-v0", "--env-kwarg", f"dataset={data}")
    assert main(argv) == 0
    first = {r["key"] for r in _records(out)}
    data.write_text(data.read_text().replace("Ann has 9 pens", "Ann has 9 red pens"))
    capsys.readouterr()
    assert main(argv) == 0
    assert "sweeping 5 episodes" in capsys.readouterr().out  # new content, new keys: none is reused
    assert len({r["key"] for r in _records(out)} - first) == 5
    assert _score(out)["dataset"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()


# -- errors ----------------------------------------------------------------------------------------
def test_env_without_a_dataset_names_the_fix_and_the_envs_that_sweep(tmp_path, capsys):
    assert main(_bench(tmp_path, "--env", "AgentRL/TIRMath-v0")) == 2
    err = capsys.readouterr().err
    assert "--env-kwarg dataset=" in err and "--all-tasks supports: " in err and "AgentRL/SQL-v0" in err
    assert main(_bench(tmp_path, "--env", "AgentRL/TIRMath-v0", "--split", "test")) == 2
    assert "has no named splits" in capsys.readouterr().err
    data = _gsm8k(tmp_path)
    common = ["--env", "AgentRL/TIRMath-v0", "--env-kwarg", f"dataset={data}"]
    assert main(_bench(tmp_path, *common, "--episodes", "3")) == 2
    assert "drop --episodes" in capsys.readouterr().err
    assert main(_bench(tmp_path, *common, "--seeds", "0", "1")) == 2
    assert "give one base seed" in capsys.readouterr().err
    assert main(_bench(tmp_path, "--env", "AgentRL/SQL-v0", "--env-kwarg", f"dataset={_spider(tmp_path)}",
                       "--split", "train")) == 2
    assert "train.json" in capsys.readouterr().err
    assert not (tmp_path / "results.jsonl").exists()


# -- the protocol on the other envs -----------------------------------------------------------------
def test_consult_cases_file_sweeps_with_the_healthbench_score(tmp_path, capsys):
    cases, out = FIXTURES / "consult" / "agentclinic_sample.jsonl", tmp_path / "out"
    argv = _bench(out, "--env", "AgentRL/PatientConsult-v1", "--env-kwarg", f"cases={cases}",
                  "--env-kwarg", "semantic=false")
    assert main(argv) == 0
    assert "HealthBench score (AgentRL/PatientConsult-v1, oracle): 1.000 over 3 tasks" in capsys.readouterr().out
    score = _score(out)
    assert score["score_from"] == "healthbench_score" and score["dataset"]["path"] == str(cases.resolve())
    assert [r["task_id"] for r in _records(out)] == [f"agentclinic/{i}" for i in (1, 2, 3)]


def test_search_and_generated_envs_say_whether_they_can_be_swept():
    import gymnasium as gym

    import agentrl  # noqa: F401

    mini = FIXTURES / "flashrag_mini"
    env = gym.make("AgentRL/Search-v0", dataset=str(mini / "test.jsonl"), corpus=str(mini / "corpus.jsonl"))
    base = env.unwrapped
    assert isinstance(base, TaskDataset)
    card = base.dataset_card()
    assert (card.name, card.metric, card.files) == ("FlashRAG QA", "EM", (str((mini / "test.jsonl").resolve()),
                                                                           str((mini / "corpus.jsonl").resolve())))
    ids = base.task_ids()
    assert len(ids) == 4 and env.reset(seed=0, options={"task_id": ids[2]})[1]["task_id"] == ids[2]
    env.close()
    for env_id in ("AgentRL/Search-v0", "AgentRL/PatientConsult-v1", "AgentRL/SQL-v0"):
        generated = gym.make(env_id, **({"semantic": False} if "Consult" in env_id else {}))
        with pytest.raises(NoTaskDataset, match="--env-kwarg"):
            generated.unwrapped.dataset_card()
        generated.close()


def test_osworld_task_list_loads_in_list_order(tmp_path):
    root = tmp_path / "evaluation_examples"
    source = json.loads((OSWORLD_ENV / "t-echo.json").read_text())
    listing = {"os": ["b-task", "a-task"], "multi_apps": ["c-task"]}
    for domain, ids in listing.items():
        (root / "examples" / domain).mkdir(parents=True)
        for task_id in ids:
            (root / "examples" / domain / f"{task_id}.json").write_text(json.dumps({**source, "id": task_id}))
    (root / "test_small.json").write_text(json.dumps(listing))
    assert [t.id for t in load_task_list(root, "test_small")] == ["b-task", "a-task", "c-task"]
    with pytest.raises(TaskFormatError, match="task lists there: test_small"):
        load_task_list(root, "test_all")
    (root / "test_dup.json").write_text(json.dumps({"os": ["a-task"], "multi_apps": ["a-task"]}))
    with pytest.raises(TaskFormatError, match="listed under 'os' and 'multi_apps'"):
        load_task_list(root, "test_dup")
    shutil.rmtree(root / "examples" / "multi_apps")
    with pytest.raises(TaskFormatError, match="has no file"):
        load_task_list(root, "test_small")


def test_score_counts_errors_as_failures_and_marks_an_incomplete_sweep():
    card = DatasetCard(name="HB", path="hb.jsonl", metric="HealthBench score", score_from="healthbench_score")
    dataset = SweepDataset("E", card, ("a", "b", "c"), (("hb.jsonl", "0" * 64),))
    episodes = [("a", 0, {"reward_components": {"healthbench_score": 0.9}}),
                ("b", 0, {"error": "agent timed out"}),
                ("c", 0, None)]
    score = sweep_score(dataset, episodes, k=1)
    assert score["score"] == pytest.approx(0.45) and score["errors"] == 1
    assert (score["complete"], score["episodes"], score["expected_episodes"]) == (False, 2, 3)
    assert sweep_score(dataset, [("a", 0, None)], k=1)["score"] is None


@pytest.mark.timeout(300)
@pytest.mark.skipif(not (shutil.which("Xvfb") and shutil.which("xterm")),
                    reason="needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)")
def test_osworld_task_list_sweep_on_a_real_desktop(tmp_path, capsys):
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    root, out = tmp_path / "evaluation_examples", tmp_path / "out"
    (root / "examples" / "os").mkdir(parents=True)
    for name in ("t-echo.json", "t-infeasible.json"):
        shutil.copy(OSWORLD_ENV / name, root / "examples" / "os" / name)
    shutil.copytree(OSWORLD_ENV / "files", root / "examples" / "os" / "files")
    (root / "test_small.json").write_text(json.dumps({"os": ["t-infeasible", "t-echo"]}))
    argv = _bench(out, "--env", "AgentRL/OSWorld-v0", "--env-kwarg", f"tasks={root}", "--split", "test_small")
    assert main(argv) == 0
    assert "OSWorld test_small success rate (AgentRL/OSWorld-v0, oracle): 1.000 over 2 tasks" in capsys.readouterr().out
    assert [r["task_id"] for r in _records(out)] == ["t-infeasible", "t-echo"]
    score = _score(out)
    assert score["dataset"]["path"] == str((root / "test_small.json").resolve()) and score["complete"]
    assert len(score["dataset"]["files"]) == 3  # the list and its two task files
