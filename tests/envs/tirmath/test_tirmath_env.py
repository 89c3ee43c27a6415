"""AgentRL/TIRMath-v0 end to end, with the real sandbox."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from tests.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR


@pytest.fixture
def env():
    environment = gym.make("AgentRL/TIRMath-v0", code_timeout_s=3.0, max_output_chars=300, verify_timeout_s=2.0)
    yield environment
    environment.close()


def test_reset_shows_task_and_format(env):
    observation, info = env.reset(seed=0)
    assert "\\boxed" in observation and "```python" in observation
    assert info["task_id"].startswith("tirmath/") and info["turns_left"] == 10
    assert env.unwrapped.system_prompt.startswith("You are an expert mathematician")
    assert env.metadata["stop_sequences"] == ("```output",)


def test_code_runs_and_session_persists_within_an_episode_only(env):
    env.reset(seed=1)
    observation, *_ = env.step("```python\nsecret = 6 * 7\nprint(secret)\n```")
    assert observation == "```output\n42\n```"
    observation, *_ = env.step("```python\nsecret + 1\n```")
    assert observation == "```output\n43\n```"
    env.reset(seed=2)
    observation, _, _, _, info = env.step("```python\nprint(secret)\n```")
    assert "NameError" in observation and "NameError" in info["tool_error"]


def test_long_output_is_truncated_with_a_visible_marker(env):
    env.reset(seed=0)
    observation, *_ = env.step("```python\nprint('z' * 100000)\n```")
    assert "truncated" in observation and len(observation) < 1000


def test_runaway_code_times_out_and_the_episode_goes_on(env):
    env.reset(seed=0)
    observation, _reward, terminated, _truncated, info = env.step("```python\nwhile True:\n    pass\n```")
    assert "timed out" in observation and info["tool_error"] and not terminated
    observation, *_ = env.step("```python\nprint('alive')\n```")
    assert observation == "```output\nalive\n```"


def test_void_turns(env):
    env.reset(seed=0)
    *_, info = env.step("Let me think about it.")
    assert info["void_turn"] and info["action_error"]
    strict = gym.make("AgentRL/TIRMath-v0", end_on_void_turn=True)
    strict.reset(seed=0)
    _, reward, terminated, _, info = strict.step("Hmm.")
    assert terminated and reward == 0.0 and info["done_reason"] == "void_turn"
    strict.close()


def test_wrong_answer_ends_with_zero(env):
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("\\boxed{-1}")
    assert terminated and reward == 0.0 and info["reward_components"] == {"correct": 0.0}


def test_difficulty_and_family_knobs():
    env = gym.make("AgentRL/TIRMath-v0", families=["combinatorics"], difficulty=5)
    _, info = env.reset(seed=0)
    assert info["task_id"].startswith("tirmath/combinatorics/d5/")
    env.close()
    with pytest.raises(ValueError, match="did you mean 'modular'"):
        gym.make("AgentRL/TIRMath-v0", families=["modulr"])


def test_easy_tier_observation_is_the_question_and_its_format():
    from agentrl.testing import check_domain

    check_domain("AgentRL/TIRMath-v0", seeds=(0, 1), make_kwargs={"difficulty": 0})
    env = gym.make("AgentRL/TIRMath-v0", difficulty=0)
    try:
        observation, info = env.reset(seed=1)
        task = env.unwrapped.task
        assert info["task_id"].split("/")[2] == "d0" and observation == task.prompt
        assert "```python" not in observation and observation.endswith("\nAnswer:")
        _, reward, terminated, _, _ = env.step("Answer: \\boxed{100}")  # copying the example scores 0
        assert terminated and reward == 0.0
        env.reset(seed=1)
        output = env.step("```python\nprint(6 * 7)\n```")[0]  # code still runs
        assert "42" in output
        _, reward, terminated, _, _ = env.step(f"Answer: \\boxed{{{task.answer}}}")
        assert terminated and reward == 1.0
    finally:
        env.close()


@pytest.mark.parametrize("name", ["gsm8k_sample.jsonl", "math_sample.jsonl"])
def test_dataset_files_with_the_oracle(name):
    env = gym.make("AgentRL/TIRMath-v0", dataset=str(FIXTURES / name))
    source = env.unwrapped.task_source
    for index in range(len(source)):
        _, info = env.reset(options={"task_index": index})
        for action in env.unwrapped.task.oracle_actions:
            _, reward, terminated, _, _ = env.step(action)
        assert terminated and reward == 1.0, info["task_id"]
    env.close()


def test_vector_envs_with_text_observations():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("AgentRL/TIRMath-v0") for _ in range(2)])
    observations, _ = envs.reset(seed=[0, 1])
    assert len(observations) == 2 and all(isinstance(o, str) for o in observations)
    observations, _rewards, terminated, _truncated, _infos = envs.step(["```python\nprint(5)\n```", "\\boxed{0}"])
    assert observations[0] == "```output\n5\n```" and terminated[1]
    envs.close()


def test_async_vector_env_without_shared_memory():
    envs = gym.vector.AsyncVectorEnv(
        [lambda: gym.make("AgentRL/TIRMath-v0") for _ in range(2)], shared_memory=False
    )
    try:
        observations, _ = envs.reset(seed=[3, 4])
        assert all("\\boxed" in o for o in observations)
        observations, *_ = envs.step(["```python\nprint(2**64)\n```"] * 2)
        assert list(observations) == ["```output\n18446744073709551616\n```"] * 2
    finally:
        envs.close()


HOSTILE_ACTIONS = [
    "",
    "x" * 2_000_000,
    "```python\nprint(1)",
    "```python\n```",
    "\ud800\udc00\udfff lone surrogates \x00\x1b[2J",
    "```python\nprint('\\ud800')\n```",
    "```python\nimport sys; sys.stdout.buffer.write(bytes(range(256)) * 100)\n```",
    "```python\nimport os; os.kill(os.getppid(), 9)\n```",
    "```python\nimport os; os._exit(3)\n```",
    "```python\nopen('/etc/shadow').read()\n```",
    "```python\nx = bytearray(50 * 10**9)\n```",
    "```python\n" + "a = 1\n" * 20_000 + "```",
    "\\boxed{" + "{" * 10_000 + "}",
    "\\boxed{10^{10^{10^{10}}}}",
]


@pytest.mark.parametrize("action", HOSTILE_ACTIONS, ids=range(len(HOSTILE_ACTIONS)))
def test_hostile_actions_become_observations(env, action):
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(action)
    assert isinstance(observation, str) and env.observation_space.contains(observation)
    assert reward in (0.0, 1.0) and not truncated
    assert terminated or info["action_error"] or info["tool_error"] or observation.startswith("```output")
    if not terminated:
        observation, *_ = env.step("```python\nprint('still here')\n```")
        assert observation == "```output\nstill here\n```"


def test_easy_tier_alone_reads_a_plain_reply_by_its_last_number():
    """difficulty=0 takes "The answer is 7." (GSM8K flexible-extract); any other range keeps \\boxed{} strict."""
    easy = gym.make("AgentRL/TIRMath-v0", difficulty=0)
    mixed = gym.make("AgentRL/TIRMath-v0", difficulty=(0, 1))
    try:
        assert "```python" not in easy.unwrapped.system_prompt and "Python" not in easy.unwrapped.system_prompt
        easy.reset(seed=3)
        answer = easy.unwrapped.task.answer
        _, reward, terminated, _, info = easy.step(f"Let me think: 2 and 3 give 5. The answer is {answer}.")
        assert terminated and reward == 1.0 and info["done_reason"] == "answered"
        easy.reset(seed=3)
        _, reward, terminated, _, _ = easy.step(f"The answer is {int(answer) + 1}.")  # a wrong number ends it, 0
        assert terminated and reward == 0.0
        easy.reset(seed=3)
        _, reward, terminated, _, info = easy.step("I am not sure.")  # no number: a void turn, as before
        assert not terminated and reward == 0.0 and "action_error" in info
        mixed.reset(seed=3)
        _, _, terminated, _, info = mixed.step("The answer is 7.")
        assert not terminated and "action_error" in info
    finally:
        easy.close()
        mixed.close()
