"""Toy envs for the trainers' learning tests: ``AgentRL/Letter-v0`` (text) and ``AgentRL/ColourLetter-v0`` (pixels).

* ``env.py``: :class:`~agentrl.envs.toy.env.LetterEnv` and :class:`~agentrl.envs.toy.env.ColourLetterEnv`, tasks,
  reward (:func:`~agentrl.envs.toy.env.letter_reward`) and oracle in one file: each is small enough that a randomly
  initialised tiny model learns it in minutes on a CPU.
"""

from __future__ import annotations

from agentrl.envs.toy.env import COLOUR_LETTERS, ColourLetterEnv, LetterEnv, letter_reward

__all__ = ["COLOUR_LETTERS", "ColourLetterEnv", "LetterEnv", "letter_reward"]
