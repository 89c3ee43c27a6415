"""The models of a run: the trainable policy and the generation copy that samples from it.

Where the policy's weights come from, the policy itself (full fine-tuning or LoRA), its plain
(merged) weights for the generation copy, and that copy (a generation backend) with the rollout
engine that drives it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.train._torch import import_torch

__all__ = [
    "build_rollout",
    "check_env_id",
    "check_observations",
    "is_vlm",
    "load_policy_model",
    "policy_state_dict",
    "resolve_model_path",
]


def check_env_id(env_id: str) -> None:
    """Fail fast on an env id that is not registered, before any model is loaded or any step runs.

    The check ``agentrl bench`` makes: Gymnasium's ``gym.spec``, whose error names the closest
    registered ids (``Did you mean: `TIRMath`?``).

    A multi-agent env (``agentrl.envs.multiagent.<name>``) is checked against ``MULTIAGENT_ENVS``.

    Raises:
        gymnasium.error.Error: the id is malformed or not registered.
        ValueError: an ``agentrl.envs.multiagent.`` name that is not a multi-agent env.
    """
    import gymnasium as gym

    from agentrl.rollout.multiagent import multiagent_env_name

    if multiagent_env_name(env_id) is not None:
        return

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)

    gym.spec(env_id)


def resolve_model_path(model: str, output_dir: Path) -> Path:
    """A model folder: ``model`` itself, or for ``"tiny"`` / ``"tiny-llama"`` a tiny model built in the run."""
    if model == "tiny-vlm":
        from agentrl.llm.tiny_vlm import build_tiny_vlm

        return build_tiny_vlm(output_dir / "tiny-vlm")
    if model in ("tiny", "tiny-qwen2", "tiny-llama"):
        from agentrl.llm.tiny import build_tiny_model

        family = "llama" if model == "tiny-llama" else "qwen2"
        return build_tiny_model(output_dir / f"tiny-{family}", family=family)  # type: ignore[arg-type]
    if model in ("smollm2", "SmolLM2-135M-Instruct"):
        from agentrl.llm.smollm2 import smollm2_path

        return Path(smollm2_path())
    path = Path(model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"no model at {path} (expected a Hugging Face folder with config.json); pass --model PATH, "
            "or 'tiny' for a tiny random model ('tiny-vlm': a tiny vision-language one), or 'smollm2' for the "
            "embedded SmolLM2-135M-Instruct"
        )
    return path


def load_policy_model(
    path: Path,
    *,
    device: str,
    dtype: str,
    lora_rank: int = 0,
    lora_alpha: int = 16,
    lora_dropout: float = 0.0,
    lora_target_modules: Sequence[str] | None = None,
) -> Any:
    """The trainable causal LM: full fine-tuning, or LoRA adapters through ``peft`` when ``lora_rank > 0``."""
    torch = import_torch()
    import transformers

    transformers.utils.logging.disable_progress_bar()  # per-tensor bars would drown the step lines
    auto = transformers.AutoModelForImageTextToText if is_vlm(path) else transformers.AutoModelForCausalLM
    model = auto.from_pretrained(path, dtype=getattr(torch, dtype)).to(device)
    if lora_rank > 0:
        try:
            import peft
        except ImportError as exc:
            raise DependencyNotInstalled("peft", extra="train") from exc
        config = peft.LoraConfig(
            r=lora_rank,
            lora_alpha=lora_alpha,
            lora_dropout=lora_dropout,
            target_modules=list(lora_target_modules) if lora_target_modules else "all-linear",
            task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(model, config)
    model.train()
    return model


def is_vlm(path: Path) -> bool:
    """Whether the checkpoint at ``path`` has a vision tower (``vision_config`` in its ``config.json``)."""
    from agentrl.llm.vlm_backend import is_vlm_checkpoint

    return is_vlm_checkpoint(path)


def check_observations(make_env: Callable[[], Any], model_path: Path) -> None:
    """Fail before any episode when the env gives images and the model cannot read them.

    Builds one env (and closes it) to read its observation space: an image ``Box`` (H, W, 3) or a ``Dict``
    holding one needs a VLM checkpoint.

    Raises:
        ValueError: a pixel env with a text-only model, naming both and the fix.
    """
    from agentrl.rollout.engine import IMAGE_KEYS

    if is_vlm(model_path):
        return
    env = make_env()
    try:
        space = getattr(env, "observation_space", None)
    finally:
        env.close()
    shape = getattr(space, "shape", None)
    pixels = shape is not None and len(shape) == 3 and shape[-1] == 3
    inner = getattr(space, "spaces", None)
    if isinstance(inner, dict):
        pixels = any(key in inner for key in IMAGE_KEYS)
    if pixels:
        raise ValueError(
            f"the env gives images ({space}) but {model_path} is a text-only model (no vision_config); pass a VLM "
            "checkpoint (--model tiny-vlm for a tiny one, or a SmolVLM/Idefics3 folder), or the env's text view "
            "(--env-kwarg obs_type=text)"
        )


def policy_state_dict(model: Any) -> dict[str, Any]:
    """The plain (merged) weights of a policy, keyed as the base model's own ``state_dict``.

    For a LoRA model the adapters are merged into a copy of the affected weights, so a generation
    backend holding the base architecture can load them; the training model is left unmerged.
    """
    unwrapped = getattr(model, "module", model)  # DistributedDataParallel
    if not hasattr(unwrapped, "merge_adapter"):
        return {k: v.detach() for k, v in unwrapped.state_dict().items()}
    unwrapped.merge_adapter()
    try:
        state = {}
        for key, value in unwrapped.get_base_model().state_dict().items():
            if "lora_" in key:
                continue
            state[key.replace(".base_layer", "")] = value.detach().clone()
        return state
    finally:
        unwrapped.unmerge_adapter()


def build_rollout(
    *,
    env: str,
    env_kwargs: dict[str, Any],
    env_fn: Callable[[], Any] | None,
    model_path: Path,
    device: str,
    dtype: str,
    workers: str,
    rollout_config: Any,
    max_batch_size: int,
    generation: str = "transformers",
    seats: str = "",
    opponent: str = "random",
    team_reward: bool = False,
    alternate_seats: bool = False,
) -> tuple[Any, Any]:
    """The generation backend and the :class:`~agentrl.rollout.RolloutEngine` of a run.

    ``generation="transformers"`` generates with :class:`TransformersBackend` (any device);
    ``"vllm"`` with :class:`~agentrl.train.vllm_policy.VLLMPolicy` (a CUDA GPU and ``pip install vllm``).
    A multi-agent ``env`` (``agentrl.envs.multiagent.<name>``) gets a
    :class:`~agentrl.rollout.multiagent.MultiAgentRollout` instead, with ``seats``, ``opponent``,
    ``team_reward`` and ``alternate_seats``; a ``snapshot`` seat gets a second, frozen :class:`TransformersBackend`
    (the engine's ``snapshot_policy``; the caller refreshes and closes it).
    """
    import functools

    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the AgentRL/* ids)
    from agentrl.llm.transformers_backend import TransformersBackend
    from agentrl.rollout import RolloutEngine
    from agentrl.rollout.multiagent import multiagent_env_name

    multiagent = None if env_fn is not None else multiagent_env_name(env)
    if multiagent is not None and workers != "thread":
        raise ValueError(f"multi-agent envs run their games in threads; use --env-workers thread, not {workers!r}")
    make_env = env_fn or functools.partial(gym.make, env, **env_kwargs)
    if workers == "thread":
        factory: Any = make_env
    elif workers == "process":
        from agentrl.rollout.process_workers import ProcessWorkers

        factory = ProcessWorkers(make_env)
    elif workers == "ray":
        from agentrl.rollout.ray_workers import RayWorkers

        factory = RayWorkers(make_env)
    else:
        raise ValueError(f"env_workers must be 'thread', 'process' or 'ray', got {workers!r}")
    if generation == "vllm":
        from agentrl.train.vllm_policy import VLLMPolicy

        backend: Any = VLLMPolicy(model_path, dtype=dtype, max_num_seqs=max_batch_size)
    elif generation == "transformers":
        # A short batching window: the engine's concurrent episodes ask within a millisecond or two
        # of each other, and every millisecond waited is a millisecond of the step.
        if is_vlm(model_path):
            from agentrl.llm.vlm_backend import TransformersVLMBackend

            backend = TransformersVLMBackend(
                model_path, device=device, dtype=dtype, max_batch_size=max_batch_size, batch_wait_ms=1.0
            )
        else:
            if multiagent is None:
                check_observations(make_env, model_path)
            backend = TransformersBackend(
                model_path, device=device, dtype=dtype, max_batch_size=max_batch_size, batch_wait_ms=1.0
            )
    else:
        raise ValueError(f"generation must be 'transformers' or 'vllm', got {generation!r}")
    if multiagent is not None:
        from agentrl.rollout.multiagent import SNAPSHOT, MultiAgentRollout, multiagent_env_fn, parse_seats

        env_maker = multiagent_env_fn(multiagent, **env_kwargs)
        probe = env_maker()
        wanted = parse_seats(seats, list(probe.possible_agents), opponent)
        probe.close()
        snapshot = None
        if SNAPSHOT in wanted.values():
            snapshot = TransformersBackend(
                model_path, device=device, dtype=dtype, max_batch_size=max_batch_size, batch_wait_ms=1.0
            )
        try:
            engine: Any = MultiAgentRollout(
                env_maker,
                backend,
                seats=wanted,
                opponent=opponent,
                snapshot_policy=snapshot,
                team_reward=team_reward,
                alternate_seats=alternate_seats,
                config=rollout_config,
            )
        except BaseException:
            if snapshot is not None:
                snapshot.close()
            backend.close()
            raise
        return backend, engine
    return backend, RolloutEngine(factory, backend, config=rollout_config)
