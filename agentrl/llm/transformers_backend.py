"""A local Hugging Face ``transformers`` chat model with exact token ids, logprobs and dynamic batching.

The sampling loop is our own (not ``model.generate``) so that every :class:`Generation` carries
the token ids that were actually sampled and the logprob of each under the distribution it was
sampled from: what an RL trainer needs to avoid re-tokenisation drift and to compute importance
ratios. Concurrent ``agenerate``/``generate`` calls from any number of threads and event loops go
through one queue; a single worker thread runs them in batches of up to ``max_batch_size`` rows
with left padding and a KV cache.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import inspect
import json
import queue
import secrets
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agentrl.core.errors import DependencyNotInstalled
from agentrl.llm.base import BackendError, ChatMessage, Generation, GenerationConfig
from agentrl.llm.kv_cache import PrefixStore, cache_from_rows, can_merge, merge_batches, row_kv

if TYPE_CHECKING:
    import torch

__all__ = ["TransformersBackend"]

_DTYPES = ("float32", "bfloat16", "float16")

# End-of-turn tokens of common chat formats. Many checkpoints list only one of them as EOS in their
# configs although the chat template ends turns with another, so each one that the tokenizer knows
# as an added (special) token also ends a generation.
_END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>", "<|end|>")


@dataclass
class _Request:
    messages: list[ChatMessage] | None
    config: GenerationConfig
    future: concurrent.futures.Future[Generation]
    prompt_ids: list[int] | None = None  # token-in requests skip the chat template
    images: list[Any] = field(default_factory=list)  # a VLM's processed images, in the order of their tokens


@dataclass
class _Row:
    """The state of one request inside a running batch."""

    request: _Request
    prompt_ids: list[int]
    max_new: int
    generator: torch.Generator | None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    reused: int = 0  # the prompt's first tokens whose KV came from the prefix store
    images_reused: int = 0  # a VLM row's images inside those tokens


class _Batch(NamedTuple):
    """A decoding batch between two tokens: its rows, their next tokens, the KV cache, mask and positions."""

    rows: list[_Row]
    next_tokens: list[int]
    cache: Any
    attention: Any
    last_position: Any


def find_stop_token_ids(tokenizer: Any, generation_eos: int | Sequence[int] | None = None) -> set[int]:
    """The ids that end a generation: EOS ids and the chat formats' end-of-turn tokens.

    That is the generation config's EOS id(s), the tokenizer's EOS, and every end-of-turn token of
    the common chat formats that the tokenizer knows as an added token. Generation backends stop
    on these and :class:`~agentrl.rollout.chat.ChatTokenizer` must know the same set, so all of
    them call this.
    """
    ids: set[int] = set()
    for source in (generation_eos, tokenizer.eos_token_id):
        if isinstance(source, int):
            ids.add(source)
        elif isinstance(source, (list, tuple)):
            ids.update(int(i) for i in source)
    added = tokenizer.get_added_vocab()
    ids.update(added[token] for token in _END_OF_TURN_TOKENS if token in added)
    return ids


def generation_eos_ids(model_path: Path) -> int | list[int] | None:
    """``eos_token_id`` of a model folder's ``generation_config.json`` (``None`` when there is none)."""
    try:
        return json.loads((model_path / "generation_config.json").read_text()).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        return None


def _import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise DependencyNotInstalled("torch and transformers", extra="llm") from exc
    return torch, transformers


class _CloseAtExit:
    """An atexit hook that closes a backend if it is still alive."""

    def __init__(self, ref: weakref.ReferenceType[TransformersBackend]) -> None:
        self.ref = ref

    def __call__(self) -> None:
        backend = self.ref()
        if backend is not None:
            backend.close()


