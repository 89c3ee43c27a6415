"""Tests of ``debate_v0`` (MAPoRL-style debate) and ``cooperative_v0`` (MAGRPO-style solver/checker)."""

from __future__ import annotations

import pytest

from agentrl.envs.multiagent import cooperative_v0, debate_v0
from agentrl.envs.multiagent.debate import DebateOracle, debate_metrics, round_rewards, run_debate
from agentrl.testing import check_multiagent_env

pytestmark = pytest.mark.timeout(300)


# ---------------------------------------------------------------------- debate_v0


def test_debate_passes_the_multiagent_checks() -> None:
    """PettingZoo's parallel API and seed tests, determinism, bad actions, close twice."""
    check_multiagent_env(debate_v0.parallel_env)
    check_multiagent_env(lambda: debate_v0.parallel_env(num_agents=2, rounds=0, shared_reward=True))


def test_debate_env_factories_follow_pettingzoo() -> None:
    """PettingZoo's convention: ``env()`` and ``raw_env()`` are AEC, ``parallel_env()`` is parallel; one game."""
    from pettingzoo import AECEnv, ParallelEnv

    for factory in (debate_v0.env, debate_v0.raw_env):
        env = factory(num_agents=4, rounds=1)
        assert isinstance(env, AECEnv) and isinstance(env.unwrapped, debate_v0.DebateEnv)
        assert env.possible_agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
        env.close()
    env = debate_v0.parallel_env(num_agents=4, rounds=1)
    assert isinstance(env, ParallelEnv) and isinstance(env, debate_v0.DebateEnv)
    env.close()


def test_debate_aec_form_scores_like_the_parallel_form() -> None:
    """Agents acting one by one in ``env()`` earn what they earn acting at once in ``parallel_env()``."""
    kwargs = {"num_agents": 3, "rounds": 1}
    parallel = debate_v0.parallel_env(**kwargs)
    parallel.reset(seed=3)
    oracle = DebateOracle(parallel)
    wrong = {"agent_1": "\\boxed{-12345}"}  # one agent stays wrong: rewards differ by agent
    totals = dict.fromkeys(parallel.possible_agents, 0.0)
    while parallel.agents:
        actions = {a: wrong.get(a) or oracle.act(a, None, {}) for a in parallel.agents}
        _, rewards, _, _, _ = parallel.step(actions)
        for agent, reward in rewards.items():
            totals[agent] += reward
    aec = debate_v0.env(**kwargs)
    aec.reset(seed=3)
    aec_oracle = DebateOracle(aec.unwrapped)
    aec_totals = dict.fromkeys(aec.possible_agents, 0.0)
    for agent in aec.agent_iter():
        _, reward, terminated, truncated, _ = aec.last()
        aec_totals[agent] += reward
        aec.step(None if terminated or truncated else wrong.get(agent) or aec_oracle.act(agent, None, {}))
    assert aec_totals == pytest.approx(totals)
    assert totals["agent_0"] > totals["agent_1"]
    parallel.close()
    aec.close()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_debate_oracle_is_right_every_round(seed: int) -> None:
    """Oracle agents: accuracy 1.0 in every round, full consensus, no changes of mind."""
    env = debate_v0.parallel_env()
    env.reset(seed=seed)
    infos = run_debate(env, DebateOracle(env).act)
    metrics = infos["agent_0"]["metrics"]
    assert metrics["accuracy_per_round"] == [1.0, 1.0, 1.0]
    assert metrics["consensus"] == 1.0 and metrics["majority_correct"]
    assert metrics["wrong_to_right"] == metrics["right_to_wrong"] == 0
    assert all(info["metrics"] == metrics for info in infos.values())
    env.close()


@pytest.mark.parametrize("domain", ["sql", "search"])
def test_debate_oracle_in_other_domains(domain: str) -> None:
    """SQL (execution accuracy) and open-book search (exact match) score plain final answers too."""
    env = debate_v0.parallel_env(domain=domain, num_agents=2, rounds=1)
    observations, infos = env.reset(seed=0)
    assert ("CREATE TABLE" if domain == "sql" else "Passages:") in observations["agent_0"]
    assert env.domain.extract(infos["agent_0"]["legal_moves"][0])  # the example move is a well-formed answer
    metrics = run_debate(env, DebateOracle(env).act)["agent_1"]["metrics"]
    assert metrics["accuracy_per_round"] == [1.0, 1.0]
    env.reset(seed=0)
    wrong = run_debate(env, lambda a, o, i: env.domain.format_answer("zq-wrong"))["agent_0"]["metrics"]
    assert wrong["accuracy_per_round"] == [0.0, 0.0]
    env.close()


