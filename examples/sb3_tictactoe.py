"""Train Stable-Baselines3 PPO on tic-tac-toe against a random opponent, from MiniLM text embeddings.

The env is ``AgentRL-MA/tictactoe-vs-random-v0`` (a text game): observations are embedded with the
packaged all-MiniLM-L6-v2 model (``TextToEmbedding``), and the nine cells are a ``Discrete(9)``
action space (``DiscreteChoices``). A random policy over those nine actions often plays a taken
cell, and a second invalid move in a row loses, so it loses most games; PPO learns to do better.

Run: ``python examples/sb3_tictactoe.py`` (about a minute on a laptop CPU); ``--quick`` trains less.
Needs ``pip install 'agentrl-gym[sb3,search]'``.
"""

from __future__ import annotations

import argparse
import time

from stable_baselines3 import PPO

import agentrl  # noqa: F401  (registers the env ids)
from agentrl.integrations.sb3 import evaluate, make_sb3_env, make_sb3_vec_env
from agentrl.wrappers import TextEmbedder

ENV_ID = "AgentRL-MA/tictactoe-vs-random-v0"
CELLS = [f"[{i}]" for i in range(1, 10)]


def main() -> None:
    """Train, then print the random and trained policies' results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="train less (CI)")
    # --quick is a smoke run of this script; tests/integrations/test_sb3.py asserts that PPO beats random.
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 6144, 256 with --quick)")
    parser.add_argument("--episodes", type=int, default=None, help="evaluation games (default 200, 20 with --quick)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    steps = args.steps or (256 if args.quick else 6144)
    # PPO collects n_steps per env before its first update: 32 x 8 envs is the whole --quick budget, one rollout
    episodes = args.episodes or (20 if args.quick else 200)

    embedder = TextEmbedder()  # one MiniLM cache shared by the training and evaluation envs
    eval_env = make_sb3_env(ENV_ID, choices=CELLS, model=embedder)
    before = evaluate("random", eval_env, episodes=episodes, seed=10_000)
    print(
        f"random policy : mean reward {before['mean_reward']:+.2f}  win {before['win_rate']:.0%}  "
        f"draw {before['draw_rate']:.0%}  loss {before['loss_rate']:.0%}"
    )

    train_env = make_sb3_vec_env(ENV_ID, 8, choices=CELLS, model=embedder)
    model = PPO(
        "MlpPolicy",
        train_env,
        n_steps=32 if args.quick else 128,
        batch_size=64,
        learning_rate=1e-3,
        ent_coef=0.01,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    seconds = time.perf_counter() - start
    after = evaluate(model, eval_env, episodes=episodes, seed=10_000)
    print(
        f"PPO ({steps} steps, {seconds:.0f} s): mean reward {after['mean_reward']:+.2f}  win {after['win_rate']:.0%}  "
        f"draw {after['draw_rate']:.0%}  loss {after['loss_rate']:.0%}"
    )
    print(f"embedding cache: {embedder.cache_info()}")
    train_env.close()
    eval_env.close()


if __name__ == "__main__":
    main()
