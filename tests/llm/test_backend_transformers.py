"""TransformersBackend and build_tiny_model on tiny random chat models (no download, a few seconds)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from agentrl.llm.base import BackendError, GenerationConfig, LLMBackend, describe_config
from agentrl.llm.tiny import build_tiny_model, tiny_corpus
from agentrl.llm.transformers_backend import TransformersBackend

pytestmark = pytest.mark.timeout(120)

FAMILIES = ["qwen2", "llama"]
CONVERSATIONS = [
    [{"role": "user", "content": "hello " * (i + 1)}]
    if i % 2
    else [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"What is {i} + {i}? " + "Think. " * i},
    ]
    for i in range(8)
]


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {family: build_tiny_model(root / family, family=family) for family in FAMILIES}


@pytest.fixture(scope="session")
def backends(tiny_dirs: dict[str, Path]) -> Iterator[dict[str, TransformersBackend]]:
    made = {family: TransformersBackend(path, batch_wait_ms=30) for family, path in tiny_dirs.items()}
    yield made
    for backend in made.values():
        backend.close()


def ascii_window(text: str, start: int = 6, width: int = 2) -> str | None:
    """A run of printable ASCII in the text (byte-level gibberish also holds partial UTF-8 characters)."""
    for i in range(start, len(text) - width):
        window = text[i : i + width]
        if all(32 < ord(c) < 127 for c in window):
            return window
    return None


# ---------------------------------------------------------------------------- build_tiny_model


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_model_folder_tokenizer_and_template(tiny_dirs: dict[str, Path], family: str) -> None:
    path = tiny_dirs[family]
    for name in ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json"):
        assert (path / name).is_file()
    config = json.loads((path / "config.json").read_text())
    assert config["model_type"] == family and config["hidden_size"] == 64 and config["num_hidden_layers"] == 2
    # AutoTokenizer, PreTrainedTokenizerFast and tokenizer.json agree on the ids, and round-trips are exact.
    auto = AutoTokenizer.from_pretrained(path)
    fast = PreTrainedTokenizerFast.from_pretrained(path)
    texts = [*tiny_corpus()[::7], "  two spaces\n\n\ttab", "héllo wörld 😀 12345", "x = [1, 2]; print(x)"]
    for text in texts:
        ids = auto(text, add_special_tokens=False)["input_ids"]
        assert ids == fast(text, add_special_tokens=False)["input_ids"]
        assert auto.decode(ids) == text
    prompt = auto.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    if family == "qwen2":
        assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    else:
        assert prompt == (
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n"
        )


def test_tiny_model_is_idempotent_fast_and_safe(tmp_path: Path, tiny_dirs: dict[str, Path]) -> None:
    path = tiny_dirs["qwen2"]
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    started = time.perf_counter()
    assert build_tiny_model(path, family="qwen2") == path
    assert time.perf_counter() - started < 0.1
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp
    started = time.perf_counter()
    other = build_tiny_model(tmp_path / "seeded", family="qwen2", seed=1)
    assert time.perf_counter() - started < 5.0
    assert (other / "model.safetensors").read_bytes() != (path / "model.safetensors").read_bytes()
    assert (other / "tokenizer.json").read_bytes() == (path / "tokenizer.json").read_bytes()  # deterministic BPE
    # Different arguments rebuild in place; a folder we did not write is never overwritten.
    build_tiny_model(other, family="llama", seed=1)
    assert json.loads((other / "config.json").read_text())["model_type"] == "llama"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "weights.bin").write_text("precious")
    with pytest.raises(FileExistsError):
        build_tiny_model(foreign)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp dirs left behind


# ---------------------------------------------------------------------------- generation


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_greedy_equals_unbatched(backends: dict[str, TransformersBackend], family: str) -> None:
    backend = backends[family]
    assert isinstance(backend, LLMBackend)
    config = GenerationConfig(max_tokens=24)
    alone = [backend.generate(c, config) for c in CONVERSATIONS]
    batches_before = backend.stats["batches"]
    together = backend.generate_batch(CONVERSATIONS, config)
    assert backend.stats["batches"] == batches_before + 1  # left-padded, of different lengths, in one batch
    for a, b, conversation in zip(alone, together, CONVERSATIONS, strict=True):
        assert a.token_ids == b.token_ids
        assert a.text == b.text and a.finish_reason == b.finish_reason
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        assert a.prompt_token_ids == tuple(backend.encode_prompt(conversation))
        assert backend.count_tokens(conversation) == len(a.prompt_token_ids)
        assert a.usage == {"prompt_tokens": len(a.prompt_token_ids), "completion_tokens": len(a.token_ids)}
        assert all(math.isfinite(lp) and lp <= 0 for lp in a.logprobs)
        assert len(a.logprobs) == len(a.token_ids) > 0
        if a.finish_reason == "length":
            assert len(a.token_ids) == 24
            assert backend.tokenizer.decode(list(a.token_ids), skip_special_tokens=True) == a.text


@pytest.mark.parametrize("family", FAMILIES)
def test_logprobs_match_a_full_forward_pass(backends: dict[str, TransformersBackend], family: str) -> None:
    """The KV-cached loop's logprobs equal those of one plain forward pass over prompt + completion."""
    backend = backends[family]
    for config in (GenerationConfig(max_tokens=16), GenerationConfig(max_tokens=16, temperature=0.7, seed=5)):
        generation = backend.generate(CONVERSATIONS[2], config)
        ids = torch.tensor([[*generation.prompt_token_ids, *generation.token_ids]])
        with torch.no_grad():
            logits = backend.model(input_ids=ids).logits[0, len(generation.prompt_token_ids) - 1 : -1].float()
        temperature = config.temperature or 1.0
        expected = torch.log_softmax(logits / temperature, dim=-1)[
            torch.arange(len(generation.token_ids)), ids[0, -len(generation.token_ids) :]
        ]
        assert list(generation.logprobs) == pytest.approx(expected.tolist(), abs=1e-4)


