"""Adapters to the RL libraries people already use; each module imports its framework lazily.

* :mod:`agentrl.integrations.sb3`: Stable-Baselines3 on text envs (embeddings + discrete choices).
* :mod:`agentrl.integrations.trl`: a ``rollout_func`` for TRL's ``GRPOTrainer`` (multi-turn, env tokens masked).
* :mod:`agentrl.integrations.rllib`: the multi-agent games under RLlib's PettingZoo wrapper.
* :mod:`agentrl.integrations.skyrl`: any text id as a SkyRL-Gym ``BaseTextEnv`` (``env_class="agentrl"``).
* :mod:`agentrl.integrations.verl`: an agent loop for verl's multi-turn rollout (``agent_name="agentrl"``).
* :mod:`agentrl.integrations.verifiers`: any text id as a verifiers environment (``vf-eval agentrl-verifiers``).
"""
