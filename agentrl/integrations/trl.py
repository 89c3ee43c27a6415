"""Train on any AgentRL text env with TRL's ``GRPOTrainer``, multi-turn, env tokens masked.

TRL's ``GRPOTrainer`` takes a ``rollout_func(prompts, trainer) -> dict`` that replaces its own
generation. :class:`AgentRLRollout` is one: for every prompt TRL hands it, it resets an AgentRL env
to the task behind that prompt, plays the whole episode with the :class:`~agentrl.rollout.RolloutEngine`
(policy turns sampled by a :class:`~agentrl.llm.transformers_backend.TransformersBackend`
that holds the trainer's current weights, env replies tokenised once with the chat template's
glue), and returns the exact token ids: ``prompt_ids`` (the first prompt), ``completion_ids``
(every policy turn and every env reply after it), ``logprobs`` and ``env_mask`` (1 on the policy's
sampled tokens, 0 on what the env and the template wrote), plus ``env_reward`` and ``env_turns``
per episode, which TRL forwards to the reward functions. :func:`env_reward` is the reward function
that reads the env's return. :meth:`AgentRLRollout.dataset` builds the train dataset: one row per
task, whose ``prompt`` is the env's first observation as chat messages.

Example:
    .. code-block:: python

        from trl import GRPOConfig, GRPOTrainer

        from agentrl.integrations.trl import AgentRLRollout, env_reward

        rollout = AgentRLRollout("AgentRL/TIRMath-v0", "Qwen/Qwen2.5-0.5B-Instruct",
                                 env_kwargs={"max_turns": 4}, max_new_tokens=256)
        trainer = GRPOTrainer(
            model="Qwen/Qwen2.5-0.5B-Instruct",
            reward_funcs=env_reward,
            args=GRPOConfig(output_dir="out", num_generations=8, max_completion_length=1536),
            train_dataset=rollout.dataset(1000),
            rollout_func=rollout,
        )
        trainer.train()
        rollout.close()

How TRL consumes the fields (TRL 1.16, ``trl/trainer/grpo_trainer.py``):

* Prompts are repeated before they reach the rollout: the train sampler yields each dataset row
  ``num_generations`` times in a row (``RepeatSampler(mini_repeat_count=num_generations)``,
  ``_get_train_sampler``), and ``_generate`` passes that repeated list to ``rollout_func``. So the
  rollout plays one episode per prompt it receives, in order (never ``num_generations`` per
  prompt, which would return G² rows), and the ``num_generations`` copies of a row form the GRPO
  group: the same env seed, different samples.
* ``prompt_ids`` replace TRL's tokenisation: with a ``rollout_func`` TRL never applies the chat
  template to the prompt (``_tokenize_prompts`` runs only in the other branch of ``_generate``),
  and the loss runs on ``cat(prompt_ids, completion_ids)`` as returned (left/right padded in
  ``_generate_and_score_completions``), so the tokens trained on are exactly those sampled.
* ``env_mask`` becomes TRL's ``tool_mask`` (``extra_fields.pop("env_mask")`` in ``_generate``);
  the loss mask is ``completion_mask * tool_mask`` (``_generate_and_score_completions`` and
  ``_compute_loss``), so env tokens carry no loss, and completion-length metrics count only
  policy tokens.
* ``logprobs`` are TRL's ``sampling_per_token_logps``; they are used only by the vLLM
  importance-sampling correction, so with this rollout they are informative.
* Every other key (``env_reward``, ``env_turns``, ``env_failed``) is copied into each row's inputs
  and reaches the reward functions as a keyword argument.

Length limits: TRL does not cut what a ``rollout_func`` returns (``max_completion_length`` only
bounds its own generation), so this rollout cuts each completion (policy turns *and* env replies)
to ``trainer.max_completion_length`` tokens, logging how many it cut; the episode's reward is kept.
Set ``max_completion_length`` to about ``max_turns * (max_new_tokens + the longest env reply)`` to
avoid cuts. A cut completion does not end with EOS, so TRL counts it as clipped, and with
``mask_truncated_completions=True`` drops it from the loss. ``loss_type="dr_grpo"`` normalises by
``max_completion_length``. The prompt is never cut (TRL has no ``max_prompt_length`` on this path).

Sampling: the temperature and top-p are the trainer's (``GRPOConfig.temperature``/``top_p``)
unless given; TRL's ``top_k``, ``min_p`` and ``repetition_penalty`` are not applied.
"""

