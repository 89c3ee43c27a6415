"""Pixels through the rollout engine: the tiny VLM, its backend, exact image tokens, masks and logprobs.

The tiny VLM is built here from a config (SmolVLM's architecture, random weights, a tokenizer trained
here) and loaded with the real ``from_pretrained``; the env is ``AgentRL/ColourLetter-v0`` (a colour
square and a line of text) and a two-turn variant that shows a second image.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'agentrl-gym[llm]')")
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'agentrl-gym[llm]')")

from agentrl.envs.toy import ColourLetterEnv  # noqa: E402
from agentrl.llm.base import GenerationConfig  # noqa: E402
from agentrl.llm.tiny_vlm import build_tiny_vlm  # noqa: E402
from agentrl.llm.vlm_backend import TransformersVLMBackend, check_image  # noqa: E402
from agentrl.rollout import RolloutConfig, RolloutEngine, group_requests  # noqa: E402
from agentrl.rollout.engine import observation_parts  # noqa: E402
from agentrl.train.batch import pack_trajectories  # noqa: E402
from agentrl.train.logprobs import token_logprobs  # noqa: E402


class TwoLookEnv(ColourLetterEnv):
    """ColourLetterEnv with two turns: after the first reply it shows a second (grey) image and asks again."""

    def __init__(self) -> None:
        super().__init__()
        self.max_turns = 2

    def act(self, turn: Any) -> None:
        super().act(turn)
        if self._turn < 2:
            turn.terminated, turn.done_reason = False, None
            turn.observation = {"pixels": np.full((40, 72, 3), 128, np.uint8), "text": "Once more."}


@pytest.fixture(scope="module")
def vlm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_vlm(tmp_path_factory.mktemp("vlm") / "tiny-vlm")


@pytest.fixture(scope="module")
def backend(vlm_path: Path) -> Iterator[TransformersVLMBackend]:
    made = TransformersVLMBackend(vlm_path, max_batch_size=8, batch_wait_ms=2.0)
    yield made
    made.close()


def test_tiny_vlm_is_a_real_checkpoint(vlm_path: Path) -> None:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(vlm_path)
    model = AutoModelForImageTextToText.from_pretrained(vlm_path)
    assert (
        type(processor).__name__ == "Idefics3Processor" and type(model).__name__ == "Idefics3ForConditionalGeneration"
    )
    assert build_tiny_vlm(vlm_path) == vlm_path  # idempotent: the same folder is reused
    with pytest.raises(FileExistsError):
        other = vlm_path.parent / "someone-else"
        other.mkdir()
        (other / "config.json").write_text("{}")
        build_tiny_vlm(other)


def test_image_tokens_are_the_processors_own(backend: TransformersVLMBackend) -> None:
    image = np.random.default_rng(0).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    encoded = backend.encode_image(image)
    text = backend.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}],
        add_generation_prompt=True,
        tokenize=False,
    )
    reference = backend.processor(text=[text], images=[[image]], return_tensors="np")
    message = {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Hi"}]}
    assert backend.encode_prompt([message]) == [int(i) for i in reference["input_ids"][0]]
    np.testing.assert_array_equal(encoded.inputs["pixel_values"], reference["pixel_values"][0])
    assert backend.encode_image(image) is encoded  # cached by its pixels
    with pytest.raises(ValueError, match="images for"):
        backend.expand_images([backend.image_placeholder_id], [encoded, encoded])


def run_engine(backend: TransformersVLMBackend, env_fn: Any, seeds: list[int], **config: Any) -> list[Any]:
    settings = {"num_envs": 4, "max_new_tokens": 6, "temperature": 1.0, "sampling_seed": 0, "keep_failed": True}
    with RolloutEngine(env_fn, backend, config=RolloutConfig(**{**settings, **config})) as engine:
        return engine.run(group_requests(seeds, group_size=2))


def assert_trainer_logprobs_match(backend: TransformersVLMBackend, pieces: list[Any]) -> None:
    """The trainer's forward pass (pixels in) gives the sampler's logprobs on every sampled token."""
    batch = pack_trajectories(pieces, backend.tokenizer.pad_token_id)
    with torch.no_grad():
        fresh, _ = token_logprobs(
            backend.model,
            batch.input_ids,
            batch.attention_mask,
            extra_inputs=batch.vision,
            suppress_token_ids=backend.suppressed_token_ids,
        )
    assert float(((fresh - batch.old_logprobs).abs() * batch.loss_mask).max()) < 1e-4


def test_pixel_trajectories_are_exact(backend: TransformersVLMBackend) -> None:
    """Masks 0 on every image and env token; logprobs equal a fresh forward pass; text round-trips."""
    trajectories = run_engine(backend, TwoLookEnv, [0, 1, 2])
    assert trajectories and all(t.ok for t in trajectories), [t.failure for t in trajectories]
    image_ids = set(backend.suppressed_token_ids)
    for t in trajectories:
        t.validate()
        assert len(t.images) == (2 if len(t.turns) == 2 else 1)
        for token, mask in zip(t.token_ids, t.loss_mask, strict=True):
            if token in image_ids:
                assert mask == 0
        policy = [tok for tok, m in zip(t.token_ids, t.loss_mask, strict=True) if m]
        assert not set(policy) & image_ids  # image tokens are never sampled
        # decode / re-encode: each completion's text is what its tokens say
        for turn in t.turns:
            start, end = turn.completion_span
            assert backend.tokenizer.decode(t.token_ids[start:end], skip_special_tokens=True).startswith(turn.action)
        assert t.to_dict()["images"] == [image.digest for image in t.images]
    batch = pack_trajectories(trajectories, backend.tokenizer.pad_token_id)
    assert batch.vision["pixel_values"].shape[:2] == (len(trajectories), 2)
    with torch.no_grad():
        fresh, _ = token_logprobs(
            backend.model,
            batch.input_ids,
            batch.attention_mask,
            extra_inputs=batch.vision,
            suppress_token_ids=backend.suppressed_token_ids,
        )
    gap = ((fresh - batch.old_logprobs).abs() * batch.loss_mask).max()
    assert float(gap) < 1e-4
    assert torch.isfinite(fresh).all()
    sub = batch.select([1, 0])
    assert torch.equal(sub.vision["pixel_values"][1], batch.vision["pixel_values"][0])


def test_groups_start_from_the_same_image(backend: TransformersVLMBackend) -> None:
    trajectories = run_engine(backend, ColourLetterEnv, [3, 4])
    by_group: dict[Any, set[str]] = {}
    for t in trajectories:
        by_group.setdefault(t.request.group_id, set()).add(t.images[0].digest)
    assert all(len(digests) == 1 for digests in by_group.values())


def test_batched_generation_matches_single(backend: TransformersVLMBackend) -> None:
    """A row's greedy tokens do not depend on what it is batched with (rows with and without images)."""
    image = np.full((20, 20, 3), 200, np.uint8)
    with_image = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "x"}]}]
    text_only = [{"role": "user", "content": "The answer is"}]
    config = GenerationConfig(max_tokens=5, temperature=0.0)
    alone = backend.generate(with_image, config)
    together = backend.generate_batch([text_only, with_image, with_image], config)
    assert together[1].token_ids == alone.token_ids == together[2].token_ids


