"""GRPO and PPO for multi-turn agents on token-level trajectories from :mod:`agentrl.rollout`.

``agentrl.train.grpo`` and ``agentrl.train.ppo`` each read top to bottom; the losses, advantage
estimators and batching they share live in small modules beside them.
"""
