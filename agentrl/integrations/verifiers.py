r"""verifiers adapter: any AgentRL text env id as a verifiers environment, its return as the reward.

verifiers (Prime Intellect's library behind ``vf-eval`` and prime-rl) runs an environment as a *taskset* (the
tasks) and an *env* (how agents play one task). Here the taskset is one task per episode of an AgentRL id, each
with the reset seed ``agentrl bench`` gives that episode (:func:`agentrl.bench.runner.reset_seed_for`), and the
env plays the AgentRL env as the conversation's user, as verifiers' TextArena env plays a game: the first
observation opens the conversation, each model reply is one ``env.step``, the next observation is the next user
turn, and the episode's end (terminated or truncated) ends the conversation. The return is recorded as the
``env_reward`` reward (weight 1), so verifiers' score is the env's return; ``success`` (the final ``info``'s
``success``, else return >= 1, as the bench counts it) and ``turns`` are recorded as metrics.

The model sees what the reference ReAct agent sends: the system prompt of
:func:`agentrl.agents.react.system_prompt_for`, each observation as a user message, and the env's stop
sequences (``metadata["stop_sequences"]``) in the sampling settings. So on the same seeds, greedy, the scores
equal ``agentrl bench --agent react --backend openai`` against the same endpoint.

verifiers 0.4 finds a taskset by a top-level module name, so the package ``agentrl_verifiers`` (installed with
this one) exports these classes. One command::

    vf-eval agentrl-verifiers --env.taskset.env AgentRL/SQL-v0 --env.taskset.episodes 3 \
        -m SmolLM2-135M-Instruct --client.base-url http://127.0.0.1:8000/v1 --no-push

``--env.taskset.remote http://host:port`` plays the episodes on an ``agentrl serve-env`` server instead of in
the evaluating process; ``--env.taskset.env-kwargs '{"difficulty": 0}'`` passes arguments to ``gym.make``.

Needs ``pip install 'agentrl-gym[verifiers]'`` and ``pip install --no-deps verifiers==0.4.0`` (verifiers asks
for ``renderers[multimodal]``, whose Pillow pin conflicts with moviepy's; the text path needs neither).

>>> tasks = list(AgentRLTaskset(AgentRLTasksetConfig(env="AgentRL/Letter-v0", episodes=2)))
>>> [task.data.name for task in tasks]
['AgentRL/Letter-v0#0', 'AgentRL/Letter-v0#1']
>>> tasks[0].data.info["reset_seed"] == reset_seed_for(0, 0)
True
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
from pydantic import Field, model_validator

from agentrl.agents.react import system_prompt_for
from agentrl.bench.runner import episode_success, reset_seed_for
from agentrl.core.errors import DependencyNotInstalled
from agentrl.integrations._text_env import make_text_env

try:
    import verifiers.v1 as vf
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled(
        "verifiers", command="pip install 'agentrl-gym[verifiers]' && pip install --no-deps verifiers==0.4.0"
    ) from exc

__all__ = [
    "TASKSET_ID",
    "AgentRLData",
    "AgentRLEnv",
    "AgentRLEnvConfig",
    "AgentRLTask",
    "AgentRLTaskset",
    "AgentRLTasksetConfig",
    "read_vf_traces",
    "run_vf_eval",
    "stop_sequences_of",
    "vf_eval_command",
]

TASKSET_ID = "agentrl-verifiers"
"""The id verifiers knows the taskset by (``vf-eval agentrl-verifiers``; the module ``agentrl_verifiers``)."""


def stop_sequences_of(env_id: str) -> list[str]:
    """The stop sequences the env asks LLM agents to sample with, read from its class (no env is made).

    >>> stop_sequences_of("AgentRL/SQL-v0")
    ['</sql>', '</solution>']
    """
    import agentrl  # noqa: F401

    entry_point = gym.spec(env_id).entry_point
    if callable(entry_point):
        env_class: Any = entry_point
    else:
        module, _, name = str(entry_point).partition(":")
        env_class = getattr(importlib.import_module(module), name)
    return [str(stop) for stop in (getattr(env_class, "metadata", {}) or {}).get("stop_sequences", ()) or ()]


class AgentRLTasksetConfig(vf.TasksetConfig):
    """Which episodes of which AgentRL env (``--env.taskset.*`` on verifiers' command line)."""

    env: str = "AgentRL/SQL-v0"
    """The AgentRL id (``agentrl list``); a text env."""
    episodes: int = Field(10, ge=1)
    """How many episodes: task ``i`` is episode ``i`` of ``agentrl bench --seeds SEED``."""
    seed: int = Field(0, ge=0)
    """The bench's base seed: the same seed gives the same tasks as ``agentrl bench --seeds SEED``."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Arguments to ``gym.make`` (``{"difficulty": 0}``)."""
    remote: str | None = None
    """An ``agentrl serve-env`` URL: the episodes run there (``gym.make(env, remote=URL)``)."""
    extra_instructions: str = ""
    """Appended to the system prompt, as ``agentrl bench --extra-instructions`` does."""


class AgentRLData(vf.TaskData):
    """One episode: ``info`` holds the env id, its reset seed, ``gym.make`` arguments and the remote URL."""

    info: dict[str, Any]


class AgentRLTask(vf.Task[AgentRLData, vf.State, vf.TaskConfig]):
    """One episode of an AgentRL env (its scoring is the env's return, recorded by :class:`AgentRLEnv`)."""


class AgentRLTaskset(vf.Taskset[AgentRLTask, AgentRLTasksetConfig]):
    """One task per episode; the conversation is opened by the env's first observation, not by a prompt."""

    def load(self) -> Iterator[AgentRLTask]:
        """Yield the tasks (the env is made once, to read its system prompt and check it is text)."""
        config = self.config
        env = make_text_env(config.env, config.env_kwargs, config.remote, engine="verifiers")
        try:
            system_prompt = system_prompt_for(env, config.extra_instructions)
        finally:
            env.close()
        for index in range(config.episodes):
            info = {
                "env": config.env,
                "reset_seed": reset_seed_for(config.seed, index),
                "env_kwargs": dict(config.env_kwargs),
                "remote": config.remote,
            }
            data = AgentRLData(name=f"{config.env}#{index}", prompt=None, system_prompt=system_prompt or None,
                               info=info)
            yield AgentRLTask(data, config.task)


class AgentRLEnvConfig(vf.EnvConfig):
    """The one seat, ``player``: a plain chat model call per turn (verifiers' ``null`` harness, in a local process).

    Unless ``--env.player.sampling.stop`` is given, the env's own stop sequences are sampled with.
    """

    player: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})

    @model_validator(mode="after")
    def _env_stop_sequences(self) -> AgentRLEnvConfig:
        env_id = getattr(self.taskset, "env", None)
        sampling = self.player.sampling
        if not env_id or (sampling is not None and "stop" in sampling.model_dump(exclude_unset=True)):
            return self
        stops = stop_sequences_of(str(env_id))
        if stops:
            current = sampling.model_dump(exclude_unset=True) if sampling is not None else {}
            self.player = self.player.model_copy(update={"sampling": vf.SamplingConfig(**current, stop=stops)})
        return self


