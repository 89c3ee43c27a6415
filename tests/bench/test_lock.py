"""The env lock: what it hashes, and the drift it names."""

from __future__ import annotations

from agentrl.bench.lock import env_lock, lock_drift


def test_a_data_folder_is_hashed_file_by_file(tmp_path):
    folder = tmp_path / "evaluation_examples"
    (folder / "examples" / "os").mkdir(parents=True)
    task = folder / "examples" / "os" / "t1.json"
    task.write_text('{"id": "t1"}')
    first = env_lock("AgentRL/Letter-v0", {"tasks": str(folder)})
    assert set(first["data"]) == {"kwarg:tasks"}
    assert env_lock("AgentRL/Letter-v0", {"tasks": str(folder)})["data"] == first["data"]
    task.write_text('{"id": "t1", "fixed": true}')
    second = env_lock("AgentRL/Letter-v0", {"tasks": str(folder)})
    assert lock_drift(first, second) == [
        f"data kwarg:tasks: {first['data']['kwarg:tasks']} -> {second['data']['kwarg:tasks']}"
    ]


def test_the_lock_names_versions_agent_and_judges():
    lock = env_lock("AgentRL/Letter-v0", {}, {"name": "react", "temperature": 0.7})
    assert lock["libraries"]["gymnasium"] and lock["libraries"]["python"]
    other = env_lock("AgentRL/Letter-v0", {}, {"name": "react", "temperature": 1.0})
    assert lock_drift(lock, other) == []  # the agent is what a comparison varies
    assert lock_drift(lock, other, agent=True) == [f"agent of AgentRL/Letter-v0: {lock['agent']} -> {other['agent']}"]
    judged = env_lock("AgentRL/PatientConsult-v1", {"grader": "llm", "judge_backend": "openai",
                                                    "judge_backend_options": {"model": "qwen"}})
    assert judged["judges"]["judge"].startswith("llm openai:qwen prompt consult-judge-v2 sha256:")
    assert judged["judges"]["patient"] == "rule"


def test_a_result_without_a_lock_is_drift_against_one_with():
    lock = env_lock("AgentRL/Letter-v0")
    assert lock_drift(None, lock) == ["one of the runs has no env lock (recorded before locks existed)"]
    assert lock_drift(None, None) == []