def test_debate_rewards_shaping_and_metrics_in_the_env() -> None:
    """agent_0 is right twice, agent_1 wrong then right: discount, bonus and wrong->right count."""
    env = debate_v0.parallel_env(num_agents=2, rounds=1, discount=0.5, bonus=0.5)
    env.reset(seed=3)
    gold = env.domain.format_answer(env.task.answer)
    _, rewards, terms, _, infos = env.step({"agent_0": f"Because... {gold}", "agent_1": "\\boxed{zq}"})
    assert rewards == {"agent_0": 0.5, "agent_1": 0.0}
    assert not any(terms.values()) and env.agents == ["agent_0", "agent_1"]
    assert infos["agent_1"]["correct"] == 0.0 and infos["agent_1"]["invalid_action"] is None
    _, rewards, terms, _, infos = env.step({"agent_0": gold, "agent_1": gold})
    assert rewards == {"agent_0": 1.5, "agent_1": 1.0}  # agent_0 was right when agent_1 was wrong
    assert all(terms.values()) and env.agents == []
    metrics = infos["agent_0"]["metrics"]
    assert metrics["accuracy_per_round"] == [0.5, 1.0]
    assert metrics["wrong_to_right"] == 1 and metrics["right_to_wrong"] == 0 and metrics["consensus"] == 1.0
    assert env.step({"agent_0": gold}) == ({}, {}, {}, {}, {})
    env.close()


def test_debate_shared_reward_is_the_mean() -> None:
    """``shared_reward=True`` gives every agent the round's mean reward."""
    env = debate_v0.parallel_env(num_agents=2, rounds=0, shared_reward=True)
    env.reset(seed=0)
    gold = env.domain.format_answer(env.task.answer)
    _, rewards, _, _, _ = env.step({"agent_0": gold, "agent_1": "\\boxed{zq}"})
    assert rewards == {"agent_0": 0.5, "agent_1": 0.5}
    env.close()


def test_round_rewards_formula() -> None:
    """The documented formula: discount ** (R - t) * (c + bonus * c * (1 - others' previous mean))."""
    assert round_rewards([1, 1, 0], None, round_index=0, rounds=2, discount=0.5, bonus=1.0) == [0.25, 0.25, 0.0]
    assert round_rewards([1, 1, 0], [1, 0, 0], round_index=2, rounds=2, discount=0.5, bonus=1.0) == [2.0, 1.5, 0.0]
    assert round_rewards([1, 0], [0, 1], round_index=1, rounds=1, discount=1.0, bonus=0.0) == [1.0, 0.0]
    assert round_rewards([1], [0], round_index=1, rounds=1, discount=0.5, bonus=9.0) == [1.0]  # nobody else
    assert round_rewards([1, 0], [0, 0], round_index=1, rounds=1, discount=1.0, bonus=0.5, shared=True) == [
        0.75,
        0.75,
    ]


def test_debate_metrics_counts_changes_and_consensus() -> None:
    """Changes of mind both ways, consensus over non-empty answers, empty answers never form a majority."""
    m = debate_metrics([["1", "2", ""], ["2", "1", "1"]], [[0, 1, 0], [1, 0, 0]])
    assert m["accuracy_per_round"] == [1 / 3, 1 / 3]
    assert m["wrong_to_right"] == 1 and m["right_to_wrong"] == 1
    assert m["majority_answer"] == "1" and m["consensus"] == pytest.approx(2 / 3) and not m["majority_correct"]
    empty = debate_metrics([["", ""]], [[0, 0]])
    assert empty["consensus"] == 0.0 and empty["majority_answer"] == ""


