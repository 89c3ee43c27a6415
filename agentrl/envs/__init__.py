"""Built-in domains. Importing this package registers every env id (nothing heavy is imported)."""

from __future__ import annotations

import gymnasium as _gym

from agentrl.core.registry import register_domain

register_domain(
    "TIRMath",
    "agentrl.envs.tirmath.env:TIRMathEnv",
    description="Tool-integrated math: run Python in a sandbox, answer in \\boxed{}; math-verify reward.",
    tags=("text", "math", "tools"),
)
register_domain(
    "Search",
    "agentrl.envs.search.env:SearchEnv",
    description="Multi-hop QA over a local knowledge base: <search> returns top-k passages, <answer>; EM/F1 reward.",
    tags=("text", "search", "tools"),
)
register_domain(
    "SQL",
    "agentrl.envs.sql.env:SQLEnv",
    description="Text-to-SQL on real SQLite databases: explore with <sql>, submit <solution>; Spider execution match.",
    tags=("text", "sql", "tools"),
)
register_domain(
    "PatientConsult",
    "agentrl.envs.consult.env:PatientConsultEnv",
    description="Doctor-patient consultation (research use only): question a simulated patient, order tests, "
    "conclude with DIAGNOSIS/PLAN; HealthBench-style rubric reward.",
    tags=("text", "medical", "dialogue"),
)
register_domain(
    "OSWorld",
    "agentrl.envs.osworld.env:OSWorldEnv",
    description="A real Linux desktop (Xvfb, xfwm4, xterm, mousepad, thunar, galculator, Chromium): OSWorld task "
    "JSON, screenshot / a11y-tree observations, pyautogui or computer_13 actions, OSWorld's evaluators.",
    tags=("pixels", "desktop", "gui"),
)

# Browser and Flash games with pixel observations (agentrl.envs.games): one id per game.
from agentrl.envs.games import register_game_envs as _register_game_envs  # noqa: E402

_register_game_envs()

# The trainer's toy env (agentrl.envs.toy.LetterEnv): a plain Gymnasium id so that
# `agentrl train grpo --env AgentRL/Letter-v0` works, but not a benchmark domain (a trivial oracle,
# nothing to measure an agent by), so it is left out of `agentrl list` and check_domain.
if "AgentRL/Letter-v0" not in _gym.registry:
    _gym.register("AgentRL/Letter-v0", entry_point="agentrl.envs.toy:LetterEnv")
# Its pixel twin (agentrl.envs.toy.ColourLetterEnv): the letter is shown by a colour only (the VLM learning test).
if "AgentRL/ColourLetter-v0" not in _gym.registry:
    _gym.register("AgentRL/ColourLetter-v0", entry_point="agentrl.envs.toy:ColourLetterEnv")

# Single-agent views of the competitive multi-agent games (agentrl.envs.multiagent.single_agent):
# one learner seat against a built-in opponent, so `agentrl bench`, the trainers and any Gymnasium
# tool work on them unchanged. Reward +1/-1/0 at the end: the mean return is win rate - loss rate.
# v1 (issue 19, the episode contract): info["turn"] is the learner's turns taken and the game's move
# count is info["game_turn"]; v0 keeps the game's move count in info["turn"] (deprecated, one release).
for _game in ("tictactoe", "connect_four", "nim", "kuhn_poker", "negotiation"):
    for _opponent in ("random", "scripted", "best"):
        for _version, _legacy in ((0, True), (1, False)):
            _id = f"AgentRL-MA/{_game}-vs-{_opponent}-v{_version}"
            if _id not in _gym.registry:
                _gym.register(
                    _id,
                    entry_point="agentrl.envs.multiagent.single_agent:make_single_agent",
                    kwargs={
                        "name": f"{_game}_v0",
                        "opponent": _opponent,
                        "learner_seat": "alternate",
                        "legacy_turn_info": _legacy,
                    },
                    disable_env_checker=True,
                )
