"""A local vision-language model through ``transformers``, with exact image tokens and dynamic batching.

:class:`TransformersVLMBackend` is :class:`~agentrl.llm.transformers_backend.TransformersBackend`
for a model with a vision tower (``AutoModelForImageTextToText``: SmolVLM/Idefics3 and others whose image
tokens sit in the sequence as a fixed block per image). It keeps the same contract: one queue, requests
batched as they come, per-row sampling settings, exact token ids and the sampler's logprobs. What it adds:

* :meth:`~TransformersVLMBackend.encode_image` turns one (H, W, 3) uint8 image into an
  :class:`EncodedImage`: the exact token ids the model reads for it (the processor's expansion of the
  chat template's image placeholder) and its pixel inputs (``pixel_values``, ``pixel_attention_mask``).
* :meth:`~TransformersVLMBackend.expand_images` replaces each placeholder id of a tokenised prompt by
  its image's tokens, so a rollout builds a conversation with images token by token, as for text.
* ``agenerate_ids(prompt_ids, config, images=[...])``: the images' pixels go into the batch's first
  forward pass (rows without images get none); the image tokens themselves are never sampled
  (:attr:`~TransformersVLMBackend.suppressed_token_ids`, masked in the trainer's logprobs too).
* ``generate(messages)`` takes messages whose content holds ``{"type": "image", "image": array}`` parts
  (the milestone judge) or OpenAI's ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``
  (the GUI and game agents), so ``agentrl bench --backend transformers --model-path <VLM>`` runs them.

Example:
    >>> import tempfile
    >>> import numpy as np
    >>> from agentrl.llm.base import GenerationConfig
    >>> from agentrl.llm.tiny_vlm import build_tiny_vlm
    >>> backend = TransformersVLMBackend(build_tiny_vlm(tempfile.mkdtemp() + "/vlm"))
    >>> image = np.zeros((84, 84, 3), dtype=np.uint8)
    >>> len(backend.encode_image(image).token_ids)  # 16 image tokens and 3 around them
    19
    >>> message = {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Hi"}]}
    >>> out = backend.generate([message], GenerationConfig(max_tokens=4, temperature=0))
    >>> len(out.token_ids) <= 4 and not set(out.token_ids) & set(backend.suppressed_token_ids)
    True
    >>> backend.close()
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np

from agentrl.llm.base import ChatMessage, Generation, GenerationConfig
from agentrl.llm.transformers_backend import TransformersBackend, _Row

__all__ = ["EncodedImage", "TransformersVLMBackend", "check_image", "is_vlm_checkpoint"]

_IMAGE_TOKENS = ("<image>", "<fake_token_around_image>", "<global-img>", "<|image_pad|>", "<|vision_start|>",
                 "<|vision_end|>", "<|video_pad|>")  # fmt: skip


def is_vlm_checkpoint(path: str | PathLike[str]) -> bool:
    """Whether the Hugging Face folder at ``path`` holds a model with a vision tower (``vision_config``)."""
    import json
    from pathlib import Path

    try:
        return "vision_config" in json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def check_image(image: Any, where: str = "image") -> np.ndarray:
    """``image`` as a (H, W, 3) uint8 array, or a ``ValueError`` that says what was expected and what came.

    >>> check_image(np.zeros((2, 3, 3), dtype=np.uint8)).shape
    (2, 3, 3)
    >>> check_image(np.zeros((2, 3), dtype=np.uint8))
    Traceback (most recent call last):
    ValueError: image: expected a numpy uint8 array of shape (H, W, 3), got uint8 of shape (2, 3)
    """
    if not isinstance(image, np.ndarray):
        raise ValueError(f"{where}: expected a numpy uint8 array of shape (H, W, 3), got {type(image).__name__}")
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3 or 0 in image.shape:
        raise ValueError(
            f"{where}: expected a numpy uint8 array of shape (H, W, 3), got {image.dtype} of shape {image.shape}"
        )
    return image


@dataclass(frozen=True)
class EncodedImage:
    """One image as the model reads it.

    Attributes:
        token_ids: the ids that stand for the image in the sequence (its whole block).
        inputs: the processor's pixel inputs for this one image, as numpy arrays without the batch axis:
            ``pixel_values`` (S, 3, H, W) and ``pixel_attention_mask`` (S, H, W), S the image's sub-images
            (1 here; SmolVLM's tiles plus the whole image when the processor splits large images).
        digest: a hash of the image's pixels (for caches and checks).
    """

    token_ids: tuple[int, ...]
    inputs: dict[str, np.ndarray]
    digest: str

    @property
    def nbytes(self) -> int:
        """Bytes held by the pixel inputs (the memory an image costs a trajectory)."""
        return int(sum(array.nbytes for array in self.inputs.values()))


class TransformersVLMBackend(TransformersBackend):
    """Chat and token-in generation with a local VLM checkpoint (``AutoModelForImageTextToText``).

    Args:
        model_path: a folder with the model, its processor and tokenizer (``AutoProcessor`` loads it).
        **kwargs: as :class:`~agentrl.llm.transformers_backend.TransformersBackend`.

    Raises:
        ValueError: the checkpoint has no image processor or no image token (a text-only model: use
            ``TransformersBackend``).
    """

    def __init__(self, model_path: str | PathLike[str], **kwargs: Any) -> None:
        import transformers

        try:
            self._processor = transformers.AutoProcessor.from_pretrained(model_path)
        except Exception as exc:
            raise ValueError(
                f"{model_path}: cannot load an image processor ({type(exc).__name__}: {exc}); a text-only model "
                "takes TransformersBackend, and a pixel env needs a model with a vision tower"
            ) from exc
        if getattr(self._processor, "image_processor", None) is None:
            raise ValueError(
                f"{model_path}: the processor has no image processor; a pixel env needs a model with a vision tower"
            )
        tokenizer = self._processor.tokenizer
        self._image_placeholder = "<image>" if "<image>" in tokenizer.get_vocab() else None
        if self._image_placeholder is None:
            raise ValueError(
                f"{model_path}: the tokenizer has no '<image>' token; TransformersVLMBackend serves models whose "
                "chat template writes an image as '<image>' (SmolVLM/Idefics3)"
            )
        vocab = tokenizer.get_vocab()
        self._image_ids = tuple(sorted(vocab[token] for token in _IMAGE_TOKENS if token in vocab))
        self._image_cache: dict[str, EncodedImage] = {}
        #: an image's features (the vision tower and connector's output) by its digest: an episode's screenshot is
        #: read at every later turn's prefill (its whole context is prefilled again), so the vision tower runs once
        #: per image, not once per turn. Emptied when the weights change (load_weights).
        self._feature_cache: dict[str, Any] = {}
        super().__init__(model_path, **kwargs)
        self._placeholder_id = int(self._tokenizer.convert_tokens_to_ids(self._image_placeholder))
        self._features_by_image = _takes_image_features(self._model)

    def _load_model(self, transformers: Any, dtype: Any) -> Any:
        model = transformers.AutoModelForImageTextToText.from_pretrained(self.model_path, dtype=dtype)
        if getattr(model.config, "vision_config", None) is None:
            raise ValueError(f"{self.model_path}: the model has no vision tower (no vision_config)")
        return model

    # ------------------------------------------------------------------ images

    @property
    def processor(self) -> Any:
        """The ``transformers`` processor (tokenizer + image processor)."""
        return self._processor

    @property
    def suppressed_token_ids(self) -> tuple[int, ...]:
        """The image tokens: they stand for pixels, so the model never writes them."""
        return self._image_ids

    @property
    def image_placeholder(self) -> str:
        """The text the chat template writes for an image part (``"<image>"``); the rollout engine writes it too."""
        return str(self._image_placeholder)

    @property
    def image_placeholder_id(self) -> int:
        """The id the chat template writes for an image part, before :meth:`expand_images`."""
        return self._placeholder_id

    def encode_image(self, image: np.ndarray) -> EncodedImage:
        """The token ids and pixel inputs of one (H, W, 3) uint8 image (cached by its pixels).

        Raises:
            ValueError: not a (H, W, 3) uint8 array.
        """
        image = check_image(image)
        digest = hashlib.sha256(image.tobytes() + repr(image.shape).encode()).hexdigest()
        cached = self._image_cache.get(digest)
        if cached is not None:
            return cached
        with self._tokenizer_lock:
            out = self._processor(text=[self._image_placeholder], images=[[image]], return_tensors="np")
        ids = tuple(int(i) for i in out["input_ids"][0])
        inputs = {
            key: np.asarray(out[key][0])
            for key in ("pixel_values", "pixel_attention_mask")
            if key in out and out[key] is not None
        }
        encoded = EncodedImage(ids, inputs, digest)
        if len(self._image_cache) >= 512:
            self._image_cache.pop(next(iter(self._image_cache)))
        self._image_cache[digest] = encoded
        return encoded

    def expand_images(self, ids: Sequence[int], images: Sequence[EncodedImage]) -> list[int]:
        """``ids`` with the i-th image placeholder replaced by ``images[i]``'s tokens.

        Raises:
            ValueError: the number of placeholders and of images differ.
        """
        out: list[int] = []
        it = iter(images)
        count = 0
        for token in ids:
            if token == self._placeholder_id:
                image = next(it, None)
                if image is None:
                    raise ValueError(f"the text has more image placeholders than the {len(images)} images given")
                out.extend(image.token_ids)
                count += 1
            else:
                out.append(token)
        if count != len(images):
            raise ValueError(f"{len(images)} images for {count} image placeholders in the text")
        return out

    def encode_prompt(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The exact prompt ids of messages whose content may hold ``{"type": "image", "image": array}`` parts."""
        ids = super().encode_prompt([_placeholders(m) for m in messages])
        return self.expand_images(ids, [self.encode_image(image) for image in _images(messages)])

    # ------------------------------------------------------------------ generation

    def generate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """Complete one conversation with images (see :meth:`encode_prompt`); blocks until done."""
        images = [self.encode_image(image) for image in _images(messages)]
        return self._submit_ids(self.encode_prompt(messages), config, images).result()

    async def agenerate(self, messages: Sequence[ChatMessage], config: GenerationConfig) -> Generation:
        """:meth:`generate` without blocking the event loop."""
        images = [self.encode_image(image) for image in _images(messages)]
        return await asyncio.wrap_future(self._submit_ids(self.encode_prompt(messages), config, images))

    def generate_ids(
        self, prompt_ids: Sequence[int], config: GenerationConfig, images: Sequence[EncodedImage] = ()
    ) -> Generation:
        """Continue exact token ids whose image blocks are ``images``, in order; blocks until done."""
        return self._submit_ids(prompt_ids, config, _checked(prompt_ids, images, self)).result()

    async def agenerate_ids(  # type: ignore[override]
        self, prompt_ids: Sequence[int], config: GenerationConfig, images: Sequence[EncodedImage] = ()
    ) -> Generation:
        """:meth:`generate_ids` without blocking the event loop; concurrent calls are batched."""
        return await asyncio.wrap_future(self._submit_ids(prompt_ids, config, _checked(prompt_ids, images, self)))

    def generate_batch(
        self, conversations: Sequence[Sequence[ChatMessage]], config: GenerationConfig
    ) -> list[Generation]:
        """Complete several conversations (with images), batched; results in order."""
        futures = [
            self._submit_ids(self.encode_prompt(m), config, [self.encode_image(i) for i in _images(m)])
            for m in conversations
        ]
        return [f.result() for f in futures]

    def _prefill_inputs(self, rows: list[_Row]) -> dict[str, Any]:
        images = [list(row.request.images)[row.images_reused :] for row in rows]  # the new tokens' images only
        if self._features_by_image:
            return self._image_features(images)
        return pixel_inputs(images, self.device)

    def _reuse_key(self, row: _Row, ids: list[int]) -> Any:
        """The ids with each image's tokens replaced by a negative number drawn from its pixels' digest.

        Every image has the same placeholder ids, so two prompts with the same text and different screenshots
        would otherwise match, and one would reuse keys and values computed from the other's image.
        """
        image_token = self.processor.image_token_id
        key = np.asarray(ids, dtype=np.int64)
        positions = np.flatnonzero(key == image_token)
        start = 0
        for image in row.request.images:
            count = sum(1 for token in image.token_ids if token == image_token)
            stand_in = -1 - int(image.digest[:15], 16)
            key[positions[start : start + count]] = stand_in
            start += count
        return key

    def _reuse_boundary(self, row: _Row, shared: int) -> int:
        """Reuse no image in part: a shared prefix that ends inside an image's tokens stops before that image.

        Sets ``row.images_reused``, the images wholly inside the reused tokens (their features are not needed).
        """
        image_token = self.processor.image_token_id
        seen = sum(1 for token in row.prompt_ids[:shared] if token == image_token)
        edge = 0  # image tokens before the current image
        for index, image in enumerate(row.request.images):
            count = sum(1 for token in image.token_ids if token == image_token)
            if seen < edge + count:
                if seen > edge:  # inside this image: stop at its first image token
                    shared = [i for i, token in enumerate(row.prompt_ids) if token == image_token][edge]
                row.images_reused = index
                return shared
            edge += count
        row.images_reused = len(row.request.images)
        return shared

    def _image_features(self, images_per_row: list[list[EncodedImage]]) -> dict[str, Any]:
        """The batch's image features as the model's ``mm_encoder_outputs``, each image's computed once (cached)."""
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        torch = self._torch
        flat = [image for images in images_per_row for image in images]
        if not flat:
            return {}
        missing = list({image.digest: image for image in flat if image.digest not in self._feature_cache}.values())
        if missing:
            batch = pixel_inputs([[image] for image in missing], self.device)  # one image per row
            out = self._model.model.get_image_features(
                batch["pixel_values"], batch.get("pixel_attention_mask"), return_dict=True
            )
            for image, features in zip(missing, out.pooler_output, strict=True):
                if len(self._feature_cache) >= FEATURE_CACHE_SIZE:
                    self._feature_cache.pop(next(iter(self._feature_cache)))
                self._feature_cache[image.digest] = features
        merged = torch.cat([self._feature_cache[image.digest] for image in flat])
        return {"mm_encoder_outputs": {"image": BaseModelOutputWithPooling(pooler_output=[merged])}}

    def load_weights(self, state_dict: dict[str, Any]) -> None:
        """As :meth:`TransformersBackend.load_weights`; the cached image features go with the old weights."""
        with self._model_lock:
            self._feature_cache.clear()
        super().load_weights(state_dict)
        with self._model_lock:
            self._feature_cache.clear()


#: image features kept (an image of a 224-pixel tiny VLM: 64 x 64 floats; SmolVLM-256M's: 64 x 576)
FEATURE_CACHE_SIZE = 256


def _takes_image_features(model: Any) -> bool:
    """Whether the model takes precomputed image features (``mm_encoder_outputs``: Idefics3/SmolVLM, transformers 5)."""
    import inspect

    inner = getattr(model, "model", None)
    if inner is None or not callable(getattr(inner, "get_image_features", None)):
        return False
    return "mm_encoder_outputs" in inspect.signature(type(model).forward).parameters


def pixel_inputs(images_per_row: Sequence[Sequence[EncodedImage]], device: Any = "cpu") -> dict[str, Any]:
    """The pixel tensors of a batch: ``pixel_values`` (B, N, 3, H, W), zero images padding rows to N.

    A row holds its images' sub-images in order. Idefics3 drops all-zero images (a real image never
    normalises to all zeros), so rows with fewer images, or none, share the tensor. Empty when no row
    has an image.
    """
    import torch

    first = next((image for images in images_per_row for image in images), None)
    if first is None:
        return {}
    out: dict[str, Any] = {}
    for key, sample in first.inputs.items():
        rows = [
            np.concatenate([image.inputs[key] for image in images]) if images else None for images in images_per_row
        ]
        count = max(len(r) for r in rows if r is not None)
        stacked = np.zeros((len(images_per_row), count, *sample.shape[1:]), dtype=sample.dtype)
        for index, row in enumerate(rows):
            if row is not None:
                stacked[index, : len(row)] = row
        tensor = torch.from_numpy(stacked)
        out[key] = tensor.to(device=device, dtype=torch.bool if key == "pixel_attention_mask" else None)
    return out


def _checked(prompt_ids: Sequence[int], images: Sequence[EncodedImage], backend: TransformersVLMBackend) -> list[Any]:
    """The images, after checking that the prompt holds their tokens (a mismatch would fail deep in the model)."""
    image_token = backend.processor.image_token_id
    expected = sum(sum(1 for t in image.token_ids if t == image_token) for image in images)
    found = sum(1 for t in prompt_ids if t == image_token)
    if found != expected:
        raise ValueError(
            f"the prompt holds {found} image tokens but the {len(images)} images given take {expected}; pass the "
            "EncodedImage of every image block in the prompt, in order"
        )
    return list(images)


def _is_image_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") in ("image", "image_url")


def _decode_data_url(url: Any, where: str) -> np.ndarray:
    """An OpenAI ``image_url`` part's ``data:image/...;base64,`` URL as pixels (what the reference agents send)."""
    import base64
    import io

    from PIL import Image

    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
        raise ValueError(f"{where}: a local VLM reads images given as pixels or as data:image/...;base64 URLs")
    with Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1]))) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def _images(messages: Sequence[ChatMessage]) -> list[np.ndarray]:
    found: list[np.ndarray] = []
    for index, message in enumerate(messages):
        content: Any = message["content"]
        if isinstance(content, list):
            for part in content:
                where = f"messages[{index}] image part"
                if isinstance(part, dict) and part.get("type") == "image":
                    found.append(check_image(part.get("image"), where))
                elif isinstance(part, dict) and part.get("type") == "image_url":
                    found.append(check_image(_decode_data_url((part.get("image_url") or {}).get("url"), where), where))
    return found


def _placeholders(message: ChatMessage) -> ChatMessage:
    """The message with each image part's pixels dropped (the template writes a placeholder for it)."""
    content: Any = message["content"]
    if not isinstance(content, list):
        return message
    parts = [{"type": "image"} if _is_image_part(p) else p for p in content]
    return ChatMessage(role=message["role"], content=parts)  # type: ignore[typeddict-item]