def test_debate_observations_show_others_responses_cut_to_the_cap() -> None:
    """Later rounds show the task and every agent's previous response (answer and reasoning), cut."""
    env = debate_v0.parallel_env(num_agents=3, rounds=1, max_response_chars=200)
    observations, _ = env.reset(seed=0)
    assert env.task.prompt in observations["agent_0"] and "\\boxed{...}" in observations["agent_0"]
    long_reasoning = "Because " + "blah " * 500 + "\\boxed{7}"
    observations, *_ = env.step(
        {"agent_0": "I reason that 2+2=4, so \\boxed{4}", "agent_1": long_reasoning, "agent_2": None}
    )
    seen = observations["agent_2"]
    assert env.task.prompt in seen
    assert "I reason that 2+2=4, so \\boxed{4}" in seen and "--- agent_2 (you) ---" in seen
    assert "[... cut]" in seen and "blah " * 100 not in seen
    assert "(no valid response)" in seen
    env.close()


@pytest.mark.parametrize("bad", [None, 123, "", "   ", b"bytes", "\x00" * 10, object()])
def test_debate_bad_actions_are_recorded_not_raised(bad: object) -> None:
    """A bad action is an empty, wrong answer with ``invalid_action`` in its info; the debate goes on."""
    env = debate_v0.parallel_env(num_agents=2, rounds=1)
    env.reset(seed=0)
    _, rewards, terms, _, infos = env.step({"agent_0": bad, "agent_1": "no answer here"})
    assert isinstance(infos["agent_0"]["invalid_action"], str) and infos["agent_0"]["answer"] == ""
    assert rewards["agent_0"] == 0.0 and not any(terms.values())
    assert infos["agent_1"]["invalid_action"] is None and "no final answer" in infos["agent_1"]["warning"]
    _, _, terms, _, infos = env.step({"agent_1": "\\boxed{1}"})  # agent_0 missing
    assert infos["agent_0"]["invalid_action"] == "no action was given for this agent"
    assert all(terms.values()) and infos["agent_0"]["metrics"]["invalid_actions"] == 2
    env.close()
    env.close()


def test_debate_rejects_bad_settings() -> None:
    """Bad constructor arguments fail early with a clear message."""
    with pytest.raises(ValueError, match="num_agents"):
        debate_v0.parallel_env(num_agents=0)
    with pytest.raises(ValueError, match="domain"):
        debate_v0.parallel_env(domain="chess")
    with pytest.raises(ValueError, match="discount"):
        debate_v0.parallel_env(discount=2.0)


def test_debate_runs_end_to_end_with_smollm2() -> None:
    """1 task x 2 agents x 1 round with the embedded SmolLM2 (CPU): it runs and reports metrics."""
    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.llm.base import GenerationConfig

    try:
        from agentrl.llm.smollm2 import smollm2_backend

        backend = smollm2_backend()
    except DependencyNotInstalled as exc:
        pytest.skip(str(exc))
    config = GenerationConfig(max_tokens=12, temperature=0.0)

    def policy(agent: str, observation: object, info: object) -> str:
        return backend.generate([{"role": "user", "content": str(observation)}], config).text

    env = debate_v0.parallel_env(num_agents=2, rounds=0, task_kwargs={"families": ["arithmetic"], "difficulty": 1})
    infos = run_debate(env, policy, seed=0, reset=True)
    metrics = infos["agent_0"]["metrics"]
    assert len(metrics["accuracy_per_round"]) == 1 and 0.0 <= metrics["consensus"] <= 1.0
    assert set(infos) == {"agent_0", "agent_1"}
    env.close()


# ---------------------------------------------------------------------- cooperative_v0


def _play(env: cooperative_v0.CooperativeEnv, moves: list[str]) -> None:
    """Play ``moves`` in turn order until they run out or the episode ends."""
    for move in moves:
        if not env.agents or env.terminations[env.agent_selection]:
            break
        env.step(move)


