"""Token-level trajectories: what a trainer needs from one multi-turn episode, exactly as sampled.

One :class:`Trajectory` holds a single flat token sequence (the first prompt, then for each turn
the policy's completion and the env's reply with the chat template's glue), a loss mask that is 1
exactly on the policy's sampled tokens, the sampler's logprob of each of those tokens, and per
turn: the token span, the reward, the ``void_turn`` flag and the env's info. Nothing in it is
re-tokenised: the ids are appended as they were sampled or tokenised once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agentrl.core.serialize import json_safe
from agentrl.llm.base import ChatMessage

__all__ = ["RolloutRequest", "Trajectory", "TurnRecord"]


@dataclass(frozen=True)
class RolloutRequest:
    """One episode to collect.

    Attributes:
        seed: the seed passed to ``env.reset``; ``None`` for a fresh random one.
        options: the reset options (for example ``{"task_id": "..."}``).
        group_id: requests with the same group id form a GRPO group (same task, same seed).
        index: the position of this request in its group.
    """

    seed: int | None = None
    options: dict[str, Any] | None = None
    group_id: int | str | None = None
    index: int = 0


@dataclass
class TurnRecord:
    """One policy turn and the env's answer to it.

    Attributes:
        completion_span: ``[start, end)`` of the policy's sampled tokens in ``Trajectory.token_ids``.
        observation_span: ``[start, end)`` of the env's reply (glue included); empty after the last turn.
        action: the text passed to ``env.step``.
        finish_reason: the backend's finish reason (``"stop"``, ``"length"``).
        reward: the reward ``env.step`` returned.
        terminated: as returned by ``env.step``.
        truncated: as returned by ``env.step`` (or the engine's own context limit).
        void_turn: the env's ``info["void_turn"]`` (an unparsable action, for instance).
        info: the env's info, made JSON-safe.
        policy_version: the policy version that sampled this turn.
    """

    completion_span: tuple[int, int]
    observation_span: tuple[int, int]
    action: str
    finish_reason: str
    reward: float
    terminated: bool
    truncated: bool
    void_turn: bool
    info: dict[str, Any]
    policy_version: int


@dataclass
class Trajectory:
    """One episode as token ids, loss mask, logprobs and per-turn records.

    Invariants (checked by :meth:`validate`): ``token_ids``, ``loss_mask`` and ``logprobs`` have the
    same length; ``loss_mask`` is 1 exactly inside the turns' completion spans; ``logprobs`` is 0.0
    outside them; the spans are in order and tile the sequence after the first prompt.

    Attributes:
        request: the request this episode answered.
        token_ids: the whole episode, first prompt included.
        loss_mask: 1 on tokens the policy sampled, 0 on everything the env or the template wrote.
        logprobs: the sampler's logprob of each sampled token; 0.0 elsewhere.
        prompt_length: the length of the first prompt.
        turns: one record per policy turn.
        messages: the conversation as chat messages (the assistant's text is its decoded tokens).
        status: ``"ok"`` or ``"failed"``.
        failure: why it failed (``None`` when ok).
        attempts: how many times this request was tried (retries after failures).
        task_id: the env's ``info["task_id"]`` after reset, when it gives one.
        policy_version: the policy version when the episode started.
        staleness: how many policy versions the newest turn lagged the policy at the end.
        timings: wall-clock seconds (``total``, ``generate``, ``env``); timings live here, not in info.
        images: the images in ``token_ids``, in order (a VLM's
            :class:`~agentrl.llm.vlm_backend.EncodedImage`: each one's token block and pixel
            inputs); empty for text. Their tokens are env tokens: loss mask 0.
        windows: the episode's earlier context windows, oldest first, when the engine keeps only the last
            ``max_images`` screenshots (:class:`~agentrl.rollout.engine.RolloutConfig`): each is a
            trajectory of its own (its tokens, turns and images, valid by itself), and this one holds the
            last window. Empty otherwise. :meth:`pieces` lists them all; :attr:`all_turns` and the reward
            properties cover every window.
    """

    request: RolloutRequest
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    prompt_length: int = 0
    turns: list[TurnRecord] = field(default_factory=list)
    messages: list[ChatMessage] = field(default_factory=list)
    status: str = "ok"
    failure: str | None = None
    attempts: int = 1
    task_id: str | None = None
    policy_version: int = 0
    staleness: int = 0
    reset_info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=lambda: {"total": 0.0, "generate": 0.0, "env": 0.0})
    images: list[Any] = field(default_factory=list)
    windows: list[Trajectory] = field(default_factory=list)

    # ------------------------------------------------------------------ building

    def append_env(self, ids: Sequence[int]) -> tuple[int, int]:
        """Append tokens the env or the template wrote (masked out); return their span."""
        start = len(self.token_ids)
        self.token_ids.extend(int(i) for i in ids)
        self.loss_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))
        return start, len(self.token_ids)

    def append_policy(self, ids: Sequence[int], logprobs: Sequence[float]) -> tuple[int, int]:
        """Append the policy's sampled tokens with their logprobs; return their span."""
        if len(ids) != len(logprobs):
            raise ValueError(f"{len(ids)} sampled tokens but {len(logprobs)} logprobs")
        start = len(self.token_ids)
        self.token_ids.extend(int(i) for i in ids)
        self.loss_mask.extend([1] * len(ids))
        self.logprobs.extend(float(x) for x in logprobs)
        return start, len(self.token_ids)

    # ------------------------------------------------------------------ reading

    @property
    def ok(self) -> bool:
        """Whether the episode ran to its end without a failure."""
        return self.status == "ok"

    @property
    def all_turns(self) -> list[TurnRecord]:
        """Every turn of the episode, those of earlier windows first (the same as :attr:`turns` without windows)."""
        if not self.windows:
            return self.turns
        return [turn for window in self.windows for turn in window.turns] + self.turns

    @property
    def num_turns(self) -> int:
        """How many policy turns the episode has had, in every window."""
        return sum(len(window.turns) for window in self.windows) + len(self.turns)

    def pieces(self) -> list[Trajectory]:
        """The token sequences a trainer learns from: the earlier windows, then this one (just ``[self]`` without)."""
        return [*self.windows, self]

    @property
    def rewards(self) -> list[float]:
        """The reward of each turn (every window's)."""
        return [turn.reward for turn in self.all_turns]

    @property
    def total_reward(self) -> float:
        """The sum of the turns' rewards (the return, undiscounted)."""
        return float(sum(self.rewards))

    @property
    def terminal_reward(self) -> float:
        """The reward of the last turn (0.0 when there is none)."""
        turns = self.all_turns
        return turns[-1].reward if turns else 0.0

    @property
    def num_policy_tokens(self) -> int:
        """How many tokens the policy sampled."""
        return sum(self.loss_mask)

    def validate(self) -> None:
        """Check the invariants in the class docstring; raise ``ValueError`` naming the first broken one."""
        n = len(self.token_ids)
        if len(self.loss_mask) != n or len(self.logprobs) != n:
            raise ValueError(f"lengths differ: {n} ids, {len(self.loss_mask)} mask, {len(self.logprobs)} logprobs")
        expected = [0] * n
        cursor = self.prompt_length
        for number, turn in enumerate(self.turns):
            start, end = turn.completion_span
            if start != cursor or end < start:
                raise ValueError(f"turn {number}: completion span {turn.completion_span} does not start at {cursor}")
            expected[start:end] = [1] * (end - start)
            cursor = end
            o_start, o_end = turn.observation_span
            if o_end > o_start:
                if o_start != cursor:
                    raise ValueError(f"turn {number}: observation span {turn.observation_span} does not follow")
                cursor = o_end
        if cursor != n:
            raise ValueError(f"the spans end at {cursor} but there are {n} tokens")
        if expected != list(self.loss_mask):
            raise ValueError("loss_mask is not 1 exactly on the completion spans")
        if any(lp != 0.0 for lp, m in zip(self.logprobs, self.loss_mask, strict=True) if not m):
            raise ValueError("logprobs must be 0.0 outside the completion spans")
        self._validate_images()

    def _validate_images(self) -> None:
        """Each image's token block (``image.token_ids``, where images carry them) is in the sequence, in order.

        A VLM's forward pass pairs the i-th image with the i-th block of image tokens; an image whose tokens
        were cut away would be paired with the wrong block, or with none.
        """
        cursor = 0
        ids = self.token_ids
        for number, image in enumerate(self.images):
            block = list(getattr(image, "token_ids", ()) or ())
            if not block:
                continue
            found = -1
            for start in range(cursor, len(ids) - len(block) + 1):
                if ids[start] == block[0] and ids[start : start + len(block)] == block:
                    found = start
                    break
            if found < 0:
                raise ValueError(
                    f"image {number}'s {len(block)} tokens are not in the sequence after position {cursor} "
                    f"({len(self.images)} images): an image without its tokens"
                )
            cursor = found + len(block)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (for trace files)."""
        images, windows = self.images, self.windows
        self.images, self.windows = [], []  # pixels stay out of trace files: their digests go in
        try:
            data = asdict(self)
        finally:
            self.images, self.windows = images, windows
        data["images"] = [getattr(image, "digest", None) for image in images]
        data["windows"] = [window.to_dict() for window in windows]
        return json_safe(data)
