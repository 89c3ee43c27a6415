"""A tiny local vision-language model for tests and examples: SmolVLM's architecture, random weights.

:func:`build_tiny_vlm` writes a Hugging Face model folder that loads with the real classes and the real
``from_pretrained`` (``AutoModelForImageTextToText`` -> ``Idefics3ForConditionalGeneration``, the
architecture of SmolVLM; ``AutoProcessor`` -> ``Idefics3Processor`` with its image processor), as
:func:`~agentrl.llm.tiny.build_tiny_model` does for text:

* a byte-level BPE tokenizer trained here on :func:`~agentrl.llm.tiny.tiny_corpus`, with
  ChatML's tokens and the image tokens of Idefics3 (``<fake_token_around_image>``, ``<global-img>``,
  ``<image>``) and a template whose messages may hold image parts (rendered as ``<image>``, which the
  processor expands to ``<fake_token_around_image><global-img>`` + ``image_seq_len`` x ``<image>`` +
  ``<fake_token_around_image>``);
* a SigLIP-style vision tower of one layer on ``image_size`` pixels (patches of 14, so 8x8 patches at
  112; pixel-shuffled 2x2 into 16 image tokens) and a Llama text model of two layers;
* an image processor that resizes every image to ``image_size`` on its long side and pads it square,
  without splitting it into tiles (SmolVLM's ``do_image_splitting=False``).

The weights are random: what matters is that every path (image tokens, pixel values, logprobs,
training) runs for real in well under a second, with no download. (Qwen2-VL's processor cannot be
built without torchvision, which this machine's CPU build of torch has no matching wheel for.)

Example:
    >>> import tempfile
    >>> from transformers import AutoProcessor
    >>> path = build_tiny_vlm(tempfile.mkdtemp() + "/vlm")
    >>> processor = AutoProcessor.from_pretrained(path)
    >>> type(processor).__name__, processor.tokenizer.convert_ids_to_tokens(processor.image_token_id)
    ('Idefics3Processor', '<image>')
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from agentrl.core.errors import DependencyNotInstalled
from agentrl.llm.tiny import is_built, train_tiny_tokenizer, write_model_folder

__all__ = ["TINY_VLM_CHAT_TEMPLATE", "build_tiny_vlm"]

#: ChatML whose message content is a string or a list of ``{"type": "text", "text"}`` and ``{"type": "image"}``
#: parts; an image renders as ``<image>``, which the processor expands into the image's tokens.
TINY_VLM_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<fake_token_around_image>",
    "<global-img>",
    "<image>",
    "<end_of_utterance>",
]
_FORMAT_VERSION = 1
_MARKER = "agentrl_tiny_vlm.json"
PATCH = 14
SCALE = 2  # pixel shuffle: 2x2 patches -> one token


def build_tiny_vlm(
    path: str | PathLike[str],
    *,
    vocab_size: int = 512,
    image_size: int = 112,
    seed: int = 0,
) -> Path:
    """Write a tiny randomly initialised SmolVLM-style model to ``path`` (idempotent, atomic) and return it.

    Args:
        path: the folder to create (an existing folder not built here is never overwritten).
        vocab_size: the BPE vocabulary size (at least 256 + the 7 special tokens).
        image_size: the side, in pixels, every image is resized (and padded) to; a multiple of 28. An
            image then takes ``(image_size / 28) ** 2`` tokens (16 at 112) plus 3 around them.
        seed: seeds the weight initialisation.

    Raises:
        DependencyNotInstalled: torch, transformers, tokenizers or Pillow is missing.
        FileExistsError: ``path`` holds something else.
        ValueError: a vocabulary too small or an image size that is not a multiple of 28.
    """
    if vocab_size < 256 + len(_SPECIALS):
        raise ValueError(f"vocab_size must be at least {256 + len(_SPECIALS)} (the byte alphabet + specials)")
    if image_size < PATCH * SCALE or image_size % (PATCH * SCALE):
        raise ValueError(f"image_size must be a positive multiple of {PATCH * SCALE}, got {image_size}")
    try:
        import torch
        from transformers import (
            GenerationConfig,
            Idefics3Config,
            Idefics3ForConditionalGeneration,
            Idefics3Processor,
            PreTrainedTokenizerFast,
        )
        from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DependencyNotInstalled("torch/transformers/tokenizers/Pillow", extra="llm") from exc

    target = Path(path)
    wanted = {"version": _FORMAT_VERSION, "vocab_size": vocab_size, "image_size": image_size, "seed": seed}
    if is_built(target, _MARKER, wanted, "a tiny VLM"):
        return target

    # Qwen2's pre-tokenizer, as the tiny text model's qwen2 family.
    tokenizer = train_tiny_tokenizer(vocab_size, _SPECIALS, qwen2_style=True)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=TINY_VLM_CHAT_TEMPLATE,
    )
    ids = {token: tokenizer.token_to_id(token) for token in _SPECIALS}
    image_processor = Idefics3ImageProcessorPil(
        do_image_splitting=False,
        size={"longest_edge": image_size},
        max_image_size={"longest_edge": image_size},
    )
    image_seq_len = (image_size // PATCH) ** 2 // SCALE**2
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=fast,
        image_seq_len=image_seq_len,
        chat_template=TINY_VLM_CHAT_TEMPLATE,
    )

    hidden = 64
    config = Idefics3Config(
        text_config={
            "model_type": "llama",
            "vocab_size": tokenizer.get_vocab_size(),
            "hidden_size": hidden,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "initializer_range": 0.2,  # as the tiny text model: greedy decoding then depends on the prompt
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
            "bos_token_id": None,
            "tie_word_embeddings": True,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": image_size,
            "patch_size": PATCH,
            "initializer_range": 0.2,
        },
        scale_factor=SCALE,
        image_token_id=ids["<image>"],
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    stop_ids = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config = GenerationConfig(eos_token_id=stop_ids, pad_token_id=ids["<|endoftext|>"])

    return write_model_folder(target, _MARKER, wanted, model, processor)
