"""AgentRL envs as verifiers environments, run by verifiers' own ``vf-eval`` against our OpenAI-compatible server.

The claim (issue 32): verifiers' evaluation of an AgentRL id scores the episodes as ``agentrl bench`` does on the
same seeds. Both play against one ``serve_model`` endpoint, greedy, and must agree episode by episode on the
reward, the number of turns and every assistant text. A tiny model keeps it fast; ``benchmarks/verifiers_agreement.py``
records the same comparison with SmolLM2.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from tests.installed import skip_module_unless_installed

if TYPE_CHECKING:
    from agentrl.llm.server import ModelServer

# found, not imported: verifiers takes seconds to import in every test worker; the tests import what they use
skip_module_unless_installed(
    "verifiers",
    reason="verifiers is missing: pip install 'agentrl-gym[verifiers]' && pip install --no-deps verifiers==0.4.0",
)

pytestmark = pytest.mark.skipif(
    shutil.which("uv", path=str(Path(sys.executable).parent)) is None and shutil.which("uv") is None,
    reason="uv is missing (verifiers' null harness runs its chat program with it): pip install uv",
)


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    """A tiny chat model behind our OpenAI-compatible server."""
    from agentrl.llm.server import load_backend, serve_model

    with load_backend("tiny") as backend, serve_model(backend) as handle:
        yield handle


def test_verifiers_own_loader_finds_the_taskset_and_the_env() -> None:
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    from agentrl.integrations.verifiers import AgentRLEnv, AgentRLTaskset

    assert taskset_class("agentrl-verifiers") is AgentRLTaskset
    assert environment_class("agentrl-verifiers") is AgentRLEnv


def test_the_env_config_samples_with_the_envs_stop_sequences_unless_told_otherwise() -> None:
    from agentrl.integrations.verifiers import AgentRLEnvConfig

    config = AgentRLEnvConfig.model_validate({"taskset": {"id": "agentrl-verifiers", "env": "AgentRL/SQL-v0"}})
    assert config.player.sampling is not None
    assert config.player.sampling.model_dump()["stop"] == ["</sql>", "</solution>"]
    assert config.player.harness is not None and config.player.harness.id == "null"
    own = AgentRLEnvConfig.model_validate({
        "taskset": {"id": "agentrl-verifiers", "env": "AgentRL/SQL-v0"},
        "player": {"sampling": {"stop": ["STOP"], "temperature": 0.5}},
    })
    assert own.player.sampling is not None
    assert own.player.sampling.model_dump()["stop"] == ["STOP"]
    letter = AgentRLEnvConfig.model_validate({"taskset": {"id": "agentrl-verifiers", "env": "AgentRL/Letter-v0"}})
    assert letter.player.sampling is None  # Letter-v0 asks for no stop sequence


def test_tasks_are_the_benchs_episodes() -> None:
    from agentrl.bench.runner import reset_seed_for
    from agentrl.integrations.verifiers import AgentRLTaskset, AgentRLTasksetConfig

    tasks = list(AgentRLTaskset(AgentRLTasksetConfig(env="AgentRL/SQL-v0", episodes=3, seed=5)))
    assert [task.data.info["reset_seed"] for task in tasks] == [reset_seed_for(5, i) for i in range(3)]
    assert all(task.data.prompt is None for task in tasks)  # the env's first observation opens the conversation
    assert tasks[0].data.system_prompt is not None and "<solution>" in tasks[0].data.system_prompt


@pytest.mark.parametrize(
    ("config", "error", "fragment"),
    [
        ({"env": "AgentRL/NoSuchEnv-v0"}, gym.error.UnregisteredEnv, "NoSuchEnv"),
        ({"env": "AgentRL/FlashGame-Catch-v0"}, ValueError, "not text in, text out"),
    ],
)
def test_bad_tasksets_say_what_is_wrong(config: dict[str, Any], error: type[Exception], fragment: str) -> None:
    from agentrl.integrations.verifiers import AgentRLTaskset, AgentRLTasksetConfig

    with pytest.raises(error, match=fragment):
        list(AgentRLTaskset(AgentRLTasksetConfig(**config)))


def test_a_taskset_of_no_episodes_is_refused() -> None:
    from pydantic import ValidationError

    from agentrl.integrations.verifiers import AgentRLTasksetConfig

    with pytest.raises(ValidationError, match="episodes"):
        AgentRLTasksetConfig(env="AgentRL/SQL-v0", episodes=0)


@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [("AgentRL/Letter-v0", {}), ("AgentRL/SQL-v0", {"max_turns": 3})],
)
def test_vf_eval_scores_the_episodes_as_agentrl_bench_does(env_id: str, env_kwargs: dict[str, Any]) -> None:
    from benchmarks.verifiers_agreement import compare

    result = compare("tiny", env_id, episodes=2, seed=0, env_kwargs=env_kwargs, max_tokens=16)
    for row in result["episodes_compared"]:
        assert row["bench"] == row["verifiers"], row
        assert row["same_texts"] and row["same_observations"], row
    assert result["all_agree"]


def test_the_comparison_sees_a_difference(server: ModelServer, tmp_path: Path) -> None:
    """Other seeds on one side: other tasks, so other observations (the check can fail).

    The tiny random model may answer every prompt alike, so the observations, not its texts, tell the tasks apart.
    """
    from agentrl.integrations.verifiers import run_vf_eval
    from benchmarks.verifiers_agreement import run_bench

    args = (server.base_url, server.model, "AgentRL/SQL-v0")
    one_turn = {"max_turns": 1}
    theirs = run_vf_eval(*args, tmp_path / "vf", episodes=2, seed=1, env_kwargs=one_turn, max_tokens=16)
    ours = run_bench(*args, 2, 0, one_turn, 16, tmp_path / "bench")
    assert theirs[0]["observations"] and ours[0]["observations"]
    assert [theirs[i]["observations"] for i in range(2)] != [ours[i]["observations"] for i in range(2)]


def test_episodes_on_an_env_server_are_the_same_episodes(server: ModelServer, tmp_path: Path) -> None:
    from agentrl.integrations.verifiers import run_vf_eval
    from agentrl.serving.env_server import serve_env

    args = (server.base_url, server.model, "AgentRL/Letter-v0")
    local = run_vf_eval(*args, tmp_path / "local", episodes=2, max_tokens=16)
    with serve_env("AgentRL/Letter-v0", insecure_loopback=True, max_sessions=2) as handle:
        remote = run_vf_eval(*args, tmp_path / "remote", episodes=2, max_tokens=16, remote=handle.base_url)
    assert remote == local