from __future__ import annotations

import functools
import json
import logging
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from agentrl.rollout.engine import RolloutConfig, RolloutEngine
from agentrl.rollout.trajectory import RolloutRequest, Trajectory

__all__ = ["AgentRLRollout", "env_reward"]

logger = logging.getLogger(__name__)


def env_reward(
    prompts: Sequence[Any], completions: Sequence[Any], env_reward: Sequence[float], **kwargs: Any
) -> list[float]:
    """The env's return of each episode, as a TRL reward function (``reward_funcs=env_reward``).

    Args:
        prompts: the prompts (unused; TRL passes them).
        completions: the decoded completions (unused; TRL passes them).
        env_reward: the undiscounted sum of the episode's rewards, one per completion, as
            :class:`AgentRLRollout` returned them.
        **kwargs: the other columns and extra fields TRL passes (ignored).

    Returns:
        One float per completion (0.0 for an episode that failed).
    """
    return [float(r) for r in env_reward]


def _key(prompt: Any) -> str:
    """The lookup key of a prompt: its canonical JSON (messages or plain text)."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


class AgentRLRollout:
    """A TRL ``rollout_func`` that plays AgentRL env episodes; also builds the matching dataset.

    Args:
        env_id_or_fn: a registered env id (``"AgentRL/TIRMath-v0"``) made with ``gym.make(id,
            **env_kwargs)``, or a zero-argument callable that builds one env.
        model_path: the folder (or Hub id already downloaded) of the model the trainer trains; the
            generation backend loads its architecture and tokenizer from it, and the trainer's
            weights are copied in before each generation. ``None``: the trainer model's
            ``name_or_path``, read at the first call.
        num_envs: how many episodes run at once.
        max_new_tokens: the most tokens the policy samples per turn.
        max_turns: an engine-side cap on policy turns (``None``: the env's own budget).
        temperature: the sampling temperature; ``None`` takes ``trainer.args.temperature``.
        top_p: nucleus sampling mass; ``None`` takes ``trainer.args.top_p``.
        env_kwargs: keyword arguments of ``gym.make`` (only with an env id).
        retries: how many times a failed episode is tried again before it is returned empty.
        sampling_seed: makes sampling reproducible (see :class:`~agentrl.rollout.RolloutConfig`).
        device: the generation device; ``None`` takes the trainer's (``trainer.accelerator.device``).
        dtype: the generation dtype; ``None`` takes the trainer model's.
        rollout_config: more :class:`~agentrl.rollout.RolloutConfig` fields (timeouts, stop strings...).

    Attributes:
        backend: the :class:`TransformersBackend` (``None`` before the first call).
        engine: the :class:`RolloutEngine` (``None`` before the first call).
        last_trajectories: the trajectories of the latest call, in the order of its prompts
            (``None`` where an episode failed).
        stats: counters over all calls: ``episodes``, ``failed``, ``cut`` (completions cut to
            ``max_completion_length``), ``weight_syncs``.
    """

    def __init__(
        self,
        env_id_or_fn: str | Callable[[], Any],
        model_path: str | None = None,
        *,
        num_envs: int = 16,
        max_new_tokens: int = 256,
        max_turns: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        env_kwargs: dict[str, Any] | None = None,
        retries: int = 1,
        sampling_seed: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        rollout_config: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(env_id_or_fn, str):
            import gymnasium as gym

            import agentrl  # noqa: F401  (registers the AgentRL/* ids)

            self._make_env: Callable[[], Any] = functools.partial(gym.make, env_id_or_fn, **(env_kwargs or {}))
        elif callable(env_id_or_fn):
            if env_kwargs:
                raise ValueError("env_kwargs apply to an env id; bind them into the callable instead")
            self._make_env = env_id_or_fn
        else:
            raise TypeError(f"pass an env id or a callable that builds an env, got {type(env_id_or_fn).__name__}")
        self.model_path = model_path
        self.num_envs = num_envs
        self.max_new_tokens = max_new_tokens
        self.max_turns = max_turns
        self.temperature = temperature
        self.top_p = top_p
        self.retries = retries
        self.sampling_seed = sampling_seed
        self.device = device
        self.dtype = dtype
        self.rollout_config = dict(rollout_config or {})
        self.backend: Any = None
        self.engine: RolloutEngine | None = None
        self.last_trajectories: list[Trajectory | None] | None = None
        self.stats: dict[str, int] = {"episodes": 0, "failed": 0, "cut": 0, "weight_syncs": 0}
        self._tasks: dict[str, RolloutRequest] = {}
        self._synced_step: int | None = None
        self.__name__ = type(self).__name__  # TRL and loggers sometimes read a function's name

    # ------------------------------------------------------------------ dataset

    def dataset(
        self,
        n: int,
        seed: int = 0,
        *,
        seeds: Sequence[int] | None = None,
        options: Sequence[dict[str, Any] | None] | None = None,
    ) -> Any:
        """A TRL train dataset of ``n`` tasks: the env's first observation for each reset seed.

        Each row's ``prompt`` is what the policy sees first, as chat messages (the env's system
        prompt, when it has one, then the observation as a user message); ``env_seed`` and
        ``task_id`` columns say which task it is. The rollout remembers, for each prompt, the seed
        and reset options that produce it, so it can reset an env to exactly that task (TRL gives
        a ``rollout_func`` only the prompts).

        Args:
            n: how many rows.
            seed: the first reset seed; row ``i`` resets with ``seed + i``.
            seeds: explicit reset seeds instead (``n`` of them are used).
            options: reset options per row (for example ``{"task_index": i}`` for file datasets).

        Returns:
            A ``datasets.Dataset`` with the columns ``prompt``, ``env_seed`` and ``task_id``.
        """
        import datasets

        from agentrl.rollout.workers import describe_env

        row_seeds = list(seeds[:n]) if seeds is not None else [seed + i for i in range(n)]
        if len(row_seeds) < n:
            raise ValueError(f"{n} rows asked for but only {len(row_seeds)} seeds given")
        row_options = list(options) if options is not None else [None] * n
        if len(row_options) < n:
            raise ValueError(f"{n} rows asked for but only {len(row_options)} options given")
        rows: dict[str, list[Any]] = {"prompt": [], "env_seed": [], "task_id": []}
        env = self._make_env()
        try:
            system = describe_env(env)["system_prompt"]
            for row_seed, row_option in zip(row_seeds, row_options[:n], strict=True):
                observation, info = env.reset(seed=row_seed, options=row_option)
                if not isinstance(observation, str):
                    raise TypeError(f"the env's observations must be text, got {type(observation).__name__}")
                prompt = [{"role": "system", "content": system}] if system else []
                prompt.append({"role": self._observation_role, "content": observation})
                key = _key(prompt)
                if key in self._tasks:
                    logger.info("seed %s gives the same first observation as an earlier seed; it is kept", row_seed)
                else:
                    self._tasks[key] = RolloutRequest(seed=row_seed, options=row_option)
                rows["prompt"].append(prompt)
                rows["env_seed"].append(row_seed)
                rows["task_id"].append(None if info.get("task_id") is None else str(info["task_id"]))
        finally:
            env.close()
        return datasets.Dataset.from_dict(rows)

    @property
    def _observation_role(self) -> str:
        return str(self.rollout_config.get("observation_role", "user"))

    # ------------------------------------------------------------------ rollout_func

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one episode per prompt with the trainer's current weights; TRL's ``rollout_func``.

        Args:
            prompts: the prompts of this process's generation batch, as TRL passes them (each
                dataset row repeated ``num_generations`` times in a row).
            trainer: the ``GRPOTrainer``.

        Returns:
            A dict with one entry per prompt, in order, in each of ``prompt_ids``,
            ``completion_ids``, ``logprobs``, ``env_mask``, ``env_reward``, ``env_turns`` and
            ``env_failed``.

        Raises:
            KeyError: a prompt that :meth:`dataset` did not build.
        """
        requests: list[RolloutRequest] = []
        group, previous, index = -1, None, 0
        for prompt in prompts:
            key = _key(prompt)
            task = self._tasks.get(key)
            if task is None:
                raise KeyError(
                    "a prompt that AgentRLRollout.dataset() did not build reached the rollout; train on "
                    "rollout.dataset(n) (the rollout resets each env from the prompt's seed)"
                )
            if key != previous:
                group, previous, index = group + 1, key, 0
            else:
                index += 1
            requests.append(RolloutRequest(seed=task.seed, options=task.options, group_id=group, index=index))

        self._start(trainer)
        self._sync_weights(trainer)
        assert self.engine is not None
        trajectories = self.engine.run(requests)
        by_position: list[Trajectory | None] = [None] * len(requests)
        # keep_failed=True returns one trajectory per request, in order; match by identity to be safe.
        remaining = list(range(len(requests)))
        for trajectory in trajectories:
            for j, position in enumerate(remaining):
                if requests[position] is trajectory.request:
                    by_position[position] = trajectory
                    del remaining[j]
                    break

        max_completion = getattr(trainer, "max_completion_length", None)
        out: dict[str, list[Any]] = {
            "prompt_ids": [],
            "completion_ids": [],
            "logprobs": [],
            "env_mask": [],
            "env_reward": [],
            "env_turns": [],
            "env_failed": [],
        }
        failed = 0
        for prompt, trajectory in zip(prompts, by_position, strict=True):
            if trajectory is None or not trajectory.ok or not trajectory.turns:
                failed += 1
                reason = "missing" if trajectory is None else (trajectory.failure or "no policy turn")
                tries = self.retries + 1 if trajectory is None else trajectory.attempts
                logger.warning("an episode failed after %d tries (%s); it is returned empty", tries, reason)
                out["prompt_ids"].append(self._placeholder_prompt(prompt, trajectory))
                # One EOS token, masked out: TRL reads completion_ids[-1], so a completion is never empty.
                out["completion_ids"].append([self._eos_id()])
                out["logprobs"].append([0.0])
                out["env_mask"].append([0])
                out["env_reward"].append(0.0)
                out["env_turns"].append(0)
                out["env_failed"].append(True)
                continue
            if isinstance(prompt, list) and trajectory.messages[: len(prompt)] != prompt:
                logger.warning("the env's first observation differs from the dataset prompt: is it deterministic?")
            p = trajectory.prompt_length
            completion = trajectory.token_ids[p:]
            mask = trajectory.loss_mask[p:]
            logprobs = trajectory.logprobs[p:]
            if max_completion is not None and len(completion) > max_completion:
                self.stats["cut"] += 1
                logger.warning(
                    "a completion of %d tokens (policy and env) is cut to max_completion_length=%d",
                    len(completion),
                    max_completion,
                )
                completion, mask, logprobs = (x[:max_completion] for x in (completion, mask, logprobs))
            out["prompt_ids"].append(trajectory.token_ids[:p])
            out["completion_ids"].append(completion)
            out["logprobs"].append(logprobs)
            out["env_mask"].append(mask)
            out["env_reward"].append(trajectory.total_reward)
            out["env_turns"].append(len(trajectory.turns))
            out["env_failed"].append(False)
        self.last_trajectories = by_position
        self.stats["episodes"] += len(prompts)
        self.stats["failed"] += failed
        self._log_metrics(trainer, by_position, failed)
        return out

    def close(self) -> None:
        """Close the envs and free the generation model; idempotent."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        if self.backend is not None:
            self.backend.close()
            self.backend = None

    def __enter__(self) -> AgentRLRollout:
        """Return self; :meth:`close` on exit."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close (see :meth:`close`)."""
        self.close()

    # ------------------------------------------------------------------ internals

    def _start(self, trainer: Any) -> None:
        """Build the backend and the engine at the first call, with the trainer's settings."""
        if self.engine is not None:
            return
        from agentrl.llm.transformers_backend import TransformersBackend

        model = trainer.model
        path = self.model_path or getattr(getattr(model, "config", None), "name_or_path", None)
        if not path:
            raise ValueError("pass model_path: the trainer's model does not say where it was loaded from")
        device = self.device or str(trainer.accelerator.device)
        dtype = self.dtype or str(next(model.parameters()).dtype).removeprefix("torch.")
        args = trainer.args
        temperature = self.temperature if self.temperature is not None else float(getattr(args, "temperature", 1.0))
        top_p = self.top_p if self.top_p is not None else float(getattr(args, "top_p", 1.0) or 1.0)
        config = RolloutConfig(
            **{
                "num_envs": self.num_envs,
                "max_new_tokens": self.max_new_tokens,
                "temperature": temperature,
                "top_p": top_p,
                "max_turns": self.max_turns,
                "retries": self.retries,
                "sampling_seed": self.sampling_seed,
                **self.rollout_config,
                "keep_failed": True,  # one row per prompt, whatever happens
            }
        )
        self.backend = TransformersBackend(
            path, device=device, dtype=dtype, max_batch_size=self.num_envs, batch_wait_ms=1.0
        )
        self.engine = RolloutEngine(self._make_env, self.backend, config=config)

    def _sync_weights(self, trainer: Any) -> None:
        """Copy the trainer's current weights into the generation model (once per optimizer step).

        ``trainer.model`` is the unwrapped model (``trainer.model_wrapped`` may be the DDP wrapper);
        :func:`~agentrl.train.models.policy_state_dict` merges LoRA adapters and unwraps DDP.
        """
        from agentrl.train.models import policy_state_dict

        step = int(getattr(getattr(trainer, "state", None), "global_step", 0))
        if self._synced_step == step:
            return
        self.backend.load_weights(policy_state_dict(trainer.model))
        assert self.engine is not None
        self.engine.policy_version = step
        self._synced_step = step
        self.stats["weight_syncs"] += 1

    def _eos_id(self) -> int:
        tokenizer = self.backend.tokenizer
        eos = tokenizer.eos_token_id
        return int(eos if eos is not None else min(self.backend.stop_token_ids))

    def _placeholder_prompt(self, prompt: Any, trajectory: Trajectory | None) -> list[int]:
        """The prompt ids of a failed episode: its own when it got that far, else the dataset prompt's."""
        if trajectory is not None and trajectory.prompt_length:
            return trajectory.token_ids[: trajectory.prompt_length]
        assert self.engine is not None
        if isinstance(prompt, str):
            return self.engine.chat.encode(prompt) or [self._eos_id()]
        return self.engine.chat.prompt_ids(prompt)

    def _log_metrics(self, trainer: Any, trajectories: Sequence[Trajectory | None], failed: int) -> None:
        """Add env metrics to the trainer's logs (``env/turns``, ``env/failed``...), when it keeps them."""
        metrics = getattr(trainer, "_metrics", None)
        if metrics is None:
            return
        mode = "train" if getattr(trainer.model, "training", True) else "eval"
        ok = [t for t in trajectories if t is not None and t.ok and t.turns]
        metrics[mode]["env/failed"].append(float(failed))
        if ok:
            metrics[mode]["env/turns"].append(statistics.fmean(len(t.turns) for t in ok))
            metrics[mode]["env/reward"].append(statistics.fmean(t.total_reward for t in ok))
            metrics[mode]["env/env_tokens"].append(
                statistics.fmean(len(t.token_ids) - t.prompt_length - t.num_policy_tokens for t in ok)
            )