def test_bad_observations_fail_with_the_fix(backend: TransformersVLMBackend) -> None:
    with pytest.raises(ValueError, match=r"expected a numpy uint8 array of shape \(H, W, 3\), got float32"):
        check_image(np.zeros((4, 4, 3), np.float32))
    from agentrl.rollout.engine import EpisodeFailed

    with pytest.raises(EpisodeFailed, match="needs an image"):
        observation_parts({"score": 1})
    with pytest.raises(EpisodeFailed, match=r"observation\['pixels'\]"):
        observation_parts({"pixels": np.zeros((4, 4), np.uint8)})

    class FloatPixels(ColourLetterEnv):
        def begin_episode(self, options: Any) -> Any:
            obs, info = super().begin_episode(options)
            return {**obs, "pixels": obs["pixels"].astype(np.float32)}, info

    failed = run_engine(backend, FloatPixels, [0])
    assert failed and all(not t.ok and "uint8" in str(t.failure) for t in failed)


def test_a_text_model_on_a_pixel_env_is_refused_before_any_episode(tmp_path: Path) -> None:
    from agentrl.llm.tiny import build_tiny_model
    from agentrl.llm.transformers_backend import TransformersBackend
    from agentrl.train.models import check_observations

    text_model = build_tiny_model(tmp_path / "text")
    with pytest.raises(ValueError, match=r"text-only model.*--model tiny-vlm"):
        check_observations(ColourLetterEnv, text_model)
    check_observations(ColourLetterEnv, build_tiny_vlm(tmp_path / "vlm"))  # a VLM: fine
    with TransformersBackend(text_model) as text_backend:
        failed = run_engine(text_backend, ColourLetterEnv, [0])  # type: ignore[arg-type]
    assert all("reads text only" in str(t.failure) for t in failed)
    with pytest.raises(ValueError, match=r"no image processor|cannot load an image processor"):
        TransformersVLMBackend(text_model)


