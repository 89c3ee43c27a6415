"""Token ids of a growing chat, built turn by turn and never re-tokenised.

A multi-turn rollout alternates the policy's sampled tokens with text the env wrote (an
observation, a tool's output) wrapped in the chat template's glue (end of the assistant turn,
the user header, the assistant header). Re-applying the chat template to the whole conversation
each turn and tokenising it again gives ids that can differ from the ones sampled (BPE merges
across a boundary, a template that rewrites earlier turns): the tokens trained on then differ from
the tokens generated, a quiet source of off-policy error. :class:`ChatTokenizer` instead tokenises
only the *new* text of each turn and appends it to the exact ids so far.

The glue of one env turn is found by rendering the template twice around a placeholder assistant
message (once without the next user message, once with it and the generation prompt) and taking
the difference; a template for which that difference is not a plain suffix (one that rewrites
earlier turns) is refused with :class:`TemplateNotIncremental`.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

from agentrl.core.errors import AgentRLError
from agentrl.llm.base import ChatMessage

__all__ = ["ChatTokenizer", "TemplateNotIncremental"]

# A placeholder that no tokenizer or template changes, used to locate where assistant text sits.
_PLACEHOLDER = "\u2063AGENTRL-ASSISTANT-TURN\u2063"


class TemplateNotIncremental(AgentRLError, ValueError):
    """The chat template rewrites earlier turns, so a conversation cannot be extended token by token."""


class ChatTokenizer:
    r"""Incremental chat-template tokenisation for token-level trajectories.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template (the policy's own).
        stop_token_ids: the ids that end an assistant turn when sampled (EOS, end-of-turn); when a
            completion ends with one of them, the glue after it omits the text of that token.

    Example:
        >>> import tempfile
        >>> from agentrl.llm.tiny import build_tiny_model
        >>> folder = build_tiny_model(tempfile.mkdtemp() + "/tiny", family="qwen2")
        >>> chat = ChatTokenizer.from_pretrained(folder)
        >>> ids = chat.prompt_ids([{"role": "user", "content": "2+2?"}])
        >>> chat.decode(ids)
        '<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n'
        >>> sampled = chat.encode("4") + [chat.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        >>> chat.decode(chat.observation_ids("Correct.", sampled))
        '\n<|im_start|>user\nCorrect.<|im_end|>\n<|im_start|>assistant\n'
    """

    def __init__(self, tokenizer: Any, stop_token_ids: Sequence[int] = ()) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template; set tokenizer.chat_template (e.g. ChatML) first")
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        self.stop_token_ids = frozenset(int(i) for i in stop_token_ids) | ({int(eos)} if eos is not None else set())
        self._glue_cache: dict[tuple[bool, str], tuple[str, str]] = {}
        self._prompt_cache: dict[tuple[tuple[str, str], ...], list[int]] = {}

    @classmethod
    def from_pretrained(cls, path: str | PathLike[str], **kwargs: Any) -> ChatTokenizer:
        """Load the tokenizer of a model folder (as :class:`TransformersBackend` does) and wrap it.

        The stop tokens are those the backends stop on (``find_stop_token_ids``) unless given.
        """
        from pathlib import Path

        from agentrl.llm.transformers_backend import (
            _import_torch_transformers,
            _load_tokenizer,
            find_stop_token_ids,
            generation_eos_ids,
        )

        _, transformers = _import_torch_transformers()
        tokenizer = _load_tokenizer(transformers, Path(path))
        stops = kwargs.pop("stop_token_ids", None)
        if stops is None:
            stops = find_stop_token_ids(tokenizer, generation_eos_ids(Path(path)))
        return cls(tokenizer, stop_token_ids=stops, **kwargs)

    @classmethod
    def for_backend(cls, backend: Any) -> ChatTokenizer:
        """The chat tokenizer of a :class:`TransformersBackend` (its tokenizer and stop tokens)."""
        return cls(backend.tokenizer, stop_token_ids=backend.stop_token_ids)

    # ------------------------------------------------------------------ text <-> ids

    def encode(self, text: str) -> list[int]:
        """Token ids of a piece of text (special tokens written in it are recognised; no BOS added)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of token ids (special tokens kept by default, so glue shows)."""
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def render(self, messages: Sequence[ChatMessage], *, add_generation_prompt: bool = False) -> str:
        """The chat template applied to whole messages (for checks; rollouts never tokenise this)."""
        return str(
            self.tokenizer.apply_chat_template(
                [dict(m) for m in messages], add_generation_prompt=add_generation_prompt, tokenize=False
            )
        )

    # ------------------------------------------------------------------ the two kinds of turn

    def prompt_ids(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The first prompt of an episode (system and task messages plus the generation prompt)."""
        if not messages:
            raise ValueError("a prompt needs at least one message")
        # GRPO groups start from the same prompt: tokenise it once (a small cache of recent prompts).
        key = tuple((m["role"], m["content"]) for m in messages)
        cached = self._prompt_cache.get(key)
        if cached is None:
            cached = self.encode(self.render(messages, add_generation_prompt=True))
            if len(self._prompt_cache) >= 256:
                self._prompt_cache.pop(next(iter(self._prompt_cache)))
            self._prompt_cache[key] = cached
        return list(cached)

    def completion_text(self, completion_ids: Sequence[int]) -> str:
        """What the assistant said in a completion: its tokens without a trailing end-of-turn token."""
        ids = list(completion_ids)
        if ids and ids[-1] in self.stop_token_ids:
            ids = ids[:-1]
        return self.decode(ids, skip_special_tokens=False)

    def observation_ids(
        self, observation: str, completion_ids: Sequence[int], *, has_system: bool = True, role: str = "user"
    ) -> list[int]:
        """The ids to append after a completion: end of turn, the env's message, the generation prompt.

        That is the rest of the assistant turn as the template closes it, ``observation`` as a
        ``role`` message, and the header of the next assistant turn.

        Args:
            observation: the env's text for the next turn.
            completion_ids: the completion as sampled; when it ends with an end-of-turn token, that
                token is not written again.
            has_system: whether the conversation starts with a system message (some templates
                write turns differently without one).
            role: the role of the env's message (``"user"``; ``"tool"`` where the template has it).

        Raises:
            TemplateNotIncremental: the template rewrites earlier turns.
        """
        _, header = self._glue(has_system, role)
        before, _, after = header.partition(_PLACEHOLDER)
        return self.encode(self.closing_text(completion_ids, has_system=has_system) + before + observation + after)

    def closing_text(self, completion_ids: Sequence[int], *, has_system: bool = True) -> str:
        r"""The text the template writes after a completion to close the assistant turn.

        When the completion ends with an end-of-turn token, that token's text is not repeated (for
        ChatML, ``"\n"`` is left of ``"<|im_end|>\n"``); after a cut (a stop string, the token limit)
        it is the whole close.
        """
        close, _ = self._glue(has_system, "user")
        ids = list(completion_ids)
        if ids and ids[-1] in self.stop_token_ids:
            token_text = self.decode(ids[-1:])
            if close.startswith(token_text):
                return close[len(token_text) :]
        return close

    def close_ids(self, completion_ids: Sequence[int], *, has_system: bool = True) -> list[int]:
        """The ids of :meth:`closing_text` (trainers append them, masked out, after a final turn cut short)."""
        return self.encode(self.closing_text(completion_ids, has_system=has_system))

    def _glue(self, has_system: bool, role: str) -> tuple[str, str]:
        """(text after an assistant message's content, the env message with placeholder + gen prompt)."""
        key = (has_system, role)
        if key not in self._glue_cache:
            base: list[ChatMessage] = [{"role": "system", "content": "S"}] if has_system else []
            base = [*base, {"role": "user", "content": "U"}, {"role": "assistant", "content": _PLACEHOLDER}]
            closed = self.render(base)
            extended = self.render([*base, {"role": role, "content": _PLACEHOLDER}], add_generation_prompt=True)
            if not extended.startswith(closed) or closed.count(_PLACEHOLDER) != 1:
                raise TemplateNotIncremental(
                    "the chat template does not extend a conversation by appending to it (it rewrites "
                    "earlier turns), so token-level trajectories cannot be built incrementally; pass a "
                    "chat template that only appends (e.g. without reasoning stripping)"
                )
            close = closed[closed.index(_PLACEHOLDER) + len(_PLACEHOLDER) :]
            header = extended[len(closed) :]
            if header.count(_PLACEHOLDER) != 1:
                raise TemplateNotIncremental(f"the chat template does not write a {role!r} message's content once")
            self._glue_cache[key] = (close, header)
        return self._glue_cache[key]
