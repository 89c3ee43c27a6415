"""GRPO and PPO for multi-turn agents on token-level trajectories from :mod:`agentrl.rollout`.

``agentrl.train.grpo`` and ``agentrl.train.ppo`` each read top to bottom; what they share lives in
small modules beside them, one job each: ``args`` (``TrainArgs``), ``trainer`` (the step and
run loop), ``run`` (``PolicyRun``, the plumbing of one run), ``models`` (policy loading and the
generation copy), ``metrics``, ``checkpoints``, ``losses``, ``advantages``, ``batch``, ``logprobs``,
``value`` (the PPO critic) and ``distributed`` (data parallelism).
"""