class ManyLooksEnv(ColourLetterEnv):
    """Four turns, a new image each (a different grey), as a GUI episode shows a screenshot a step."""

    def __init__(self) -> None:
        super().__init__()
        self.max_turns = 4

    def act(self, turn: Any) -> None:
        super().act(turn)
        if self._turn < 4:
            turn.terminated, turn.done_reason = False, None
            turn.observation = {
                "pixels": np.full((28, 28, 3), 40 * self._turn, np.uint8),
                "text": f"Look {self._turn}.",
            }


def test_max_images_opens_context_windows_that_are_each_exact(backend: TransformersVLMBackend) -> None:
    """With max_images=2, a 4-image episode runs in 3 windows; each is exact and keeps at most 2 images."""
    from agentrl.rollout.engine import IMAGE_OMITTED

    trajectories = run_engine(backend, ManyLooksEnv, [0, 1], max_images=2)
    assert trajectories and all(t.ok for t in trajectories), [t.failure for t in trajectories]
    for t in trajectories:
        assert t.num_turns == 4 and len(t.all_turns) == 4 and len(t.windows) == 2
        for piece in t.pieces():
            piece.validate()
            assert 1 <= len(piece.images) <= 2
        text = backend.tokenizer.decode(t.token_ids)
        assert text.count(IMAGE_OMITTED) == 2  # images 1 and 2 are placeholders in the last window
        assert t.total_reward == sum(turn.reward for turn in t.all_turns)
    assert_trainer_logprobs_match(backend, [piece for t in trajectories for piece in t.pieces()])
    # the same episodes without a limit: one window each, all four images in it
    whole = run_engine(backend, ManyLooksEnv, [0, 1])
    assert all(not t.windows and len(t.images) == 4 for t in whole)
    image_token = backend.processor.image_token_id
    assert all(t.token_ids.count(image_token) == 2 * 16 for t in trajectories)  # the last window: 2 images
    assert all(t.token_ids.count(image_token) == 4 * 16 for t in whole)


def test_pixel_rollout_benchmark_runs_small(tmp_path: Path) -> None:
    """``python benchmarks/rollout_pixels.py`` in miniature: both schedules, and the memory of one setting."""
    from benchmarks.rollout_pixels import memory_per_keep, run_benchmark

    report = run_benchmark(
        trajectories=4, num_envs=2, repeats=1, max_new_tokens=4, size=32, model_dir=str(tmp_path), log=lambda _: None
    )
    assert report["lockstep_s"] > 0 and report["async_s"] > 0 and report["speedup"] > 0
    # the floor is the episodes' env time scheduled in request order: async cannot beat it
    assert 0 < report["async_floor_s"] <= report["async_s"] and report["speedup_ceiling"] >= report["speedup"]
    # the drawn latencies alone are below the env time measured around them
    assert 0 < report["drawn_floor_s"] <= report["async_floor_s"]
    (row,) = memory_per_keep([2], trajectories=2, size=32, log=lambda _: None)
    assert row["max_images"] == 2 and row["windows_per_trajectory"] >= 2 and row["collection_peak_rss_mb"] > 0


@pytest.mark.parametrize("limit", [None, 3])
def test_a_full_context_ends_at_a_turn_boundary_with_its_images(backend: TransformersVLMBackend, limit: Any) -> None:
    """An observation that fills the context is cut whole, its images with it, so the trainer's pass still runs.

    Before the fix the cut observation's image stayed in ``trajectory.images`` while its tokens were gone, and
    the VLM's forward pass failed ("Image features and image tokens do not match"), as the README's pixel
    training command did at its default settings.
    """
    probe = run_engine(backend, ManyLooksEnv, [0], max_new_tokens=4)
    first_prompt = probe[0].prompt_length
    # Room for the first prompt, a turn and the next observation (an image and its text), then nothing.
    budget = first_prompt + 4 + 30
    trajectories = run_engine(backend, ManyLooksEnv, [0, 1], max_new_tokens=4, max_context_tokens=budget,
                              max_images=limit)
    assert trajectories and all(t.ok for t in trajectories), [t.failure for t in trajectories]
    image_token = backend.processor.image_token_id
    for t in trajectories:
        assert t.num_turns < 4, "the context limit should have ended the episode early"
        last = t.all_turns[-1]
        assert last.truncated and last.info.get("engine_truncated") == "context"
        for piece in t.pieces():
            piece.validate()  # every image's tokens are in its sequence
            assert piece.token_ids.count(image_token) == 16 * len(piece.images)
            assert len(piece.token_ids) <= budget
            assert piece.loss_mask[-1] == 1  # the sequence ends with the policy's turn
    assert_trainer_logprobs_match(backend, [piece for t in trajectories for piece in t.pieces()])