def _load_tokenizer(transformers: Any, path: Path) -> Any:
    """``AutoTokenizer``, unless it disagrees with the folder's own ``tokenizer.json`` where it should not.

    transformers 5 rebuilds the tokenizer class of the config's model type (Qwen2Tokenizer next to
    a qwen2 config, with its own pre-tokenizer) even when the folder declares a generic
    ``PreTrainedTokenizerFast``/``TokenizersBackend`` saved from a custom ``tokenizer.json``; the ids
    then differ from those the model was trained with. In that case only, the generic class that
    reads ``tokenizer.json`` as is is used instead.
    """
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    try:
        declared = json.loads((path / "tokenizer_config.json").read_text()).get("tokenizer_class")
    except (OSError, ValueError):
        return tokenizer
    if declared not in ("PreTrainedTokenizerFast", "TokenizersBackend") or not (path / "tokenizer.json").is_file():
        return tokenizer
    if type(tokenizer) is transformers.PreTrainedTokenizerFast:  # already the generic class (an alias in v5)
        return tokenizer
    generic = transformers.PreTrainedTokenizerFast.from_pretrained(path)
    if _tokenization_spec(tokenizer) != _tokenization_spec(generic):
        return generic
    return tokenizer


def _tokenization_spec(tokenizer: Any) -> dict[str, Any] | None:
    """What decides the ids of a fast tokenizer: its normaliser, pre-tokenizer and model (vocab, merges)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    spec = json.loads(backend.to_str())
    model = spec.get("model") or {}
    # Merges are written either as "a b" strings or as [a, b] pairs depending on the version.
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model.get("merges") or []]
    return {
        "normalizer": spec.get("normalizer"),
        "pre_tokenizer": spec.get("pre_tokenizer"),
        "vocab": model.get("vocab"),
        "merges": merges,
    }


def _output_cache(output: Any) -> Any:
    """The KV cache of a forward pass (``output.cache`` in transformers 5.x, ``past_key_values`` before)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values



