"""Loss masks for multi-turn chats, by the chat-template prefix method (docs/contract.md §9).

Usage::

    gen = MultiTurnLossMaskGenerator(tokenizer, tokenizer_type="qwen")
    token_ids, loss_mask = gen.get_loss_mask(messages, tools=None)
    len(token_ids) == len(loss_mask)          # one 0/1 per token of the whole conversation

The method works with any Hugging Face tokenizer that has a chat template. With ``R(k)`` = the
token ids of ``messages[:k]`` rendered by the template (with ``tools``) and ``H(k)`` = the same
with ``add_generation_prompt=True``, for each assistant message ``k`` the ids in
``[len(H(k)), len(R(k+1)))`` (its content through the end-of-turn marker) are trainable (1);
headers, every other role and assistant messages whose ``step_loss_mask`` is not 1 are 0.
``token_ids = R(len(messages))``. Rendering is text then ``encode(add_special_tokens=False)``.

See ``docs/contract.md`` §9.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MultiTurnLossMaskGenerator", "SUPPORTED_TOKENIZER_TYPES"]

#: ``--loss-mask-type`` values implemented in v1 (all by the prefix method).
SUPPORTED_TOKENIZER_TYPES: tuple[str, ...] = ("qwen", "qwen3")
_NOT_IMPLEMENTED: tuple[str, ...] = ("qwen3_5", "distill_qwen")


def _is_prefix(prefix: Sequence[int], ids: Sequence[int]) -> bool:
    return len(prefix) <= len(ids) and list(ids[: len(prefix)]) == list(prefix)


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


class MultiTurnLossMaskGenerator:
    """Token ids and a 0/1 loss mask of a chat, assistant turns trainable.

    Args:
        tokenizer: a Hugging Face tokenizer with a ``chat_template``.
        tokenizer_type: ``--loss-mask-type``; ``qwen`` and ``qwen3`` use the prefix method.

    Raises:
        NotImplementedError: ``tokenizer_type`` is ``qwen3_5`` or ``distill_qwen``.
        ValueError: another ``tokenizer_type``, or a tokenizer without a chat template.
    """

    def __init__(self, tokenizer: Any, tokenizer_type: str = "qwen") -> None:
        if tokenizer_type in _NOT_IMPLEMENTED:
            raise NotImplementedError(f"--loss-mask-type {tokenizer_type} is not implemented in "
                                      f"vime v1; use one of {', '.join(SUPPORTED_TOKENIZER_TYPES)}")
        if tokenizer_type not in SUPPORTED_TOKENIZER_TYPES:
            raise ValueError(f"--loss-mask-type {tokenizer_type!r} is unknown; use one of "
                             f"{', '.join(SUPPORTED_TOKENIZER_TYPES)}")
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(f"tokenizer {getattr(tokenizer, 'name_or_path', tokenizer)!r} has no "
                             "chat_template; the loss mask needs one")
        self.tokenizer = tokenizer
        self.tokenizer_type = tokenizer_type

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None,
               *, add_generation_prompt: bool = False) -> list[int]:
        """Token ids of ``messages`` rendered by the chat template (``R(k)`` / ``H(k)``)."""
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
        if tools:
            kwargs["tools"] = list(tools)
        text = self.tokenizer.apply_chat_template([dict(m) for m in messages], **kwargs)
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def _prefix_error(self, k: int, what: str, prefix: Sequence[int],
                      ids: Sequence[int]) -> ValueError:
        at = _first_difference(prefix, ids)
        return ValueError(
            f"chat template is not prefix-stable at message k={k}: {what} (first difference at "
            f"token {at}: {list(prefix[at:at + 5])} vs {list(ids[at:at + 5])}); the template "
            "rewrites earlier turns or the tokenizer merges across turn boundaries, so the "
            "prefix method cannot place the loss mask")

    def get_loss_mask(self, messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Any] | None = None) -> tuple[list[int], list[int]]:
        """``(token_ids, loss_mask)`` of equal length for the whole conversation.

        ``messages``: ``list[dict]`` with ``role`` and ``content`` (plus template keys such as
        ``tool_calls``); an optional per-message ``step_loss_mask`` (0 masks that assistant
        message). ``tools``: passed to the template.

        Raises:
            ValueError: ``messages`` is empty or not a list of dicts with a ``role`` (the index
                is named); ``R(k)`` is not a token prefix of ``H(k)``/``R(k+1)`` or ``H(k)`` of
                ``R(k+1)`` (``k`` is named).
        """
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise ValueError(f"messages must be a list of message dicts, got "
                             f"{type(messages).__name__}")
        if not messages:
            raise ValueError("messages is empty; a conversation needs at least one message")
        for i, message in enumerate(messages):
            if not isinstance(message, Mapping) or "role" not in message:
                raise ValueError(f"messages[{i}] must be a dict with a 'role', got {message!r}")
        previous: list[int] = []  # R(0): nothing rendered
        spans: list[tuple[int, int]] = []
        for k, message in enumerate(messages):
            current = self.render(messages[: k + 1], tools)  # R(k+1)
            if not _is_prefix(previous, current):
                raise self._prefix_error(k, f"R({k}) is not a prefix of R({k + 1})",
                                         previous, current)
            if message["role"] == "assistant" and message.get("step_loss_mask", 1) == 1:
                header = self.render(messages[:k], tools, add_generation_prompt=True)  # H(k)
                if not _is_prefix(previous, header):
                    raise self._prefix_error(k, f"R({k}) is not a prefix of H({k})",
                                             previous, header)
                if not _is_prefix(header, current):
                    raise self._prefix_error(k, f"H({k}) is not a prefix of R({k + 1})",
                                             header, current)
                spans.append((len(header), len(current)))
            previous = current
        loss_mask = [0] * len(previous)
        for start, end in spans:
            loss_mask[start:end] = [1] * (end - start)
        return previous, loss_mask
