"""Toy envs for the trainers' learning tests: ``AgentRL/Letter-v0`` (text) and ``AgentRL/ColourLetter-v0`` (pixels)."""

from __future__ import annotations

from agentrl.envs.toy.env import COLOUR_LETTERS, ColourLetterEnv, LetterEnv, letter_reward

__all__ = ["COLOUR_LETTERS", "ColourLetterEnv", "LetterEnv", "letter_reward"]
