"""verl adapter: any AgentRL text env id as a verl agent loop, so verl's multi-turn rollout plays our episodes.

verl's ``AgentLoopWorker`` runs one *agent loop* per dataset row (``agent_name`` picks the class from verl's
registry). :class:`AgentRLAgentLoop`, registered as ``"agentrl"`` when this module is imported, plays one AgentRL
episode there: the row's ``prompt`` (a system message, say) and the env's first observation as a user message,
then the model's reply stepped into the env, the next observation as a user message, until the episode ends.
Tokens go through verl's own Continuous Token builder, so the sequence the trainer sees holds the exact ids the
rollout server sampled (``response_mask`` 1) and the chat-template tokens of the env's observations (mask 0).
The loop returns ``reward_score`` (the episode's return, as ``agentrl bench`` scores it), which verl turns into
``rm_scores`` without a reward model; the per-turn rewards are in ``extra_fields["turn_scores"]``.

Each row names its episode in ``extra_info["agentrl"]``: ``{"env_id": "AgentRL/TIRMath-v0", "seed": 3}``, plus
``options``, ``make_kwargs``, or ``remote`` (the URL of an ``agentrl serve-env`` server, so the envs run on CPU
nodes away from the GPUs). :func:`dataset_rows` writes such rows.

:class:`TransformersTokenServer` is a rollout server with verl's server interface
(``generate(request_id, prompt_ids=..., sampling_params=...) -> TokenOutput``) on a Transformers model. It is for
small models on CPU (tests, trying a loop on a laptop); verl's vLLM and SGLang servers are what trains at scale.

Needs ``pip install 'agentrl-gym[verl]'`` and then ``pip install --no-deps verl==0.9.1`` (verl pins an older
``transformers`` than ours; its agent loop runs with ours).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

import gymnasium as gym

from agentrl.core.errors import DependencyNotInstalled
from agentrl.integrations._text_env import make_text_env

_INSTALL = "pip install 'agentrl-gym[verl]' && pip install --no-deps verl==0.9.1"

try:
    from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
    from verl.workers.rollout.replica import TokenOutput
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled("verl", extra="verl", command=_INSTALL) from exc

__all__ = [
    "AGENT_NAME",
    "AgentRLAgentLoop",
    "TransformersTokenServer",
    "dataset_rows",
    "episode_spec",
    "local_rollout_worker",
    "rows_to_batch",
    "write_agent_loop_config",
]

AGENT_NAME = "agentrl"
"""The ``agent_name`` that picks :class:`AgentRLAgentLoop` (a dataset column, or the rollout config's
``agent.default_agent_loop``)."""

_SPEC_KEYS = ("env_id", "seed", "options", "make_kwargs", "remote")


def episode_spec(row: Mapping[str, Any]) -> dict[str, Any]:
    """The episode a verl row names: ``row["extra_info"]["agentrl"]`` (or ``row["agentrl"]``).

    >>> episode_spec({"extra_info": {"agentrl": {"env_id": "AgentRL/SQL-v0", "seed": 2}}})
    {'env_id': 'AgentRL/SQL-v0', 'seed': 2, 'options': None, 'make_kwargs': {}, 'remote': None}

    Raises:
        ValueError: the row names no env id, or names keys this adapter does not know.
    """
    extra_info = row.get("extra_info") or {}
    spec = extra_info.get("agentrl") if isinstance(extra_info, Mapping) else None
    if spec is None:
        spec = row.get("agentrl")
    if not isinstance(spec, Mapping) or not spec.get("env_id"):
        raise ValueError(
            'each row needs its episode in extra_info: {"agentrl": {"env_id": "AgentRL/TIRMath-v0", "seed": 0}}; '
            f"got extra_info={dict(extra_info) if isinstance(extra_info, Mapping) else extra_info!r}"
        )
    unknown = sorted(set(spec) - set(_SPEC_KEYS))
    if unknown:
        raise ValueError(f"unknown keys {unknown} in extra_info['agentrl']; expected some of {list(_SPEC_KEYS)}")
    # Parquet stores dicts as structs: a row gets every key any row has, None where it had none. Drop those.
    make_kwargs = {k: v for k, v in dict(spec.get("make_kwargs") or {}).items() if v is not None}
    return {
        "env_id": str(spec["env_id"]),
        "seed": None if spec.get("seed") is None else int(spec["seed"]),
        "options": spec.get("options"),
        "make_kwargs": make_kwargs,
        "remote": spec.get("remote"),
    }


def dataset_rows(
    env_id: str,
    seeds: Iterable[int],
    *,
    system_prompt: str | None = None,
    remote: str | None = None,
    make_kwargs: Mapping[str, Any] | None = None,
    data_source: str = "agentrl",
) -> list[dict[str, Any]]:
    """Rows in verl's dataset format (write them to parquet for ``data.train_files``), one episode each.

    >>> rows = dataset_rows("AgentRL/Letter-v0", [0, 1], system_prompt="Answer with letters.")
    >>> rows[1]["prompt"], rows[1]["agent_name"], rows[1]["extra_info"]["agentrl"]["seed"]
    ([{'role': 'system', 'content': 'Answer with letters.'}], 'agentrl', 1)
    """
    prompt = [{"role": "system", "content": system_prompt}] if system_prompt else []
    rows = []
    for index, seed in enumerate(seeds):
        spec: dict[str, Any] = {"env_id": env_id, "seed": int(seed)}
        if remote:
            spec["remote"] = remote
        if make_kwargs:
            spec["make_kwargs"] = dict(make_kwargs)
        rows.append(
            {
                "data_source": data_source,
                "prompt": list(prompt),
                "agent_name": AGENT_NAME,
                "reward_model": {"style": "env", "ground_truth": ""},
                "extra_info": {"index": index, "agentrl": spec},
            }
        )
    return rows


def _make_env(spec: Mapping[str, Any]) -> gym.Env[Any, Any]:
    return make_text_env(
        spec["env_id"], spec["make_kwargs"], spec["remote"], engine="a verl agent loop", text_observations=False
    )


@register(AGENT_NAME)
class AgentRLAgentLoop(AgentLoopBase):  # type: ignore[misc]
    """One AgentRL episode as a verl agent loop (see the module docstring).

    verl builds it with ``hydra.utils.instantiate`` for every row and awaits :meth:`run`. The episode ends when
    the env ends it (terminated or truncated), when the response reaches ``rollout.response_length`` tokens, or
    after ``rollout.multi_turn.max_assistant_turns`` replies when that is set.
    """

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any) -> None:
        # verl hands every loop its tool list; an AgentRL env is its own tool, so it is not used.
        super().__init__(*args, **kwargs)
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)
        multi_turn = self.rollout_config.get("multi_turn") or {}
        self.max_assistant_turns = multi_turn.get("max_assistant_turns") or None

    async def _in_thread(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        # Env calls block (sandboxes, HTTP to serve-env): keep them off verl's event loop.
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        """Play the row's episode; return its tokens, masks, the server's logprobs and the env's return."""
        spec = episode_spec(kwargs)
        env = await self._in_thread(_make_env, spec)
        try:
            raw_prompt = kwargs.get("raw_prompt")
            return await self._play(env, spec, sampling_params, [] if raw_prompt is None else list(raw_prompt))
        finally:
            await self._in_thread(env.close)

    async def _play(
        self, env: gym.Env[Any, Any], spec: Mapping[str, Any], sampling_params: dict[str, Any], prompt: list[Any]
    ) -> AgentLoopOutput:
        observation, info = await self._in_thread(env.reset, seed=spec["seed"], options=spec["options"])
        messages = [*(dict(m) for m in prompt), {"role": "user", "content": str(observation)}]
        prompt_ids: list[int] = await self.ct_build_initial_tokens(messages)
        mask: list[int] = []
        logprobs: list[float] = []
        turn_scores: list[float] = []
        request_id = uuid4().hex
        end = "max_assistant_turns"
        while True:
            output: TokenOutput = await self.server_manager.generate(
                request_id=request_id, prompt_ids=prompt_ids, sampling_params=sampling_params
            )
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                prompt_ids,
                list(output.token_ids),
                mask,
                logprobs if (logprobs or output.log_probs) else None,
                assistant_logprobs=list(output.log_probs) if output.log_probs else None,
            )
            logprobs = list(logprobs or [])
            prompt_ids = list(merged.token_ids)
            reply = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            observation, reward, terminated, truncated, info = await self._in_thread(env.step, reply)
            turn_scores.append(float(reward))
            messages.append({"role": "assistant", "content": reply})
            if terminated or truncated:
                end = str(info.get("done_reason") or ("terminated" if terminated else "truncated"))
                break
            if len(mask) >= self.response_length:
                end = "response_length"
                break
            if self.max_assistant_turns and len(turn_scores) >= self.max_assistant_turns:
                break
            previous = list(messages)
            messages.append({"role": "user", "content": str(observation)})
            merged, mask, aligned = await self.ct_merge_context_msg(
                previous, messages, prompt_ids, mask, logprobs or None
            )
            prompt_ids, logprobs = list(merged.token_ids), list(aligned or [])
        response_ids = prompt_ids[len(prompt_ids) - len(mask) :] if mask else []
        return AgentLoopOutput(
            prompt_ids=prompt_ids[: len(prompt_ids) - len(mask)],
            response_ids=response_ids[: self.response_length],
            response_mask=mask[: self.response_length],
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=sum(turn_scores),
            num_turns=2 * len(turn_scores) + 1,
            metrics={},
            extra_fields={
                "turn_scores": turn_scores,
                "tool_rewards": [],
                "agentrl": {"env_id": spec["env_id"], "seed": spec["seed"], "turns": len(turn_scores), "end": end},
            },
        )


