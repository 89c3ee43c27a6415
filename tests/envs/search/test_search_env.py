"""AgentRL/Search-v0 end to end with the generated encyclopedia and the in-process BM25 index."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from agentrl.testing import check_domain
from tests.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR
KINDS = ("single", "bridge2", "comparison", "bridge3", "bridge4")


@pytest.fixture(scope="module")
def env():
    environment = gym.make("AgentRL/Search-v0")
    yield environment
    environment.close()


def test_check_domain():
    check_domain("AgentRL/Search-v0", seeds=(0, 1, 2))


def test_observation_and_information_block(env):
    observation, info = env.reset(seed=0)
    assert observation.startswith("Question: ") and "<answer>" in observation
    assert env.metadata["stop_sequences"] == ("</search>", "</answer>")
    observation, reward, terminated, truncated, info = env.step("<search>founded city river</search>")
    assert observation.startswith("<information>Doc 1 (Title: ") and "[3 searches left]" in observation
    assert observation.count("Doc ") == 3 and not terminated and not truncated and reward == 0.0
    assert info["tool_error"] is None and info["action_error"] is None


def test_the_example_in_the_instructions_never_counts_as_an_answer(env):
    observation, _ = env.reset(seed=0)
    assert "<answer> Beijing </answer>" in observation  # the example is in the prompt...
    _, reward, terminated, _, info = env.step("Let me think about what to search first.")
    assert not terminated and reward == 0.0 and info["action_error"]  # ...but only the agent's own text is parsed


@pytest.mark.parametrize("kind", KINDS)
def test_oracle_scores_one_on_every_question_kind(kind):
    environment = gym.make("AgentRL/Search-v0", kinds=[kind])
    for seed in range(4):
        environment.reset(seed=seed)
        task = environment.unwrapped.task
        for action in task.oracle_actions:
            _, reward, terminated, truncated, info = environment.step(action)
        assert terminated and not truncated and reward == 1.0, (task.id, task.oracle_actions)
        assert info["reward_components"]["em"] == 1.0
    environment.close()


def test_multi_hop_questions_need_more_than_the_first_retrieved_passage(env):
    retriever = env.unwrapped.retriever
    from agentrl.envs.search.verify import normalize_answer

    for kind in ("bridge2", "bridge3", "bridge4"):
        source = gym.make("AgentRL/Search-v0", kinds=[kind]).unwrapped.task_source
        for seed in range(6):
            task = source.get(f"search/{kind}/{seed}")
            first = retriever.search(task.prompt, 1)[0]
            answers = [normalize_answer(a) for a in task.metadata["answers"]]
            assert not any(a and a in normalize_answer(first.text) for a in answers), (task.id, first.title)
            wanted = set(task.metadata["supporting"])
            supporting = " ".join(normalize_answer(p.text) for p in env.unwrapped._passages_loader() if p.id in wanted)
            assert any(a in supporting for a in answers), task.id


def test_budget_and_bad_queries(env):
    env.reset(seed=1)
    bad = ["<search></search>", "<search>" + "q" * 5000 + "</search>", "<search>\x00\x07</search>",
           "<search>a</search> <search>b</search>" * 50, "<search>a <answer>b</search>"]
    for turn, text in enumerate(bad[:4], start=1):
        observation, reward, terminated, truncated, info = env.step(text)
        assert observation.startswith("[error]") and info["action_error"] and not terminated and not truncated
        assert reward == 0.0
        assert info["turn"] == turn
    observation, *_, truncated, info = env.step(bad[4])
    assert truncated and info["done_reason"] == "max_turns"
    strict = gym.make("AgentRL/Search-v0", max_searches=1, max_turns=4)
    strict.reset(seed=0)
    strict.step("<search>one</search>")
    observation, *_, info = strict.step("<search>two</search>")
    assert "search budget spent" in observation and info["tool_error"]
    strict.close()


def test_f1_reward_mode():
    environment = gym.make("AgentRL/Search-v0", reward_mode="f1", kinds=["bridge2"])
    environment.reset(seed=0)
    gold = environment.unwrapped.task.answer
    _, reward, *_, info = environment.step(f"<answer>{gold} and more words</answer>")
    assert 0.0 < reward < 1.0 and info["reward_components"]["em"] == 0.0
    environment.close()


def test_flashrag_files():
    environment = gym.make(
        "AgentRL/Search-v0",
        corpus=str(FIXTURES / "flashrag_mini" / "corpus.jsonl"),
        dataset=str(FIXTURES / "flashrag_mini" / "test.jsonl"),
    )
    source = environment.unwrapped.task_source
    for index in range(len(source)):
        environment.reset(options={"task_index": index})
        observation, *_ = environment.step("<search>the</search>")
        assert observation.startswith("<information>")
        _, reward, terminated, *_ = environment.step(environment.unwrapped.task.oracle_actions[-1])
        assert terminated and reward == 1.0
    environment.close()


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_32_envs_in_one_process_share_one_index():
    first = gym.make("AgentRL/Search-v0")
    first.reset(seed=0)
    first.step("<search>river</search>")  # builds (or loads) the index
    before = _rss_mb()
    envs = [gym.make("AgentRL/Search-v0") for _ in range(31)]
    for seed, environment in enumerate(envs):
        environment.reset(seed=seed)
        environment.step("<search>river</search>")
    grown = _rss_mb() - before
    assert all(environment.unwrapped.retriever is first.unwrapped.retriever for environment in envs)
    assert grown < 20, f"31 more envs grew the process by {grown:.1f} MB"
    for environment in [first, *envs]:
        environment.close()


def test_envs_share_an_index_through_the_retrieval_server(env):
    from agentrl.envs.search.server import create_app, start_server_thread

    env.reset(seed=2)
    local = env.unwrapped.retriever
    handle = start_server_thread(create_app(local, kind="bm25"))
    try:
        remote = gym.make("AgentRL/Search-v0", retriever_url=handle.url)
        remote.reset(seed=2)
        env.reset(seed=2)
        query = "<search>mayor river city</search>"
        assert remote.step(query)[0] == env.step(query)[0]
        remote.close()
    finally:
        handle.stop()


def test_a_failing_retrieval_server_is_a_tool_error():
    import socket

    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = gym.make("AgentRL/Search-v0", retriever_url=f"http://127.0.0.1:{port}")
    environment.reset(seed=0)
    observation, reward, terminated, truncated, info = environment.step("<search>anything</search>")
    assert observation.startswith("[tool error]") and info["tool_error"] and not terminated and not truncated
    assert reward == 0.0
    _, reward, terminated, *_ = environment.step(environment.unwrapped.task.oracle_actions[-1])
    assert terminated and reward == 1.0
    environment.close()


def test_serve_retriever_command_refuses_remote_hosts(capsys):
    from agentrl.cli import main

    assert main(["serve-retriever", "--host", "0.0.0.0", "--generated-seed", "0", "--n-entities", "100"]) == 2
    captured = capsys.readouterr()
    assert "allow-remote" in captured.out + captured.err