def test_cooperative_passes_the_multiagent_checks() -> None:
    """PettingZoo's AEC API and seed tests, determinism, bad actions, step_for, close twice."""
    check_multiagent_env(cooperative_v0.env)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_cooperative_oracle_solver_and_accepting_checker_earn_one(seed: int) -> None:
    """A correct proposal accepted: joint reward 1.0 for both."""
    env = cooperative_v0.env()
    env.reset(seed=seed)
    _play(env, [cooperative_v0.oracle_proposal(env.game.task), "[accept]"])
    assert env.rewards == {"solver": 1.0, "checker": 1.0}
    assert all(env.terminations.values())
    outcome = env.infos["checker"]["outcome"]
    assert outcome["joint_reward"] == 1.0 and outcome["accepted"] and outcome["reason"] == "accepted"
    env.close()


def test_cooperative_wrong_answer_rejected_then_corrected() -> None:
    """Wrong, rejected, corrected, accepted: 1.0; the checker's reason reaches the solver."""
    env = cooperative_v0.env()
    env.reset(seed=0)
    gold = env.game.task.answer
    _play(env, ["I guess \\boxed{zq}", "[reject] that is not a number"])
    assert env.agent_selection == "solver" and "that is not a number" in env.observe("solver")
    _play(env, [f"Fixed: \\boxed{{{gold}}}", "[accept]"])
    assert env.rewards == {"solver": 1.0, "checker": 1.0}
    assert env.infos["solver"]["proposals"] == 2
    env.close()


def test_cooperative_accepted_wrong_answer_earns_zero() -> None:
    """An accepted wrong answer: 0 for both."""
    env = cooperative_v0.env()
    env.reset(seed=1)
    _play(env, ["\\boxed{zq}", "[accept]"])
    assert env.rewards == {"solver": 0.0, "checker": 0.0} and all(env.terminations.values())
    assert not env.infos["solver"]["outcome"]["correct"]
    env.close()


def test_cooperative_ends_after_max_rounds_with_the_last_answer() -> None:
    """After ``max_rounds`` proposals the last one is scored, without a review."""
    env = cooperative_v0.env(max_rounds=2)
    env.reset(seed=2)
    gold = env.game.task.answer
    _play(env, ["\\boxed{zq}", "[reject] wrong", f"\\boxed{{{gold}}}"])
    assert all(env.terminations.values()) and env.rewards == {"solver": 1.0, "checker": 1.0}
    assert env.infos["solver"]["outcome"]["reason"] == "2 proposals made"
    env.close()


def test_cooperative_invalid_moves_warn_then_end_with_zero() -> None:
    """One invalid move: a warning and a retry; two in a row: 0 for both."""
    env = cooperative_v0.env()
    env.reset(seed=0)
    env.step("I think it is seven")
    assert env.infos["solver"]["invalid_moves"] == 1 and "\\boxed" in env.infos["solver"]["warning"]
    assert env.agent_selection == "solver" and "[warning]" in env.observe("solver")
    env.step(f"\\boxed{{{env.game.task.answer}}}")
    env.step(None)  # the checker: invalid once
    env.step("looks fine to me")  # and again: the episode ends
    assert all(env.terminations.values()) and env.rewards == {"solver": 0.0, "checker": 0.0}
    assert "two invalid moves" in env.infos["checker"]["outcome"]["reason"]
    env.close()


def test_cooperative_legal_moves_and_step_for() -> None:
    """legal_moves[0] ends the game fast; an action from the agent not due is only logged."""
    env = cooperative_v0.env()
    env.reset(seed=0)
    assert env.infos["solver"]["legal_moves"][0] == "\\boxed{0}" and env.infos["checker"]["legal_moves"] == []
    assert not env.step_for("checker", "[accept]") and env.infos["checker"]["ignored_actions"]
    env.step("\\boxed{0}")
    assert env.infos["checker"]["legal_moves"][0] == "[accept]"
    env.close()


def test_cooperative_python_runs_in_the_shared_sandbox() -> None:
    """Python blocks of both agents run in one TIRMath session; the output is shown to both."""
    env = cooperative_v0.env()
    env.reset(seed=0)
    env.step(cooperative_v0.oracle_proposal(env.game.task, with_code=True))
    seen = env.observe("checker")
    assert "[python output]" in seen and "```output" in seen and env.game.task.answer in seen
    env.step("Let me check.\n```python\nprint(6 * 7)\n```\n[accept]")
    assert "42" in env.observe("solver")
    assert env.rewards == {"solver": 1.0, "checker": 1.0}
    env.close()
    env.close()