class TransformersTokenServer:
    """verl's rollout-server interface on a Transformers causal LM (CPU-sized models).

    verl's ``LLMServerClient`` calls ``generate`` on a server (usually a Ray actor) with prompt token ids; this
    one samples with Transformers and returns the new ids and, when ``sampling_params["logprobs"]`` is set, each
    sampled token's log-probability under the model's raw distribution (as vLLM reports it by default).

    Args:
        model_path: a Hugging Face model folder.
        max_new_tokens: the cap when ``sampling_params`` carries no ``max_tokens``.
        seed: seeds the sampler, so a run can be replayed.
    """

    def __init__(self, model_path: str, *, max_new_tokens: int = 64, seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
        self.max_new_tokens = int(max_new_tokens)
        self.generator = torch.Generator().manual_seed(seed)
        self._lock = asyncio.Lock()

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: Sequence[int],
        sampling_params: Mapping[str, Any],
        image_data: Any = None,
        video_data: Any = None,
        **_: Any,
    ) -> TokenOutput:
        """Sample a reply to ``prompt_ids`` (ids in, ids out: no re-tokenization)."""
        if image_data or video_data:
            raise ValueError("TransformersTokenServer serves text models; got images or video")
        async with self._lock:  # one forward at a time: the model is not thread-safe
            return await asyncio.get_running_loop().run_in_executor(
                None, self._sample, list(prompt_ids), dict(sampling_params)
            )

    def _sample(self, prompt_ids: list[int], params: dict[str, Any]) -> TokenOutput:
        torch = self._torch
        temperature = float(params.get("temperature", 1.0))
        top_p = float(params.get("top_p", 1.0))
        top_k = int(params.get("top_k", -1))
        budget = int(params.get("max_tokens") or params.get("max_new_tokens") or self.max_new_tokens)
        stop_ids = {int(i) for i in (params.get("stop_token_ids") or [])}
        if self.tokenizer.eos_token_id is not None:
            stop_ids.add(int(self.tokenizer.eos_token_id))
        ids = torch.tensor([prompt_ids])
        new_ids: list[int] = []
        new_logprobs: list[float] = []
        past = None
        with torch.no_grad():
            for _ in range(budget):
                out = self.model(input_ids=ids if past is None else ids[:, -1:], past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                raw = torch.log_softmax(logits, dim=-1)
                token = self._choose(logits, temperature, top_p, top_k)
                new_ids.append(token)
                new_logprobs.append(float(raw[token]))
                ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
                if token in stop_ids:
                    break
        return TokenOutput(
            token_ids=new_ids,
            log_probs=new_logprobs if params.get("logprobs") else None,
            stop_reason="completed",
        )

    def _choose(self, logits: Any, temperature: float, top_p: float, top_k: int) -> int:
        torch = self._torch
        if temperature <= 0:
            return int(torch.argmax(logits))
        scaled = logits / temperature
        if 0 < top_k < scaled.numel():
            kth = torch.topk(scaled, top_k).values[-1]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        probs = torch.softmax(scaled, dim=-1)
        if top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=0) - sorted_probs < top_p
            filtered = torch.zeros_like(probs)
            filtered[order[keep]] = sorted_probs[keep]
            probs = filtered / filtered.sum()
        return int(torch.multinomial(probs, 1, generator=self.generator))


