"""AgentRL text envs under SkyRL-Gym's interface, driven by the loop SkyRL's generator runs.

SkyRL (``skyrl-train``'s ``SkyRLGymGenerator.agent_loop``) makes one env per row with
``skyrl_gym.make(env_class, env_config=<the environment.skyrl_gym.<env_class> DictConfig>, extras=<env_extras>)``,
calls ``init(prompt)``, then ``step(output)`` until ``done``, appending the assistant's output and the returned
``observations`` to the chat. The loop here is that one (with a scripted policy in place of the model), and the
returns must equal the same episodes played on the Gymnasium env directly.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import agentrl  # noqa: F401
from tests.installed import skip_module_unless_installed

# found, not imported: skyrl-gym takes a second or more to import in every test worker; the tests import it
skip_module_unless_installed("skyrl_gym", "omegaconf", reason="skyrl-gym is missing: pip install 'agentrl-gym[skyrl]'")


def skyrl_agent_loop(env_class: str, config: dict[str, Any], extras: dict[str, Any], policy: Any) -> dict[str, Any]:
    """SkyRL's generator: make the row's env from its config section and extras, play it, close it."""
    import omegaconf
    import skyrl_gym

    from agentrl.integrations.skyrl import play_episode

    env = skyrl_gym.make(env_class, env_config=omegaconf.OmegaConf.create(config), extras=extras)
    try:
        played = play_episode(env, policy, [{"role": "system", "content": "You are a careful agent."}])
        return {**played, "metrics": env.get_metrics()}
    finally:
        env.close()


def oracle(env: Any, chat: Any) -> str:
    return env.env.unwrapped.oracle_action()


def direct_return(env_id: str, seed: int, actions: list[str]) -> float:
    env = gym.make(env_id)
    env.reset(seed=seed)
    total = 0.0
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        total += reward
        if terminated or truncated:
            break
    env.close()
    return total


@pytest.mark.parametrize("env_id", ["AgentRL/SQL-v0", "AgentRL/TIRMath-v0"])
def test_skyrls_loop_plays_our_envs_with_the_same_returns(env_id: str) -> None:
    from agentrl.integrations.skyrl import register_skyrl_envs

    register_skyrl_envs()
    for seed in (0, 1, 2):
        played: list[str] = []

        def recording_oracle(env: Any, chat: Any, played: list[str] = played) -> str:
            played.append(oracle(env, chat))
            return played[-1]

        result = skyrl_agent_loop("agentrl", {"env_id": env_id}, {"seed": seed}, recording_oracle)
        assert result["return"] == 1.0 == direct_return(env_id, seed, played)
        assert result["chat"][0]["role"] == "system" and result["chat"][1]["role"] == "user"
        assert result["metrics"]["solved"] == 1.0
    stuck = skyrl_agent_loop("agentrl", {"env_id": env_id}, {"seed": 0}, lambda env, chat: "I am not sure.")
    assert stuck["return"] == direct_return(env_id, 0, ["I am not sure."] * stuck["turns"])
    assert stuck["turns"] <= gym.make(env_id).unwrapped.max_turns


def test_a_row_can_name_a_remote_env_served_by_serve_env() -> None:
    pytest.importorskip("websockets", reason="websockets is missing: pip install 'agentrl-gym[serve]'")
    from agentrl.integrations.skyrl import register_skyrl_envs
    from agentrl.serving.env_server import serve_env

    register_skyrl_envs()
    with serve_env("AgentRL/SQL-v0", insecure_loopback=True, allow_oracle=True) as server:  # the policy is the oracle
        extras = {"env_id": "AgentRL/SQL-v0", "seed": 4, "remote": server.base_url}
        result = skyrl_agent_loop("agentrl", {}, extras, oracle)
        assert result["return"] == 1.0
        assert server.app.sessions == 0  # the env's close ended its session


def test_bad_settings_name_the_fix() -> None:
    from agentrl.integrations.skyrl import AgentRLTextEnv

    with pytest.raises(ValueError, match="needs an env_id"):
        AgentRLTextEnv({}, {"seed": 0})
    with pytest.raises(ValueError, match="text in, text out"):
        AgentRLTextEnv({"env_id": "AgentRL/ColourLetter-v0"}, {})  # pixels in