class AgentRLEnv(vf.Env[AgentRLEnvConfig]):
    """Plays the AgentRL env as the user of the player's conversation (see the module docstring)."""

    async def run(self, task: AgentRLTask, agents: Any) -> None:
        """One episode: observation -> reply -> ``env.step(reply)`` until the env ends it or the run stops."""
        info = task.data.info
        env = await asyncio.to_thread(
            make_text_env, info["env"], info.get("env_kwargs"), info.get("remote"), engine="verifiers"
        )
        try:
            observation, _ = await asyncio.to_thread(env.reset, seed=int(info["reset_seed"]))
            episode_return, turns, final_info = 0.0, 0, {}
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn(str(observation))
                while not segment.terminated:
                    observation, reward, terminated, truncated, final_info = await asyncio.to_thread(
                        env.step, _reply_text(segment)
                    )
                    episode_return += float(reward)
                    turns += 1
                    if terminated or truncated:
                        break
                    segment = await interaction.turn(str(observation))
                success = episode_success(final_info, episode_return)
                trace = interaction.trace
                trace.record_reward("env_reward", episode_return, 1.0)
                trace.record_metric("success", float(success))
                trace.record_metric("turns", float(turns))
        finally:
            await asyncio.to_thread(env.close)


def _reply_text(segment: Any) -> str:
    """The model's reply as it sampled it (``Segment.last_reply`` strips the whitespace the bench keeps)."""
    for message in reversed(segment.messages):
        if getattr(message, "role", None) == "assistant" and isinstance(getattr(message, "content", None), str):
            return str(message.content)
    return str(segment.last_reply)


