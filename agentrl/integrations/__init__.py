"""Adapters to the RL libraries people already use; each module imports its framework lazily.

* :mod:`agentrl.integrations.sb3`: Stable-Baselines3 on text envs (embeddings + discrete choices).
* :mod:`agentrl.integrations.trl`: a ``rollout_func`` for TRL's ``GRPOTrainer`` (multi-turn, env tokens masked).
* :mod:`agentrl.integrations.rllib`: the multi-agent games under RLlib's PettingZoo wrapper.
"""