def test_validate_names_an_image_without_its_tokens(backend: TransformersVLMBackend) -> None:
    (t,) = run_engine(backend, ColourLetterEnv, [0])[:1]
    t.validate()
    t.images.append(t.images[0])  # a second image whose tokens are not in the sequence
    with pytest.raises(ValueError, match=r"image 1's \d+ tokens are not in the sequence"):
        t.validate()


def test_each_image_goes_through_the_vision_tower_once(backend: TransformersVLMBackend, monkeypatch: Any) -> None:
    """A screenshot read again at a later turn's prefill reuses its features; the tokens and logprobs are the same."""
    image = np.full((24, 24, 3), 77, np.uint8)
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "y"}]}]
    config = GenerationConfig(max_tokens=4, temperature=0.0)
    assert backend._features_by_image  # the tiny VLM is Idefics3: it takes precomputed features
    backend._prefixes.clear()
    monkeypatch.setattr(backend._prefixes, "capacity", 0)  # every prefill reads its image (no prefix reuse)
    monkeypatch.setattr(backend, "_features_by_image", False)
    from_pixels = backend.generate(messages, config)
    monkeypatch.setattr(backend, "_features_by_image", True)
    calls: list[int] = []
    inner = backend.model.model
    real = inner.get_image_features

    def counting(pixel_values: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(int(pixel_values.shape[0]))
        return real(pixel_values, *args, **kwargs)

    monkeypatch.setattr(inner, "get_image_features", counting)
    first, second = backend.generate(messages, config), backend.generate(messages, config)
    assert first.token_ids == second.token_ids == from_pixels.token_ids
    assert max(abs(a - b) for a, b in zip(first.logprobs, from_pixels.logprobs, strict=True)) < 1e-5
    assert calls == [1]  # one image, through the tower once for both generations
    backend.load_weights({k: v.clone() for k, v in backend.model.state_dict().items()})
    assert backend._feature_cache == {}  # new weights: the old features are gone
    backend.generate(messages, config)
    assert calls == [1, 1]


def test_a_next_turn_reuses_the_kv_of_the_last_and_its_images(vlm_path: Path) -> None:
    """A prompt that continues a finished row prefills only its new tokens; tokens and logprobs are unchanged.

    Every image has the same placeholder ids: a prompt with the same text and another image must not reuse the
    keys and values computed from the first image (it reuses the text before the image only).
    """
    rng = np.random.default_rng(3)
    first, second, other = (rng.integers(0, 256, (24, 24, 3), dtype=np.uint8) for _ in range(3))
    config = GenerationConfig(max_tokens=5, temperature=0.0)
    results = {}
    for capacity in (0, 64):
        with TransformersVLMBackend(vlm_path, prefix_cache=capacity) as backend:
            turn = backend.generate([_user(first, "look")], config)
            text = backend.tokenizer.encode
            image = backend.encode_image(second)
            ids = [*turn.prompt_token_ids, *turn.token_ids, *text("\nUser:", add_special_tokens=False)]
            ids += [*image.token_ids, *text("again<end_of_utterance>\nAssistant:", add_special_tokens=False)]
            reused_before = backend.stats["reused_tokens"]
            continued = backend.generate_ids(ids, config, images=[backend.encode_image(first), image])
            reused = backend.stats["reused_tokens"] - reused_before
            swapped = backend.generate([_user(other, "look")], config)  # same text, another image
            results[capacity] = (continued, reused, swapped, backend.stats["reused_tokens"] - reused_before - reused)
    (plain, none, plain_swapped, _), (reusing, reused, swapped, swapped_reused) = results[0], results[64]
    assert none == 0 and reused >= len(turn.prompt_token_ids)  # the whole first turn came from the store
    assert reusing.token_ids == plain.token_ids
    assert max(abs(a - b) for a, b in zip(reusing.logprobs, plain.logprobs, strict=True)) < 1e-4
    assert swapped.token_ids == plain_swapped.token_ids
    assert max(abs(a - b) for a, b in zip(swapped.logprobs, plain_swapped.logprobs, strict=True)) < 1e-4
    image_start = turn.prompt_token_ids.index(backend.processor.image_token_id)
    assert swapped_reused <= image_start  # the text before the image at most


def _user(image: np.ndarray, text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}