def write_agent_loop_config(path: str | os.PathLike[str]) -> Path:
    """Write the file verl's ``rollout.agent.agent_loop_config_path`` takes, naming :class:`AgentRLAgentLoop`.

    verl's workers read it at start, so a cluster's rollout workers find the ``agentrl`` loop without importing
    this module first.

    >>> import tempfile
    >>> print(write_agent_loop_config(tempfile.mkdtemp() + "/loops.yaml").read_text().strip())
    - name: agentrl
      _target_: agentrl.integrations.verl.AgentRLAgentLoop
    """
    target = Path(path)
    target.write_text(f"- name: {AGENT_NAME}\n  _target_: {__name__}.{AgentRLAgentLoop.__qualname__}\n")
    return target


def rows_to_batch(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Rows as verl's dataset hands them to the rollout: a ``DataProto`` of non-tensor columns.

    ``raw_prompt`` is each row's ``prompt`` (the chat before the env's first observation), as ``RLHFDataset``
    gives it with ``return_raw_chat``; ``agent_name`` and ``extra_info`` are the rows' own.
    """
    import numpy as np
    from verl.protocol import DataProto

    def column(values: list[Any]) -> Any:
        # One object per row, even when every row's value is a list of the same length (np.array would stack them).
        array = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            array[i] = value
        return array

    columns = {
        "raw_prompt": column([list(row.get("prompt") or []) for row in rows]),
        "agent_name": column([row.get("agent_name", AGENT_NAME) for row in rows]),
        "extra_info": column([dict(row.get("extra_info") or {}) for row in rows]),
        "index": np.arange(len(rows)),
    }
    return DataProto.from_dict(non_tensors=columns)


def local_rollout_worker(
    model_path: str,
    *,
    prompt_length: int = 1024,
    response_length: int = 512,
    max_new_tokens: int | None = None,
    overrides: Sequence[str] = (),
    seed: int = 0,
) -> Any:
    """Verl's rollout side on this machine: its ``AgentLoopWorker`` over one :class:`TransformersTokenServer`.

    The config is verl's own ``ppo_trainer.yaml`` composed by Hydra (``overrides`` in Hydra's ``key=value`` form
    go on top); ``max_new_tokens`` caps each reply (default ``response_length``). The server and verl's
    ``GlobalRequestLoadBalancer`` run as Ray actors, reached through verl's ``LLMServerClient``, as in a verl
    run. ``await worker.generate_sequences(rows_to_batch(rows))`` is then the call verl's trainer makes each step.
    Ray must be initialised (``ray.init()``) first.
    """
    import ray
    from hydra import compose, initialize_config_dir
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.trainer import config as verl_config
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import GlobalRequestLoadBalancer

    if not ray.is_initialized():
        raise RuntimeError("local_rollout_worker runs its server as Ray actors: call ray.init() first")
    with initialize_config_dir(config_dir=os.path.dirname(verl_config.__file__), version_base=None):
        config = compose(
            config_name="ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_path}",
                "actor_rollout_ref.rollout.name=vllm",  # the config needs a name; only the agent loop side runs
                f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
                f"actor_rollout_ref.rollout.response_length={response_length}",
                "actor_rollout_ref.rollout.calculate_log_probs=true",
                f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
                *overrides,
            ],
        )
    server = (
        ray.remote(TransformersTokenServer)
        .options(num_cpus=0)
        .remote(str(model_path), max_new_tokens=max_new_tokens or response_length, seed=seed)
    )
    balancer = ray.remote(GlobalRequestLoadBalancer).options(num_cpus=0).remote({"cpu-0": server})
    return AgentLoopWorker(config, llm_client=LLMServerClient(config, load_balancer_handle=balancer))
