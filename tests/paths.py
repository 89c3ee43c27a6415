"""Where the tests find the repository and their shared data, wherever in ``tests/`` a test module lives."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root (the folder of ``pyproject.toml``)."""
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
"""Small data files in public formats (GSM8K and MATH JSONL, Spider and BIRD, FlashRAG, AgentClinic...)."""
OSWORLD_FIXTURES = TESTS / "envs" / "osworld" / "fixtures"
"""OSWorld task folders for the desktop's tests."""
