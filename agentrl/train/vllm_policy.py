"""Generation through vLLM during RL training on one GPU, colocated with the trainer.

:class:`VLLMPolicy` is the GPU twin of
:class:`~agentrl.llm.transformers_backend.TransformersBackend` for the rollout side
of a trainer (``--generation vllm``): it speaks the same token-in protocol
(:class:`~agentrl.rollout.engine.TokenPolicy`: ``agenerate_ids(prompt_ids, config)``), exposes
``tokenizer`` and ``stop_token_ids`` for :class:`~agentrl.rollout.chat.ChatTokenizer`, and takes
the trainer's new weights with ``load_weights(state_dict)`` after every optimizer step.

How it works (and which vLLM it assumes):

* **Engine in this process.** vLLM's V1 engine (vLLM >= 0.8; the default since then) normally
  runs its ``EngineCore`` in a child process. With ``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set here
  before vLLM is imported, ``vllm.LLM`` keeps the core, the executor and the model in this
  process, so the trainer's CUDA tensors can be copied into the model directly, without
  serialisation: ``llm.llm_engine.model_executor.driver_worker.model_runner`` is reachable (vLLM
  sets ``LLMEngine.model_executor`` only when ``multiprocess_mode`` is off, "for v0
  compatibility"). This is TRL's ``vllm_mode="colocate"`` (TRL 1.16,
  ``trl/generation/vllm_generation.py``: ``sync_weights``).
* **Continuous batching from many coroutines.** One worker thread owns the engine: it moves
  queued requests into it with ``LLMEngine.add_request(request_id, TokensPrompt, SamplingParams)``
  and calls ``LLMEngine.step()`` until they finish, so requests arriving while others run join
  the running batch at the next step. Each caller's ``asyncio`` future is answered when its
  request finishes. Only this thread touches vLLM after construction.
* **Weights.** ``load_weights`` hands the state dict to the worker, which stops admitting new
  requests, lets the running ones finish (so no sequence is sampled by two policies, as with
  ``TransformersBackend``, where a weight update waits for the batch), then calls the vLLM
  model's own ``load_weights(iterable of (name, tensor))``. That method takes Hugging Face
  checkpoint names (it is what vLLM uses to read ``*.safetensors``) and fuses them into its own
  layout (``q/k/v_proj`` into ``qkv_proj``, ``gate/up_proj`` into ``gate_up_proj``, tied
  ``lm_head`` skipped), so the trainer's ``state_dict()`` keys are passed as they are. Then the
  prefix cache is reset (``LLM.reset_prefix_cache``): cached KV blocks were computed by the old
  weights.
* **Logprobs.** Each request asks for ``SamplingParams(logprobs=0)``: the logprob of the sampled
  token only (vLLM always includes the sampled token). The engine is built with
  ``logprobs_mode="processed_logprobs"`` (engine argument since vLLM 0.10.x): logprobs of the
  distribution the sampler actually drew from, after temperature and top-p/top-k, as TRL does
  ("so temperature scaling/logit tweaking affects the TIS log probs") and as
  ``TransformersBackend._sample`` returns them. The default, ``"raw_logprobs"``, is the
  unscaled model distribution, which would bias importance ratios whenever temperature != 1.
  Greedy requests (temperature 0) get the unscaled log-softmax in both backends. Note: in the
  first releases with the option (0.10.0/0.10.1), "processed" meant after penalties but before
  temperature; from about 0.10.2 on it is after temperature and top-k/top-p (in
  ``TopKTopPSampler``). Use a recent vLLM.

Not verified on a GPU from this repository's CI: the private attribute path to the model
(``model_executor.driver_worker.model_runner``), which TRL relies on and vLLM keeps for
compatibility, is the most likely thing to move in a future vLLM; :func:`_vllm_model` fails
with a message naming the versions it expects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import itertools
import math
import os
import queue
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.llm.base import BackendError, Generation, GenerationConfig

__all__ = ["VLLMPolicy"]

_INSTALL = "pip install vllm (on a machine with a CUDA GPU; vLLM brings its own CUDA build of torch)"

# vLLM's CompletionOutput.finish_reason: "stop" (EOS, a stop token or a stop string), "length"
# (max_tokens or the context), "abort" (cancelled), None (not finished). Ours: stop/length/error.
_FINISH_REASONS = {"stop": "stop", "length": "length"}


def _to_generation(output: Any, prompt_ids: Sequence[int]) -> Generation:
    """Translate one finished vLLM ``RequestOutput`` into a :class:`Generation`.

    Reads ``output.outputs[0]`` (a ``CompletionOutput``): ``token_ids`` (the sampled ids, a stop
    token included, as in ``TransformersBackend``), ``text`` (detokenised with special tokens
    skipped; a stop string is cut off, as vLLM does by default), ``finish_reason`` (``"stop"``,
    ``"length"``; anything else, such as ``"abort"``, becomes ``"error"``) and ``logprobs``: one
    mapping per generated token from token id to a ``Logprob`` (``.logprob``), from which the
    sampled token's entry is taken. A missing entry (or no logprobs at all) raises, because a
    trainer must not silently get a trajectory without the sampler's logprobs.

    Args:
        output: a ``vllm.RequestOutput`` (or any object of the same shape).
        prompt_ids: the prompt the request was made with (``output.prompt_token_ids`` when vLLM
            reports it, else these).

    Returns:
        The :class:`Generation`.

    Raises:
        BackendError: the output holds no completion, or no logprob for a sampled token.
    """
    if not getattr(output, "outputs", None):
        raise BackendError("vllm: the request output holds no completion")
    completion = output.outputs[0]
    token_ids = tuple(int(t) for t in completion.token_ids)
    positions = completion.logprobs
    if positions is None or len(positions) != len(token_ids):
        got = "none" if positions is None else len(positions)
        raise BackendError(f"vllm: expected one logprob per generated token ({len(token_ids)}), got {got}")
    logprobs = []
    for i, (token, position) in enumerate(zip(token_ids, positions, strict=True)):
        entry = position.get(token) if position is not None else None
        if entry is None:
            raise BackendError(f"vllm: no logprob for the sampled token {token} at position {i}")
        value = float(entry.logprob)
        logprobs.append(value if not math.isnan(value) else float("-inf"))
    reported = getattr(output, "prompt_token_ids", None)
    prompt = tuple(int(t) for t in (reported if reported is not None else prompt_ids))
    return Generation(
        text=str(completion.text or ""),
        finish_reason=_FINISH_REASONS.get(str(completion.finish_reason), "error"),
        prompt_token_ids=prompt,
        token_ids=token_ids,
        logprobs=tuple(logprobs),
        usage={"prompt_tokens": len(prompt), "completion_tokens": len(token_ids)},
    )


def _vllm_model(llm: Any) -> Any:
    """The ``torch.nn.Module`` vLLM generates with, in this process (multiprocessing off).

    ``LLM.llm_engine.model_executor`` exists in vLLM V1 only when the engine core runs in process
    (``VLLM_ENABLE_V1_MULTIPROCESSING=0``); its ``driver_worker`` (a ``WorkerWrapperBase`` that
    forwards attributes to the GPU worker) holds the ``GPUModelRunner``, whose ``get_model()``
    returns the model without its CUDA-graph wrapper (``.model`` on versions without it).
    """
    try:
        runner = llm.llm_engine.model_executor.driver_worker.model_runner
    except AttributeError as exc:
        raise RuntimeError(
            "cannot reach vLLM's model in this process (llm.llm_engine.model_executor.driver_worker"
            ".model_runner); VLLMPolicy needs VLLM_ENABLE_V1_MULTIPROCESSING=0 and a vLLM whose V1 "
            f"LLMEngine exposes model_executor in process (0.8 and later): {exc}"
        ) from exc
    get_model = getattr(runner, "get_model", None)
    return get_model() if callable(get_model) else runner.model


@dataclass
class _Request:
    prompt_ids: list[int]
    config: GenerationConfig
    future: concurrent.futures.Future[Generation]


@dataclass
class _WeightUpdate:
    state_dict: dict[str, Any]
    future: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)


class VLLMPolicy:
    """A :class:`~agentrl.rollout.engine.TokenPolicy` that samples with vLLM on the local GPU.

    Built from the same model folder as the trainer's policy; the trainer calls
    :meth:`load_weights` with the merged weights after every optimizer step. See the module
    docstring for the engine layout, the weight update and the logprob semantics.

    Args:
        model_path: a Hugging Face model folder (config, weights, tokenizer).
        gpu_memory_utilization: the fraction of the GPU's memory vLLM may take (weights, KV cache,
            activations); the trainer shares the GPU, so keep it well below vLLM's default 0.9.
        enforce_eager: run without CUDA graphs (faster start, slower decoding; also avoids
            capturing graphs that a later weight update would have to respect, which in-place
            copies do anyway).
        dtype: vLLM's ``dtype`` (``"auto"``: the checkpoint's; ``"bfloat16"``, ``"float16"``...).
        max_model_len: the longest prompt plus completion (``None``: the model's).
        max_num_seqs: the most sequences decoded at once.
        seed: the engine's seed (requests with ``config.seed`` use their own).
        enable_prefix_caching: reuse KV blocks of shared prompt prefixes (multi-turn episodes
            and GRPO groups share long prefixes); reset after every weight update.
        name: a display name (the folder name by default).
        **engine_kwargs: more ``vllm.LLM`` / ``EngineArgs`` arguments, passed as they are.

    Raises:
        DependencyNotInstalled: vLLM is not installed.
        RuntimeError: no CUDA GPU.
    """

    def __init__(
        self,
        model_path: str | PathLike[str],
        *,
        gpu_memory_utilization: float = 0.3,
        enforce_eager: bool = False,
        dtype: str = "auto",
        max_model_len: int | None = None,
        max_num_seqs: int = 256,
        seed: int = 0,
        enable_prefix_caching: bool = True,
        name: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
        # The engine core must live in this process so that load_weights can reach the model; vLLM
        # reads this variable when the engine is built (set before the import, to be safe).
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        try:
            import vllm
        except ImportError as exc:
            raise DependencyNotInstalled("vllm", extra="train", command=_INSTALL) from exc
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("vLLM generation needs a CUDA GPU; use the default transformers generation on CPU")
        from agentrl.llm.transformers_backend import _import_torch_transformers as _imports
        from agentrl.llm.transformers_backend import (
            _load_tokenizer,
            find_stop_token_ids,
            generation_eos_ids,
        )

        self._vllm = vllm
        self.model_path = Path(model_path)
        self.name = name or self.model_path.name
        _, transformers = _imports()
        # Our own tokenizer object (the one the trainer and ChatTokenizer tokenise with), loaded the
        # same way as TransformersBackend's; vLLM loads its own copy for detokenisation.
        self._tokenizer = _load_tokenizer(transformers, self.model_path)
        self._engine_args: dict[str, Any] = {
            "model": str(self.model_path),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "enforce_eager": bool(enforce_eager),
            "dtype": dtype,
            "max_model_len": max_model_len,
            "max_num_seqs": int(max_num_seqs),
            "seed": int(seed),
            "enable_prefix_caching": bool(enable_prefix_caching),
            # Logprobs of the distribution actually sampled from (see the module docstring).
            "logprobs_mode": "processed_logprobs",
            **engine_kwargs,
        }
        self._llm = vllm.LLM(**self._engine_args)
        self._model = _vllm_model(self._llm)  # fail now, not at the first weight update
        self._max_model_len = int(self._llm.llm_engine.model_config.max_model_len)
        self._stop_token_ids = find_stop_token_ids(self._tokenizer, generation_eos_ids(self.model_path))

        self._ids = itertools.count()
        self._queue: queue.SimpleQueue[_Request | _WeightUpdate | None] = queue.SimpleQueue()
        self._lock = threading.Lock()  # guards _closed and the worker's start
        self._closed = False
        self._worker: threading.Thread | None = None
        #: Counters, updated by the worker: requests served, prompt/completion tokens, weight updates.
        self.stats: dict[str, float] = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "weight_updates": 0}

    # ------------------------------------------------------------------ public API

    @property
    def tokenizer(self) -> Any:
        """The ``transformers`` tokenizer of the model (trainers must tokenise with this very one)."""
        return self._tokenizer

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """The token ids that end a generation (EOS and end-of-turn tokens), passed to every request."""
        return tuple(sorted(self._stop_token_ids))

    async def agenerate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """Sample a completion of exactly ``prompt_ids``; concurrent calls share vLLM's running batch.

        Args:
            prompt_ids: the prompt's token ids (not re-tokenised).
            config: the sampling settings; ``stop`` strings end the text before them.

        Returns:
            The :class:`Generation`, with the sampled token ids and their sampler logprobs.

        Raises:
            ValueError: ``prompt_ids`` is empty or holds something other than token ids.
            BackendError: the policy is closed, the prompt does not fit the context, or vLLM failed.
        """
        return await asyncio.wrap_future(self._submit(prompt_ids, config))

    def generate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """:meth:`agenerate_ids`, blocking (for scripts and tests)."""
        return self._submit(prompt_ids, config).result()

    def load_weights(self, state_dict: dict[str, Any]) -> None:
        """Copy the trainer's new weights into vLLM's model, between generations; blocks until done.

        Running requests finish with the old weights first and new requests wait, so every
        completion comes from one policy. Keys are those of the Hugging Face model's own
        ``state_dict()`` (``policy_state_dict`` gives them for LoRA too); tensors may live on any
        device and dtype (vLLM copies them into its parameters). The prefix cache is reset after.

        Raises:
            BackendError: the policy is closed.
            RuntimeError: vLLM rejected the weights (an unknown name or a wrong shape).
        """
        update = _WeightUpdate(dict(state_dict))
        with self._lock:
            if self._closed:
                raise BackendError(f"{self.name}: policy closed")
            self._start_worker()
            self._queue.put(update)
        update.future.result()

    def config(self) -> dict[str, Any]:
        """A JSON-serialisable description for result files."""
        return {
            "backend": "vllm",
            "name": self.name,
            "vllm_version": str(getattr(self._vllm, "__version__", "unknown")),
            **{k: v for k, v in self._engine_args.items() if isinstance(v, (str, int, float, bool, type(None)))},
        }

    def close(self) -> None:
        """Stop the worker, fail queued and running requests with :class:`BackendError`, free vLLM; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            worker = self._worker
        self._queue.put(None)
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        self._fail_queued()
        self._model = None
        self._llm = None

    def __enter__(self) -> VLLMPolicy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ worker

    def _submit(self, prompt_ids: Sequence[int], config: GenerationConfig) -> concurrent.futures.Future[Generation]:
        ids = [int(t) for t in prompt_ids]
        if not ids:
            raise ValueError("prompt_ids is empty")
        future: concurrent.futures.Future[Generation] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise BackendError(f"{self.name}: policy closed")
            self._start_worker()
            self._queue.put(_Request(ids, config, future))
        return future

    def _start_worker(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._loop, name=f"vllm-{self.name}", daemon=True)
            self._worker.start()

    def _sampling_params(self, config: GenerationConfig, max_tokens: int) -> Any:
        vllm = self._vllm
        kwargs: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": max(float(config.temperature), 0.0),
            "top_p": float(config.top_p),
            "seed": config.seed,
            "stop": list(config.stop) or None,
            "stop_token_ids": list(self._stop_token_ids),
            "logprobs": 0,  # the sampled token's logprob only
            "detokenize": True,  # stop strings and text need it
            "skip_special_tokens": True,
        }
        # Answer once per request, at the end, instead of a cumulative output every step.
        kind = getattr(importlib.import_module("vllm.sampling_params"), "RequestOutputKind", None)
        if kind is not None:
            kwargs["output_kind"] = kind.FINAL_ONLY
        return vllm.SamplingParams(**kwargs)

    def _admit(self, engine: Any, request: _Request, running: dict[str, _Request]) -> None:
        """Add one request to the engine, or answer it at once when it cannot or need not run."""
        room = self._max_model_len - len(request.prompt_ids)
        if room <= 0:
            request.future.set_exception(
                BackendError(
                    f"{self.name}: the prompt has {len(request.prompt_ids)} tokens; the context is "
                    f"{self._max_model_len}"
                )
            )
            return
        max_tokens = min(request.config.max_tokens, room)
        if max_tokens <= 0:
            request.future.set_result(
                Generation(text="", finish_reason="length", prompt_token_ids=tuple(request.prompt_ids))
            )
            return
        request_id = f"agentrl-{next(self._ids)}"
        try:
            prompt = self._vllm.TokensPrompt(prompt_token_ids=request.prompt_ids)
            engine.add_request(request_id, prompt, self._sampling_params(request.config, max_tokens))
        except Exception as exc:
            request.future.set_exception(BackendError(f"{self.name}: vLLM refused the request: {exc}"))
            return
        running[request_id] = request

    def _apply_update(self, update: _WeightUpdate) -> None:
        try:
            model = self._model
            if model is None:
                raise BackendError(f"{self.name}: policy closed")
            # The same call TRL's colocate mode makes, one (name, tensor) pair at a time there; the
            # whole iterable here (vLLM's load_weights consumes it lazily).
            model.load_weights(_named_tensors(update.state_dict))
            self._llm.reset_prefix_cache()
            self.stats["weight_updates"] += 1
        except BaseException as exc:
            update.future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
        else:
            update.future.set_result(None)

    def _loop(self) -> None:
        engine = self._llm.llm_engine
        running: dict[str, _Request] = {}
        backlog: list[_Request] = []  # requests held back while a weight update waits
        update: _WeightUpdate | None = None
        stop = False
        while not stop:
            # Take what is queued; block only when there is nothing to do.
            block = not running and update is None and not backlog
            try:
                item = self._queue.get(block=block)
                while True:
                    if item is None:
                        stop = True
                    elif isinstance(item, _WeightUpdate):
                        if update is not None:  # a newer full state dict supersedes a waiting one
                            update.future.set_result(None)
                        update = item
                    else:
                        backlog.append(item)
                    item = self._queue.get_nowait()
            except queue.Empty:
                pass
            if stop:
                break
            if update is None:
                for request in backlog:
                    self._admit(engine, request, running)
                backlog.clear()
            elif not running:  # drained: every completion so far came from the old weights
                self._apply_update(update)
                update = None
                continue
            if not running:
                continue
            try:
                outputs = engine.step()
            except Exception as exc:
                error = BackendError(f"{self.name}: vLLM step failed: {exc}")
                for request in running.values():
                    request.future.set_exception(error)
                running.clear()
                continue
            for output in outputs:
                if not getattr(output, "finished", True):
                    continue
                request = running.pop(str(output.request_id), None)
                if request is None:
                    continue
                try:
                    generation = _to_generation(output, request.prompt_ids)
                except BackendError as exc:
                    request.future.set_exception(exc)
                    continue
                self.stats["requests"] += 1
                self.stats["prompt_tokens"] += len(generation.prompt_token_ids)
                self.stats["completion_tokens"] += len(generation.token_ids)
                request.future.set_result(generation)
        closed = BackendError(f"{self.name}: policy closed")
        if running:
            try:
                engine.abort_request(list(running))
            except Exception:  # the engine is going away anyway
                pass
        for request in [*running.values(), *backlog]:
            request.future.set_exception(closed)
        if update is not None:
            update.future.set_exception(closed)

    def _fail_queued(self) -> None:
        closed = BackendError(f"{self.name}: policy closed")
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and not item.future.done():
                item.future.set_exception(closed)


def _named_tensors(state_dict: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    """``(name, tensor)`` pairs for vLLM's ``load_weights``, detached (the trainer's tensors are not copied)."""
    for name, tensor in state_dict.items():
        yield name, tensor.detach()
