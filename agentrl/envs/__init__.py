"""Built-in domains. Importing this package registers every env id (nothing heavy is imported)."""

from __future__ import annotations

from agentrl.core.aggregates import EpisodeAggregate, register_aggregate
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
    version=1,
)
# v1: the rule grader refuses plan stuffing (a plan naming 8+ treatment ideas of other conditions meets no plan
# criterion; `agentrl redteam`'s plan-stuffing probe) and the LLM judge reads the conversation as quoted data
# (consult-judge-v2; the inject-judge probe). v0 keeps both as they were (deprecated, one release).
register_domain(
    "PatientConsult",
    "agentrl.envs.consult.env:PatientConsultEnv",
    description="Doctor-patient consultation, v0's rubric grading (plan criteria by keyword alone).",
    tags=("text", "medical", "dialogue"),
    kwargs={"scattershot_ideas": None, "judge_prompt_version": "consult-judge-v1"},
    deprecated="v0 grades a plan listing every treatment as meeting every plan criterion, and its LLM judge reads "
    "a fake SYSTEM turn as instructions; use -v1",
)
# HealthBench's overall score is the clipped mean of the unclipped per-example scores (with simple-evals'
# bootstrap interval), not the mean reward: the bench reads it from here.
register_aggregate(
    EpisodeAggregate("healthbench_score", "HealthBench score", "agentrl.envs.consult.rubric:healthbench_aggregate")
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

# The trainer's toy envs (agentrl.envs.toy): `agentrl train grpo --env AgentRL/Letter-v0` works and
# `agentrl list` shows them under "toy", but they are not benchmark domains (a trivial oracle, nothing
# to measure an agent by): benchmark=False keeps them out of the bench suites and check_domain's tests.
register_domain(
    "Letter",
    "agentrl.envs.toy:LetterEnv",
    description="The trainer's toy text env: write the target letter; reward is the share of it in the reply.",
    tags=("text", "toy"),
    group="toy",
    benchmark=False,
)
# Its pixel twin: the letter is shown by a colour only (the VLM learning test).
register_domain(
    "ColourLetter",
    "agentrl.envs.toy:ColourLetterEnv",
    description="The pixel twin of Letter-v0: a coloured square says which letter to write (the VLM trainer's toy).",
    tags=("pixels", "toy"),
    group="toy",
    benchmark=False,
)

# Single-agent views of the competitive multi-agent games (agentrl.envs.multiagent.single_agent):
# one learner seat against a built-in opponent, so `agentrl bench`, the trainers and any Gymnasium
# tool work on them unchanged. Reward +1/-1/0 at the end: the mean return is win rate - loss rate.
# v1 (issue 19, the episode contract): info["turn"] is the learner's turns taken and the game's move
# count is info["game_turn"]; v0 keeps the game's move count in info["turn"] (deprecated, one release).
# `agentrl list` shows them under "multiagent"; they are not in the bench suites (benchmark=False).
from agentrl.envs.multiagent import register_seat_envs as _register_seat_envs  # noqa: E402

_register_seat_envs()
