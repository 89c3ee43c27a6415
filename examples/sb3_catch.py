"""Train Stable-Baselines3 PPO (``CnnPolicy``) from pixels on ``AgentRL/FlashGame-Catch-v0``; it beats random.

Catch runs in headless Chromium (Debian's build, driven by Playwright): a ball falls down an 8x8
grid and the paddle (``Discrete(3)``: left, stay, right) must be under it when it lands; three misses
end the game (30 catches win it), and each catch scores +1. The observation is the 84x84 RGB
screen, which shows everything, so PPO's CNN needs no frame stack and no frame skip (one step is
one move and one row of fall). A uniformly random paddle catches a ball now and then; PPO learns to
follow the ball. Both are evaluated on the same fixed reset seeds, and the full run exits non-zero
unless PPO's mean return beats random's clearly (mean above random's mean plus one of its std).

Run: ``python examples/sb3_catch.py`` (8,192 steps: about 5 minutes of training and 10 in all on a busy
2-core CPU; measured: mean return 10.1 ± 5.5 against random's 0.5 ± 0.7 over 50 episodes);
``python examples/sb3_catch.py --quick`` (CI) trains 256 steps, evaluates 3 episodes and only checks
that both ran.
Needs ``pip install 'agentrl-gym[sb3]'`` and Chromium (``sudo apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import time

REQUIRES = ["stable_baselines3", "torch", "playwright"]
"""Optional packages this example needs (Chromium itself is checked at run time)."""

ENV_ID = "AgentRL/FlashGame-Catch-v0"
ENV_KWARGS = {"action_mode": "discrete", "obs_type": "pixels", "obs_size": (84, 84)}
EVAL_SEED = 10_000  # evaluation episodes reset with seeds EVAL_SEED, EVAL_SEED + 1, ...


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Evaluate random, train PPO, evaluate it; print both and return the two mean returns."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run for CI (no claim checked)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 8192, 256 with --quick)")
    parser.add_argument("--episodes", type=int, default=None, help="evaluation episodes (default 50, 3 with --quick)")
    parser.add_argument("--n-envs", type=int, default=4, help="envs in the DummyVecEnv")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = args.steps or (256 if args.quick else 8192)
    episodes = args.episodes or (3 if args.quick else 50)

    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    import agentrl  # noqa: F401  (registers the AgentRL/FlashGame-* ids)
    from agentrl.core.errors import DependencyNotInstalled
    from agentrl.integrations.sb3 import evaluate

    def make() -> gym.Env:
        return gym.make(ENV_ID, **ENV_KWARGS)

    try:
        eval_env = make()
    except DependencyNotInstalled as exc:  # no Chromium on this machine
        print(f"SKIP: {exc}")
        return {}

    start = time.perf_counter()
    random_stats = evaluate("random", eval_env, episodes=episodes, seed=EVAL_SEED)
    print(
        f"random policy   : mean return {random_stats['mean_reward']:.2f} ± {random_stats['std_reward']:.2f} "
        f"over {episodes} episodes ({time.perf_counter() - start:.0f} s)"
    )

    train_env = DummyVecEnv([make] * args.n_envs)
    train_env.seed(args.seed)
    model = PPO(
        "CnnPolicy",  # SB3 transposes the (84, 84, 3) uint8 frames to channels-first and scales them to [0, 1]
        train_env,
        n_steps=64 if args.quick else 128,  # per env: 4 envs x 128 = 512 steps a rollout
        batch_size=64 if args.quick else 128,
        n_epochs=4,
        learning_rate=5e-4,
        gamma=0.95,  # a ball lands within 7 steps of appearing: a short horizon is enough
        ent_coef=0.01,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    train_s = time.perf_counter() - start
    train_env.close()

    start = time.perf_counter()
    ppo_stats = evaluate(model, eval_env, episodes=episodes, seed=EVAL_SEED)
    eval_s = time.perf_counter() - start
    eval_env.close()
    print(
        f"PPO CnnPolicy   : mean return {ppo_stats['mean_reward']:.2f} ± {ppo_stats['std_reward']:.2f} "
        f"over {episodes} episodes ({eval_s:.0f} s)"
    )
    print(f"training        : {model.num_timesteps} steps, {train_s:.0f} s wall ({train_s / 60:.1f} min)")

    means = {"random": random_stats["mean_reward"], "ppo": ppo_stats["mean_reward"]}
    if args.quick:
        print("(--quick: a smoke run; the full run checks that PPO beats random)")
        return means
    margin = random_stats["mean_reward"] + random_stats["std_reward"]
    if ppo_stats["mean_reward"] <= margin:
        raise SystemExit(
            f"PPO did not beat random clearly: {ppo_stats['mean_reward']:.2f} <= {margin:.2f} (random mean + std)"
        )
    print(f"PPO beats random: {ppo_stats['mean_reward']:.2f} > {margin:.2f} (random mean + std)")
    return means


if __name__ == "__main__":
    main()
