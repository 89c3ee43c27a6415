"""Any AgentRL text env in SkyRL-Gym, driven by the loop SkyRL's generator runs (init, then step until done).

Registers :class:`agentrl.integrations.skyrl.AgentRLTextEnv` as SkyRL's ``env_class`` ``"agentrl"``; each row's
``env_extras`` name the env id and the seed, as a SkyRL dataset row would. A scripted policy stands in for the
model (the oracle, and a policy that answers junk)::

    python examples/skyrl_env.py --quick                       # SQL-v0 and TIRMath-v0, 3 rows each (CI)
    python examples/skyrl_env.py --rows 20

In SkyRL's config: ``environment.env_class=agentrl`` and rows with ``env_extras: {"env_id": "AgentRL/SQL-v0",
"seed": 7}`` (add ``"remote": "http://host:8000"`` to use envs served by ``agentrl serve-env``).
"""

from __future__ import annotations

import argparse

REQUIRES = ["skyrl_gym"]
"""pip install 'agentrl-gym[skyrl]'"""


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Play the rows with both policies; print and return the mean returns."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10, help="rows (seeds) per env")
    parser.add_argument("--quick", action="store_true", help="3 rows per env (for CI)")
    args = parser.parse_args(argv)

    import skyrl_gym

    import agentrl  # noqa: F401
    from agentrl.integrations.skyrl import play_episode, register_skyrl_envs

    register_skyrl_envs()
    policies = {"oracle": lambda env, chat: env.env.unwrapped.oracle_action(), "junk": lambda env, chat: "No idea."}
    means: dict[str, float] = {}
    for env_id in ("AgentRL/SQL-v0", "AgentRL/TIRMath-v0"):
        for name, policy in policies.items():
            returns = []
            for seed in range(3 if args.quick else args.rows):
                env = skyrl_gym.make("agentrl", env_config={}, extras={"env_id": env_id, "seed": seed})
                try:
                    returns.append(play_episode(env, policy, [{"role": "system", "content": "Solve it."}])["return"])
                finally:
                    env.close()
            means[f"{env_id} {name}"] = sum(returns) / len(returns)
            print(f"{env_id:22s} {name:6s} mean return {means[f'{env_id} {name}']:.2f} over {len(returns)} rows")
    if not all(means[f"{e} oracle"] > means[f"{e} junk"] for e in ("AgentRL/SQL-v0", "AgentRL/TIRMath-v0")):
        raise SystemExit("the oracle should beat the junk policy")
    return means


if __name__ == "__main__":
    main()