def test_stop_strings_and_token_ids(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["qwen2"]
    full = backend.generate(CONVERSATIONS[1], GenerationConfig(max_tokens=40))
    stop = ascii_window(full.text)
    assert stop is not None, full.text
    cut = backend.generate(CONVERSATIONS[1], GenerationConfig(max_tokens=40, stop=("@@never@@", stop)))
    assert cut.finish_reason == "stop"
    assert cut.text == full.text[: full.text.index(stop)]
    # token_ids keep every sampled token up to the one that completed the stop string.
    decoded = backend.tokenizer.decode(list(cut.token_ids), skip_special_tokens=True)
    assert decoded.startswith(cut.text + stop)
    assert not backend.tokenizer.decode(list(cut.token_ids[:-1]), skip_special_tokens=True).startswith(cut.text + stop)
    assert cut.token_ids == full.token_ids[: len(cut.token_ids)]


def test_end_of_turn_token_ends_with_stop(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["qwen2"]
    im_end = backend.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in backend.stop_token_ids
    full = backend.generate(CONVERSATIONS[3], GenerationConfig(max_tokens=12))
    # A random model rarely says <|im_end|>: make its third greedy token an end-of-turn token for a moment.
    third = full.token_ids[2]
    if third in full.token_ids[:2]:
        pytest.skip("the third greedy token also comes earlier")
    backend._stop_token_ids.add(third)
    try:
        ended = backend.generate(CONVERSATIONS[3], GenerationConfig(max_tokens=12))
    finally:
        backend._stop_token_ids.discard(third)
    assert ended.finish_reason == "stop"
    assert ended.token_ids == full.token_ids[:3]  # the end token is kept in token_ids...
    assert ended.text == backend.tokenizer.decode(list(full.token_ids[:2]), skip_special_tokens=True)  # not in text


def test_sampling_seeds_and_top_p(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["qwen2"]
    sample = GenerationConfig(max_tokens=20, temperature=1.0, top_p=0.9, seed=123)
    alone = backend.generate(CONVERSATIONS[0], sample)
    assert backend.generate(CONVERSATIONS[0], sample).token_ids == alone.token_ids
    # The same seed gives the same sample when batched with other requests.
    batch = backend.generate_batch([CONVERSATIONS[5], CONVERSATIONS[0], CONVERSATIONS[6]], sample)
    assert batch[1].token_ids == alone.token_ids
    others = {
        backend.generate(CONVERSATIONS[0], GenerationConfig(max_tokens=20, temperature=1.0, seed=s)).token_ids
        for s in range(4)
    }
    assert len(others) > 1
    # top_p so small that only the top token survives: greedy tokens, each with logprob 0.
    greedy = backend.generate(CONVERSATIONS[0], GenerationConfig(max_tokens=20))
    nucleus = backend.generate(CONVERSATIONS[0], GenerationConfig(max_tokens=20, temperature=1.0, top_p=1e-6, seed=1))
    assert nucleus.token_ids == greedy.token_ids
    assert nucleus.logprobs == pytest.approx([0.0] * len(nucleus.logprobs), abs=1e-6)


def test_concurrent_agenerate_calls_are_batched_and_faster(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["llama"]
    configs = [GenerationConfig(max_tokens=48, temperature=1.0, seed=i) for i in range(8)]
    backend.generate(CONVERSATIONS[0], GenerationConfig(max_tokens=4))  # warm up

    started = time.perf_counter()
    sequential = [backend.generate(c, cfg) for c, cfg in zip(CONVERSATIONS, configs, strict=True)]
    sequential_s = time.perf_counter() - started

    async def concurrently() -> list:
        return await asyncio.gather(*(backend.agenerate(c, cfg) for c, cfg in zip(CONVERSATIONS, configs, strict=True)))

    batches_before = backend.stats["batches"]
    started = time.perf_counter()
    concurrent = asyncio.run(concurrently())
    concurrent_s = time.perf_counter() - started
    assert backend.stats["batches"] - batches_before == 1
    assert backend.stats["max_batch"] == 8
    assert [g.token_ids for g in concurrent] == [g.token_ids for g in sequential]
    assert concurrent_s < 0.75 * sequential_s, (concurrent_s, sequential_s)


@pytest.mark.parametrize("family", FAMILIES)
def test_requests_join_a_decoding_batch_and_get_the_same_tokens(
    backends: dict[str, TransformersBackend], family: str
) -> None:
    """Continuous batching: requests sent while a batch decodes join it, and greedy tokens are unchanged."""
    backend = backends[family]
    long, short = GenerationConfig(max_tokens=64), GenerationConfig(max_tokens=12)
    expected_long = backend.generate(CONVERSATIONS[0], long)
    expected_short = [backend.generate(c, short) for c in CONVERSATIONS[1:5]]
    batches, joined = backend.stats["batches"], backend.stats["joined"]
    first = backend._submit([CONVERSATIONS[0]], long)[0]  # starts a batch of one row that decodes 64 tokens
    while backend.stats["batches"] == batches:  # wait until that batch is decoding
        time.sleep(0.001)
    later = [backend._submit([c], short)[0] for c in CONVERSATIONS[1:5]]
    results = [f.result(timeout=60) for f in later]
    assert first.result(timeout=60).token_ids == expected_long.token_ids
    for got, want in zip(results, expected_short, strict=True):
        assert got.token_ids == want.token_ids and got.text == want.text
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)
    assert backend.stats["joined"] - joined >= 1  # they joined the running batch instead of waiting for it
    assert backend.stats["batches"] - batches < 5


def test_static_batches_when_continuous_is_off(tiny_dirs: dict[str, Path]) -> None:
    with TransformersBackend(tiny_dirs["llama"], batch_wait_ms=0, continuous=False) as backend:
        first = backend._submit([CONVERSATIONS[0]], GenerationConfig(max_tokens=48))[0]
        while backend.stats["batches"] == 0:
            time.sleep(0.001)
        later = backend._submit([CONVERSATIONS[1]], GenerationConfig(max_tokens=4))[0]
        first.result(timeout=60), later.result(timeout=60)
        assert backend.stats["joined"] == 0 and backend.stats["batches"] == 2
        assert backend.config()["continuous"] is False


def test_a_pending_weight_load_stops_rows_joining(tiny_dirs: dict[str, Path]) -> None:
    """load_weights waits for the running rows only: while it waits, new requests do not join their batch."""
    with TransformersBackend(tiny_dirs["llama"], batch_wait_ms=0) as backend:
        state = {k: v.clone() for k, v in backend.model.state_dict().items()}
        first = backend._submit([CONVERSATIONS[0]], GenerationConfig(max_tokens=200))[0]
        while backend.stats["batches"] == 0:
            time.sleep(0.001)
        loader = threading.Thread(target=backend.load_weights, args=(state,))
        loader.start()
        while not backend._weights_waiting:
            time.sleep(0.001)
        later = [backend._submit([c], GenerationConfig(max_tokens=4))[0] for c in CONVERSATIONS[1:3]]
        first.result(timeout=60)
        loader.join(timeout=60)
        [f.result(timeout=60) for f in later]
        assert backend.stats["joined"] == 0


def test_threads_and_event_loops_share_the_queue(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["qwen2"]
    config = GenerationConfig(max_tokens=8)
    expected = backend.generate(CONVERSATIONS[4], config).token_ids
    results: list[tuple[int, ...]] = []

    def in_thread(use_async: bool) -> None:
        if use_async:
            results.append(asyncio.run(backend.agenerate(CONVERSATIONS[4], config)).token_ids)
        else:
            results.append(backend.generate(CONVERSATIONS[4], config).token_ids)

    threads = [threading.Thread(target=in_thread, args=(i % 2 == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 6


def test_edge_cases(backends: dict[str, TransformersBackend]) -> None:
    backend = backends["qwen2"]
    empty = backend.generate(CONVERSATIONS[0], GenerationConfig(max_tokens=0))
    assert (empty.text, empty.finish_reason, empty.token_ids) == ("", "length", ())
    too_long = [{"role": "user", "content": "a b " * 5000}]
    with pytest.raises(BackendError, match="context"):
        backend.generate(too_long, GenerationConfig(max_tokens=4))

    # One bad request in a batch does not spoil the others.
    async def mixed() -> list:
        calls = [backend.agenerate(c, GenerationConfig(max_tokens=3)) for c in (CONVERSATIONS[0], too_long)]
        return await asyncio.gather(*calls, return_exceptions=True)

    good, bad = asyncio.run(mixed())
    assert len(good.token_ids) == 3 and isinstance(bad, BackendError)
    description = describe_config(backend)
    json.dumps(description)
    assert description["backend"] == "transformers" and description["model_type"] == "qwen2"


def test_chat_template_is_required_and_can_be_given(tmp_path: Path, tiny_dirs: dict[str, Path]) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(tiny_dirs["qwen2"], bare)
    (bare / "chat_template.jinja").unlink(missing_ok=True)
    tok_config = json.loads((bare / "tokenizer_config.json").read_text())
    tok_config.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(tok_config))
    with pytest.raises(ValueError, match="chat template"):
        TransformersBackend(bare)
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    with TransformersBackend(bare, chat_template=template, name="bare") as backend:
        assert (
            backend.tokenizer.decode(backend.encode_prompt([{"role": "user", "content": "hi"}]))
            == "user: hi\nassistant:"
        )
        assert (
            backend.generate([{"role": "user", "content": "hi"}], GenerationConfig(max_tokens=2)).usage[
                "completion_tokens"
            ]
            == 2
        )
        assert backend.config()["name"] == "bare" and backend.config()["chat_template_override"] is True
    backend.close()  # idempotent
    with pytest.raises(BackendError, match="closed"):
        backend.generate([{"role": "user", "content": "hi"}], GenerationConfig(max_tokens=2))


def test_custom_tokenizer_json_next_to_a_qwen2_config_is_honoured(tmp_path: Path, tiny_dirs: dict[str, Path]) -> None:
    """A generic tokenizer.json (plain byte-level BPE) saved next to a qwen2 config keeps its own ids.

    transformers 5's AutoTokenizer would rebuild it as a Qwen2Tokenizer with Qwen's digit-splitting
    pre-tokenizer; the backend notices and reads tokenizer.json as is.
    """
    from tokenizers import Tokenizer

    custom = tmp_path / "custom"
    shutil.copytree(tiny_dirs["qwen2"], custom)
    spec = json.loads((custom / "tokenizer.json").read_text())
    spec["normalizer"] = None
    spec["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    (custom / "tokenizer.json").write_text(json.dumps(spec))
    raw = Tokenizer.from_file(str(custom / "tokenizer.json"))
    text = "x = 12345 + 678; print(x)"
    assert AutoTokenizer.from_pretrained(custom)(text, add_special_tokens=False)["input_ids"] != raw.encode(text).ids
    with TransformersBackend(custom) as backend:
        assert backend.tokenizer(text, add_special_tokens=False)["input_ids"] == raw.encode(text).ids
        prompt = backend.encode_prompt([{"role": "user", "content": text}])
        rendered = backend.tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
        )
        assert prompt == raw.encode(rendered).ids
    with TransformersBackend(tiny_dirs["qwen2"]) as backend:  # a matching tokenizer keeps AutoTokenizer's class
        assert type(backend.tokenizer).__name__ == "Qwen2Tokenizer"


@pytest.mark.parametrize("family", FAMILIES)
def test_a_continued_conversation_reuses_the_kept_kv(tiny_dirs: dict[str, Path], family: str) -> None:
    """An agent's next turn (the last turn's ids, then new tokens) prefills only the new tokens, same results."""
    config = GenerationConfig(max_tokens=12)
    sampled = GenerationConfig(max_tokens=12, temperature=1.0, seed=7)
    outcomes = {}
    for capacity in (0, 64):
        with TransformersBackend(tiny_dirs[family], prefix_cache=capacity) as backend:
            turn = backend.generate(CONVERSATIONS[2], config)
            observation = backend.tokenizer.encode(" the tool said 42. Go on.", add_special_tokens=False)
            ids = [*turn.prompt_token_ids, *turn.token_ids, *observation]
            greedy, seeded = backend.generate_ids(ids, config), backend.generate_ids(ids, sampled)
            outcomes[capacity] = (greedy, seeded, backend.stats["reused_tokens"])
            if capacity:
                backend.load_weights({k: v.clone() for k, v in backend.model.state_dict().items()})
                assert len(backend._prefixes) == 0  # the kept keys and values were the old weights'
    (greedy, seeded, none), (greedy_r, seeded_r, reused) = outcomes[0], outcomes[64]
    assert none == 0 and reused >= len(turn.prompt_token_ids) + len(turn.token_ids) - 1
    for a, b in ((greedy, greedy_r), (seeded, seeded_r)):
        assert a.token_ids == b.token_ids and a.text == b.text
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