def vf_eval_command(
    base_url: str,
    model: str,
    env_id: str,
    output_dir: str | Path,
    *,
    episodes: int = 10,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    remote: str | None = None,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    concurrency: int = 1,
    api_key_var: str = "OPENAI_API_KEY",
) -> list[str]:
    """The ``vf-eval`` command line that evaluates ``model`` (served at ``base_url``) on ``env_id``'s episodes.

    >>> vf_eval_command("http://127.0.0.1:8000/v1", "SmolLM2-135M-Instruct", "AgentRL/SQL-v0", "runs/vf",
    ...                 episodes=3)[:6]
    ['vf-eval', 'agentrl-verifiers', '--env.taskset.env', 'AgentRL/SQL-v0', '--env.taskset.episodes', '3']
    """
    command = [
        "vf-eval", TASKSET_ID, "--env.taskset.env", env_id, "--env.taskset.episodes", str(episodes),
        "--env.taskset.seed", str(seed), "--env.taskset.env-kwargs", json.dumps(dict(env_kwargs or {})),
        "-m", model, "-c", str(concurrency), "--client.base-url", base_url, "--client.api-key-var", api_key_var,
        "--sampling.temperature", str(temperature), "--no-push", "-o", str(output_dir),
    ]
    if remote:
        command += ["--env.taskset.remote", remote]
    if max_tokens is not None:
        command += ["--sampling.max-tokens", str(max_tokens)]
    return command


def read_vf_traces(output_dir: str | Path) -> dict[int, dict[str, Any]]:
    """The episodes of the newest ``vf-eval`` run under ``output_dir``, by task index.

    Each: ``reward`` (the env's return), ``success``, ``turns``, ``texts`` (the assistant's replies in order) and
    ``observations`` (the user turns: the env's observations the replies answered).
    """
    runs = sorted(Path(output_dir).glob("*/traces.jsonl"), key=lambda path: path.stat().st_mtime)
    if not runs:
        raise FileNotFoundError(f"no vf-eval run (*/traces.jsonl) under {output_dir}")
    episodes: dict[int, dict[str, Any]] = {}
    for line in runs[-1].read_text().splitlines():
        record = json.loads(line)
        (trace,) = record["traces"]
        episodes[int(record["task"]["data"]["idx"])] = {
            "reward": float(trace["rewards"]["env_reward"]["score"]),
            "success": bool(trace["metrics"]["success"]),
            "turns": int(trace["metrics"]["turns"]),
            "texts": [node["message"]["content"] for node in trace["nodes"] if node.get("sampled")],
            "observations": [
                node["message"]["content"] for node in trace["nodes"] if node["message"]["role"] == "user"
            ],
        }
    return episodes


def run_vf_eval(
    base_url: str, model: str, env_id: str, output_dir: str | Path, *, timeout_s: float = 1800.0, **options: Any
) -> dict[int, dict[str, Any]]:
    """Run verifiers' own ``vf-eval`` (:func:`vf_eval_command`, ``options`` are its keywords) and read its episodes.

    vf-eval runs in a subprocess with this interpreter's ``bin`` folder first on ``PATH`` (its ``null`` harness
    runs ``uv``) and ``$OPENAI_API_KEY`` set when missing (a local endpoint ignores it).

    Raises:
        RuntimeError: vf-eval failed; the message holds the end of its output.
    """
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.setdefault(str(options.get("api_key_var", "OPENAI_API_KEY")), "agentrl-local")
    output_dir = Path(output_dir).resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    command = vf_eval_command(base_url, model, env_id, output_dir, **options)
    done = subprocess.run(
        command, env=env, cwd=output_dir, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise RuntimeError(f"vf-eval failed (exit {done.returncode}): {' '.join(command)}\n{output}")
    return read_vf_traces(output_dir)