class TransformersBackend:
    """Chat with a local causal LM checkpoint through ``transformers``; batches concurrent requests.

    Every :class:`Generation` holds the exact prompt token ids (from the chat template with the
    generation prompt), the sampled token ids and their logprobs:

    * greedy decoding (``temperature == 0``): the log-softmax of the raw logits;
    * sampling: the log-probability under the distribution actually sampled from, i.e. after
      temperature scaling and top-p truncation (renormalised).

    A generation ends at an end-of-turn/EOS token (``"stop"``; the token is kept in ``token_ids``
    and ``logprobs`` but not in ``text``), at a ``config.stop`` string (``"stop"``; ``text`` ends
    before the stop string while ``token_ids``/``logprobs`` keep every sampled token up to and
    including the one that completed it, so decoding ``token_ids`` gives ``text`` + the stop
    string + possibly a few more characters of that last token), or after ``max_tokens`` tokens or
    at the model's context size (``"length"``).

    Seeds: each request samples from its own ``torch.Generator`` seeded with ``config.seed`` (a
    random seed when ``None``) and draws exactly one number per generated token, so a seeded
    request gives the same tokens whatever it is batched with, as long as batching does not change
    its logits beyond floating-point noise (left padding changes the reduction order a little; on
    CPU in float32 that flips a sample only when it falls within about 1e-6 of a boundary). Greedy
    decoding uses no generator.

    Batching: ``agenerate`` and ``generate`` put the request on one queue; a single worker thread
    takes up to ``max_batch_size`` queued requests (after each arrival it waits up to
    ``batch_wait_ms`` for another, and at most ``5 * batch_wait_ms`` in all) and runs them as one
    batch. Every sampling setting is applied per row, so requests
    with different :class:`GenerationConfig` share batches too. A row that finishes leaves the
    batch (its KV cache rows are dropped) and its caller is answered at once. With ``continuous``
    (the default), requests that arrive while a batch decodes join it between two tokens, up to
    ``max_batch_size`` rows: their prompts are prefilled in one forward pass and their KV caches are
    merged into the running one (left-padded to the same width), so an agent's next turn does not wait
    for the slowest row of the batch before it. A pending :meth:`load_weights` stops new rows
    joining, so the update waits for the running rows only. Prefix reuse: the KV cache of the last
    ``prefix_cache`` finished rows is kept (:class:`~agentrl.llm.kv_cache.PrefixStore`); a prompt that
    continues one of them (a multi-turn episode's next turn: the same token ids, then the env's
    observation) is prefilled from it, so only the new tokens run through the model. The store is
    emptied when the weights change. ``stats`` counts batches, requests, joined rows, reused prompt
    tokens and tokens.

    Args:
        model_path: a folder with a causal LM checkpoint (``config.json``, weights, tokenizer).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... or ``"auto"`` (CUDA when available).
        dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"``.
        max_batch_size: the most requests run together.
        batch_wait_ms: how long the worker waits after a queued request for another to join its
            batch (at most five times this after the first).
        continuous: let requests join a batch that is already decoding (continuous batching); ``False``
            runs each batch to its end first (static batches).
        prefix_cache: how many finished rows' KV caches to keep for reuse (0: none); a request whose prompt
            starts with such a row's tokens (an agent's next turn) runs only the rest through the model.
        chat_template: a Jinja chat template that replaces the tokenizer's own.
        name: a display name (the folder name by default).

    Raises:
        DependencyNotInstalled: torch or transformers is missing (``pip install 'agentrl-gym[llm]'``).
        ValueError: a bad ``dtype``/``max_batch_size``, or a tokenizer without a chat template when
            none is given.
    """

    def __init__(
        self,
        model_path: str | PathLike[str],
        *,
        device: str = "cpu",
        dtype: str = "float32",
        max_batch_size: int = 8,
        batch_wait_ms: float = 10.0,
        continuous: bool = True,
        prefix_cache: int = 64,
        chat_template: str | None = None,
        name: str | None = None,
    ) -> None:
        torch, transformers = _import_torch_transformers()
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, not {dtype!r}")
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model_path = Path(model_path)
        self.name = name or self.model_path.name
        self.device = device
        self.dtype = dtype
        self.max_batch_size = int(max_batch_size)
        self.batch_wait_ms = float(batch_wait_ms)
        self.continuous = bool(continuous)
        self._prefixes = PrefixStore(prefix_cache)
        self._kv_reusable: bool | None = None  # learnt from the first forward pass's cache (can_merge)
        self._chat_template_override = chat_template is not None

        self._tokenizer = _load_tokenizer(transformers, self.model_path)
        if chat_template is not None:
            self._tokenizer.chat_template = chat_template
        if not getattr(self._tokenizer, "chat_template", None):
            raise ValueError(
                f"the tokenizer in {self.model_path} has no chat template; pass chat_template=... "
                "(a Jinja template, e.g. ChatML) to TransformersBackend"
            )
        # Its per-tensor "Loading weights" bar would interleave with the benchmark's progress bar.
        transformers.utils.logging.disable_progress_bar()
        model = self._load_model(transformers, getattr(torch, dtype))
        self._model = model.to(device).eval()
        self._torch = torch

        self._stop_token_ids = self._find_stop_token_ids()
        pad = self._tokenizer.pad_token_id
        self._pad_id = int(pad if pad is not None else min(self._stop_token_ids, default=0))
        self._max_positions = int(getattr(self._model.config, "max_position_embeddings", 0) or 0) or None
        self._num_parameters = int(sum(p.numel() for p in self._model.parameters()))
        self._model_type = getattr(self._model.config, "model_type", None)
        suppressed = self.suppressed_token_ids
        self._suppressed = torch.tensor(suppressed, dtype=torch.long, device=device) if suppressed else None
        # transformers 5.x renamed the KV-cache argument from past_key_values to cache.
        forward_params = inspect.signature(self._model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"

        # The Rust tokenizer raises "Already borrowed" if two threads use it at once.
        self._tokenizer_lock = threading.Lock()
        # Held while a batch runs and while weights are replaced, so no batch sees half an update.
        self._model_lock = threading.Lock()
        self._lock = threading.Lock()  # guards _closed, _worker start and atomic multi-request submits
        self._queue: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._closed = False
        # Stop the worker before the interpreter tears down: a thread that has run torch ops and is
        # still alive during finalisation can abort the process ("terminate called without an
        # active exception"). A weak reference, so that the hook does not keep the model alive.
        self._atexit_hook = _CloseAtExit(weakref.ref(self))
        atexit.register(self._atexit_hook)
        #: Counters, updated by the worker: batches run, requests served, prompt/completion tokens,
        #: the largest batch seen and the seconds spent generating.
        self.stats: dict[str, float] = {
            "batches": 0,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "max_batch": 0,
            "joined": 0,
            "reused_tokens": 0,
            "generate_s": 0.0,
        }
        self._weights_waiting = 0  # load_weights calls waiting for the model: no row joins a batch then

    def _load_model(self, transformers: Any, dtype: Any) -> Any:
        """The model from :attr:`model_path` (a causal LM here; a VLM backend loads its own class)."""
        return transformers.AutoModelForCausalLM.from_pretrained(self.model_path, dtype=dtype)

    # ------------------------------------------------------------------ public API

    @property
    def tokenizer(self) -> Any:
        """The ``transformers`` tokenizer (trainers must tokenise with this very one)."""
        return self._tokenizer

    @property
    def model(self) -> Any:
        """The ``torch.nn.Module`` (in eval mode); ``None`` after :meth:`close`."""
        return self._model

    @property
    def suppressed_token_ids(self) -> tuple[int, ...]:
        """Token ids never sampled (none for a text model); trainers mask them too, so logprobs agree."""
        return ()

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        """The token ids that end a generation (EOS and end-of-turn tokens)."""
        return tuple(sorted(self._stop_token_ids))

    def encode_prompt(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The exact prompt token ids: the chat template with the generation prompt, tokenised.

        Args:
            messages: the conversation.

        Returns:
            The token ids the model sees before it starts to answer.
        """
        with self._tokenizer_lock:
            text = self._tokenizer.apply_chat_template(
                [dict(m) for m in messages], add_generation_prompt=True, tokenize=False
            )
            # add_special_tokens=False: the template already writes BOS where the model wants one.
            return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_tokens(self, messages: Sequence[ChatMessage]) -> int:
        """The exact number of prompt tokens, generation prompt included (via the chat template)."""
        return len(self.encode_prompt(messages))

    def generate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation; blocks until done (goes through the batching queue).

        Raises:
            BackendError: the backend is closed or the batch failed.
        """
        return self._submit([messages], config)[0].result()

    async def agenerate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation without blocking the event loop; concurrent calls are batched.

        Safe from any event loop and thread. Cancelling the awaiting task drops the request if its
        batch has not started yet.

        Raises:
            BackendError: the backend is closed or the batch failed.
        """
        future = self._submit([messages], config)[0]
        return await asyncio.wrap_future(future)

    def generate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """Continue exact prompt token ids (no chat template); blocks until done.

        This is the token-in path of an RL rollout: the caller keeps the conversation as the very
        token ids the model sampled plus the env's text tokenised once, and never re-tokenises it.
        It shares the batching queue with :meth:`generate`.

        Raises:
            ValueError: ``prompt_ids`` is empty or holds something other than token ids.
            BackendError: the backend is closed or the batch failed.
        """
        return self._submit_ids(prompt_ids, config).result()

    async def agenerate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """:meth:`generate_ids` without blocking the event loop; concurrent calls are batched.

        Raises:
            ValueError: ``prompt_ids`` is empty or holds something other than token ids.
            BackendError: the backend is closed or the batch failed.
        """
        return await asyncio.wrap_future(self._submit_ids(prompt_ids, config))

    def generate_batch(
        self, conversations: Sequence[Sequence[ChatMessage]], config: GenerationConfig
    ) -> list[Generation]:
        """Complete several conversations, batched ``max_batch_size`` at a time; results in order.

        Raises:
            BackendError: the backend is closed or a batch failed.
        """
        futures = self._submit(conversations, config)
        return [f.result() for f in futures]

    def load_weights(self, state_dict: dict[str, Any]) -> None:
        """Copy new weights into the model in place (a trainer's policy update), between batches.

        Keys are those of the model's own ``state_dict()``; every parameter and buffer must be
        present with the same shape (a strict load), so a mismatch fails loudly instead of
        generating from a half-updated policy.

        Raises:
            BackendError: the backend is closed.
            RuntimeError: missing, unexpected or mis-shaped keys.
        """
        torch = self._torch
        with self._lock:
            self._weights_waiting += 1
        try:
            with self._model_lock:
                if self._model is None:
                    raise BackendError(f"{self.name}: backend closed")
                with torch.no_grad():
                    self._model.load_state_dict(state_dict, strict=True)
                self._prefixes.clear()  # the kept keys and values are the old weights'
        finally:
            with self._lock:
                self._weights_waiting -= 1

    def config(self) -> dict[str, Any]:
        """A JSON-serialisable description for result files."""
        return {
            "backend": "transformers",
            "name": self.name,
            "model_path": str(self.model_path),
            "model_type": self._model_type,
            "num_parameters": self._num_parameters,
            "device": self.device,
            "dtype": self.dtype,
            "max_batch_size": self.max_batch_size,
            "batch_wait_ms": self.batch_wait_ms,
            "continuous": self.continuous,
            "prefix_cache": self._prefixes.capacity,
            "chat_template_override": self._chat_template_override,
        }

    def close(self) -> None:
        """Stop the worker, fail queued requests with :class:`BackendError`, free the model; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            worker = self._worker
        atexit.unregister(self._atexit_hook)
        self._queue.put(None)
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        self._fail_queued(BackendError(f"{self.name}: backend closed"))
        self._model = None

    def __enter__(self) -> TransformersBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ queue and worker

    def _submit(
        self, conversations: Sequence[Sequence[ChatMessage]], config: GenerationConfig
    ) -> list[concurrent.futures.Future[Generation]]:
        futures: list[concurrent.futures.Future[Generation]] = []
        with self._lock:
            if self._closed:
                raise BackendError(f"{self.name}: backend closed")
            self._start_worker()
            # Under the lock, so that one generate_batch call's requests are queued back to back.
            for messages in conversations:
                future: concurrent.futures.Future[Generation] = concurrent.futures.Future()
                self._queue.put(
                    _Request([ChatMessage(role=m["role"], content=m["content"]) for m in messages], config, future)
                )
                futures.append(future)
        return futures

    def _submit_ids(
        self, prompt_ids: Sequence[int], config: GenerationConfig, images: Sequence[Any] = ()
    ) -> concurrent.futures.Future[Generation]:
        vocab = len(self._tokenizer)
        ids = list(prompt_ids)
        if not ids or not all(isinstance(i, int) and 0 <= i < vocab for i in ids):
            bad = next((i for i in ids if not (isinstance(i, int) and 0 <= i < vocab)), None)
            raise ValueError(
                f"prompt_ids must be a non-empty sequence of token ids in [0, {vocab}); got "
                + ("an empty sequence" if not ids else f"{bad!r}")
            )
        future: concurrent.futures.Future[Generation] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise BackendError(f"{self.name}: backend closed")
            self._start_worker()
            self._queue.put(_Request(None, config, future, prompt_ids=ids, images=list(images)))
        return future

    def _start_worker(self) -> None:
        """Start the batching thread on first use (call with ``self._lock`` held)."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name=f"agentrl-{self.name}", daemon=True)
            self._worker.start()

    def _fail_queued(self, error: BaseException) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and item.future.set_running_or_notify_cancel():
                item.future.set_exception(error)

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop_after = False
            # Collect while requests keep coming: each arrival extends the wait by batch_wait_ms (a
            # rollout's episodes ask a fraction of a millisecond apart), up to 5x that in total.
            wait = self.batch_wait_ms / 1000.0
            cap = time.monotonic() + 5 * wait
            deadline = min(time.monotonic() + wait, cap)
            while len(batch) < self.max_batch_size:
                remaining = deadline - time.monotonic()
                try:
                    item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop_after = True
                    break
                batch.append(item)
                deadline = min(time.monotonic() + wait, cap)
            # Skip requests whose callers gave up (cancelled) before the batch started.
            batch = [r for r in batch if r.future.set_running_or_notify_cancel()]
            if batch:
                try:
                    with self._model_lock:
                        self._run_batch(batch)
                except BaseException as exc:
                    error = BackendError(f"{self.name}: generation failed: {type(exc).__name__}: {exc}")
                    error.__cause__ = exc
                    for request in batch:
                        if not request.future.done():
                            request.future.set_exception(error)
            if stop_after:
                return

    # ------------------------------------------------------------------ generation

    def _find_stop_token_ids(self) -> set[int]:
        generation_config = getattr(self._model, "generation_config", None)
        return find_stop_token_ids(self._tokenizer, getattr(generation_config, "eos_token_id", None))

    def _new_row(self, request: _Request) -> _Row | None:
        """Encode one request; answer it at once when it needs no model call (or cannot have one)."""
        try:
            prompt = request.prompt_ids if request.messages is None else self.encode_prompt(request.messages)
        except Exception as exc:
            request.future.set_exception(BackendError(f"{self.name}: cannot apply the chat template: {exc}"))
            return None
        config = request.config
        max_new = config.max_tokens
        if self._max_positions is not None:
            if len(prompt) >= self._max_positions:
                request.future.set_exception(
                    BackendError(
                        f"{self.name}: the prompt has {len(prompt)} tokens; the model's context is "
                        f"{self._max_positions}"
                    )
                )
                return None
            max_new = min(max_new, self._max_positions - len(prompt))
        generator = None
        if config.temperature > 0:
            generator = self._torch.Generator(device=self.device)
            generator.manual_seed(config.seed if config.seed is not None else secrets.randbits(63))
        row = _Row(request, prompt, max_new, generator)
        if max_new <= 0:
            self._finish(row, "length", "")
            return None
        return row

    def _finish(self, row: _Row, reason: str, text: str) -> None:
        self.stats["requests"] += 1
        self.stats["prompt_tokens"] += len(row.prompt_ids)
        self.stats["completion_tokens"] += len(row.token_ids)
        row.request.future.set_result(
            Generation(
                text=text,
                finish_reason=reason,
                prompt_token_ids=tuple(row.prompt_ids),
                token_ids=tuple(row.token_ids),
                logprobs=tuple(row.logprobs),
                usage={"prompt_tokens": len(row.prompt_ids), "completion_tokens": len(row.token_ids)},
            )
        )

    def _decode(self, ids: list[int]) -> str:
        with self._tokenizer_lock:
            return str(self._tokenizer.decode(ids, skip_special_tokens=True))

    def _after_token(self, row: _Row) -> bool:
        """Apply the stop rules after a row's newest token; True when the row is finished (and answered)."""
        config = row.request.config
        if row.token_ids[-1] in self._stop_token_ids:
            self._finish(row, "stop", self._decode(row.token_ids[:-1]))
            return True
        if config.stop:
            text = self._decode(row.token_ids)
            hits = [i for i in (text.find(s) for s in config.stop if s) if i >= 0]
            if hits:
                self._finish(row, "stop", text[: min(hits)])
                return True
        if len(row.token_ids) >= row.max_new:
            self._finish(row, "length", self._decode(row.token_ids))
            return True
        return False

    def _sample(self, logits: torch.Tensor, row: _Row) -> tuple[int, float]:
        """Pick one token from a row's float32 logits; return it and its logprob under the sampler."""
        torch = self._torch
        config = row.request.config
        if self._suppressed is not None:  # tokens the model may never write (a VLM's image tokens)
            logits = logits.index_fill(0, self._suppressed, float("-inf"))
        if config.temperature <= 0:
            token = int(torch.argmax(logits))
            return token, float(torch.log_softmax(logits, dim=-1)[token])
        logp = torch.log_softmax(logits / config.temperature, dim=-1)
        if config.top_p < 1.0:
            sorted_logp, order = torch.sort(logp, descending=True)
            probs = sorted_logp.exp()
            # Keep the smallest prefix whose mass reaches top_p (always at least the top token).
            keep = (probs.cumsum(0) - probs) < config.top_p
            kept = torch.full_like(logp, float("-inf"))
            kept[order[keep]] = sorted_logp[keep]
            logp = torch.log_softmax(kept, dim=-1)
        token = int(torch.multinomial(logp.exp(), 1, generator=row.generator))
        return token, float(logp[token])

    def _prefill_inputs(self, rows: list[_Row]) -> dict[str, Any]:
        """More model inputs for a batch's first forward pass (a VLM's pixels); none for a text model."""
        return {}

    def _prefill(self, rows: list[_Row]) -> tuple[Any, Any, Any, Any]:
        """One forward pass over the rows' prompts: the last logits, the KV cache, the mask, the last positions.

        Left padding: every row's last prompt token sits in the last column, so one decode step appends
        one column for all; positions count real tokens only, so padding does not shift them. A row that
        continues a kept prefix (:class:`~agentrl.llm.kv_cache.PrefixStore`) starts from its KV: the cache
        holds the reused tokens right-aligned in the first columns, the new tokens follow, right-aligned too,
        and the mask hides the padding in between.
        """
        torch = self._torch
        reused = self._find_reuse(rows)
        width = max(len(r.prompt_ids) - r.reused for r in rows)
        prefix = max(r.reused for r in rows)
        input_ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), prefix + width), dtype=torch.long)
        positions = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            new = row.prompt_ids[row.reused :]
            input_ids[i, width - len(new) :] = torch.tensor(new, dtype=torch.long)
            attention[i, prefix - row.reused : prefix] = 1
            attention[i, prefix + width - len(new) :] = 1
            positions[i, width - len(new) :] = torch.arange(row.reused, len(row.prompt_ids))
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        positions = positions.to(self.device)
        cache_kwargs: dict[str, Any] = {}
        if prefix:
            from transformers import DynamicCache

            cache_kwargs[self._cache_kwarg] = cache_from_rows(DynamicCache, reused, [r.reused for r in rows])
            self.stats["reused_tokens"] += sum(r.reused for r in rows)
        out = self._model(
            input_ids=input_ids,
            attention_mask=attention,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **cache_kwargs,
            **self._prefill_inputs(rows),
        )
        cache = _output_cache(out)
        if self._kv_reusable is None:
            self._kv_reusable = can_merge(cache)
        return out.logits[:, -1, :].float(), cache, attention, positions[:, -1]

    def _find_reuse(self, rows: list[_Row]) -> list[Any]:
        """Each row's kept KV to start from (``None``: none), setting ``row.reused`` to the tokens it covers."""
        found: list[Any] = []
        for row in rows:
            kv = None
            if self._kv_reusable and len(self._prefixes):
                shared, kv = self._prefixes.longest(self._reuse_key(row, row.prompt_ids))
                # at least the last prompt token runs through the model: its logits give the first token
                row.reused = self._reuse_boundary(row, min(shared, len(row.prompt_ids) - 1)) if kv is not None else 0
                if row.reused == 0:
                    kv = None
            found.append(kv)
        return found

    def _reuse_key(self, row: _Row, ids: list[int]) -> Any:
        """What the prefix store compares: the token ids (a VLM's image tokens stand for their image)."""
        return ids

    def _reuse_boundary(self, row: _Row, shared: int) -> int:
        """How many of the ``shared`` prompt tokens to take from the kept KV (a VLM keeps images whole)."""
        return shared

    def _keep_finished(self, rows: list[_Row], finished: list[int], cache: Any, attention: Any) -> None:
        """Keep the KV of rows that just finished, for a next turn that continues them."""
        if not self._kv_reusable or self._prefixes.capacity <= 0:
            return
        for i in finished:
            row = rows[i]
            ids = row.prompt_ids + row.token_ids[:-1]  # the last sampled token was never fed to the model
            if int(attention[i].sum()) == len(ids):
                self._prefixes.put(self._reuse_key(row, ids), row_kv(cache, i, attention[i]))

    def _sample_rows(self, rows: list[_Row], logits: Any) -> tuple[list[int], list[int]]:
        """Sample each row's next token; the indices of the rows that go on, and their tokens."""
        keep: list[int] = []
        tokens: list[int] = []
        for i, row in enumerate(rows):
            token, logprob = self._sample(logits[i], row)
            row.token_ids.append(token)
            row.logprobs.append(logprob)
            if not self._after_token(row):
                keep.append(i)
                tokens.append(token)
        return keep, tokens

    def _queued_to_join(self, room: int, running: list[_Request]) -> list[_Request]:
        """Requests waiting in the queue that may join the running batch now (none while weights wait).

        Each is appended to ``running`` too, the batch's requests, so that a failure answers it as well.
        """
        joined: list[_Request] = []
        while len(joined) < room and not self._weights_waiting and not self._closed:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:  # close(): put the stop back for the worker loop
                self._queue.put(None)
                break
            if item.future.set_running_or_notify_cancel():
                joined.append(item)
                running.append(item)
        return joined

    def _join(self, batch: _Batch, running: list[_Request]) -> _Batch:
        """Let queued requests join a decoding batch: prefill them, sample their first token, merge the caches."""
        torch = self._torch
        room = self.max_batch_size - len(batch.rows)
        rows = [row for row in (self._new_row(r) for r in self._queued_to_join(room, running)) if row is not None]
        if not rows:
            return batch
        self.stats["joined"] += len(rows)
        logits, cache, attention, last_position = self._prefill(rows)
        keep, tokens = self._sample_rows(rows, logits)
        if not keep:  # each newcomer finished on its first token
            return batch
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        cache.batch_select_indices(index)
        rows, attention, last_position = [rows[i] for i in keep], attention[index], last_position[index]
        attention = merge_batches(batch.cache, batch.attention, cache, attention)
        cache, last_position = batch.cache, torch.cat([batch.last_position, last_position])
        self.stats["max_batch"] = max(self.stats["max_batch"], len(batch.rows) + len(rows))
        return _Batch(batch.rows + rows, batch.next_tokens + tokens, cache, attention, last_position)

    def _run_batch(self, requests: list[_Request]) -> None:
        torch = self._torch
        model = self._model
        if model is None:
            raise BackendError(f"{self.name}: backend closed")
        started = time.perf_counter()
        rows = [row for row in (self._new_row(r) for r in requests) if row is not None]
        if not rows:
            return
        self.stats["batches"] += 1
        self.stats["max_batch"] = max(self.stats["max_batch"], len(rows))

        with torch.inference_mode():
            logits, cache, attention, last_position = self._prefill(rows)
            joinable = self.continuous and can_merge(cache)
            active = rows
            while True:
                if self._closed:  # close() was called: answer the rest now rather than finish the batch
                    for row in active:
                        row.request.future.set_exception(BackendError(f"{self.name}: backend closed"))
                    break
                keep, next_tokens = self._sample_rows(active, logits)
                if len(keep) < len(active):
                    kept = set(keep)
                    self._keep_finished(active, [i for i in range(len(active)) if i not in kept], cache, attention)
                    # Finished rows leave the batch, KV cache included, so they cost nothing more.
                    active = [active[i] for i in keep]
                    if active:
                        index = torch.tensor(keep, dtype=torch.long, device=self.device)
                        cache.batch_select_indices(index)
                        attention = attention[index]
                        last_position = last_position[index]
                if joinable and 0 < len(active) < self.max_batch_size:  # an empty batch ends: the next starts afresh
                    batch = self._join(_Batch(active, next_tokens, cache, attention, last_position), requests)
                    active, next_tokens, cache, attention, last_position = batch
                if not active:
                    break
                attention = torch.cat([attention, attention.new_ones((len(active), 1))], dim=1)
                last_position = last_position + 1
                out = model(
                    input_ids=torch.tensor(next_tokens, dtype=torch.long, device=self.device)[:, None],
                    attention_mask=attention,
                    position_ids=last_position[:, None],
                    use_cache=True,
                    **{self._cache_kwarg: cache},
                )
                logits = out.logits[:, -1, :].float()
        self.stats["generate_s"] += time.perf_counter() - started
