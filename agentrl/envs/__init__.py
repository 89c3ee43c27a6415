"""Built-in domains. Importing this package registers every env id (nothing heavy is imported)."""

from __future__ import annotations

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
