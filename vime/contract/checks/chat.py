"""VIM194: a multi-turn trajectory's tokens, outside the spans the engine generated, are what the
chat template renders for its messages (boundary B2, on 1 in ``--check-token-boundaries N``
trajectories). The runtime call with ``--contract-check`` applied is
``check_token_boundaries`` in :mod:`vime.contract.checks.boundaries`; the agent endpoint's
generate step (:mod:`vime.agent.generate`) calls it.

The comparison: ``text`` is the template's rendering (with the generation prompt) of the
messages that the trajectory's last model call answered; ``spans`` are the ``[start, end)``
token ranges the engine generated, the last one that reply. Every earlier span's decoded text
is looked up in ``text`` in order; the text between two spans (and before the first, and after
the last earlier one up to the end) is encoded on its own (``add_special_tokens=False``, as
vime encodes rendered prompts) and compared token by token with the trajectory's tokens there.
A generated span whose text is not in the rendering (a template that drops reasoning or
re-renders a tool call) is reported at its start.

Usage::

    check_vim194(tokenizer, sample.tokens, spans=[(12, 20), (31, 40)], text=rendered,
                 where="agent trajectory (index=3)")          # Violation | None
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS

__all__ = ["check_vim194", "first_difference"]

_SHOW = 6  # tokens shown on each side of a difference


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where ``a`` and ``b`` differ (the shorter length when one is a prefix
    of the other), or None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return repr(str(tokenizer.decode(list(ids), skip_special_tokens=False)))


def _encode_all(tokenizer: Any, pieces: Sequence[str]) -> list[list[int]]:
    """Each piece encoded without special tokens, in one batch call when the tokenizer takes
    a list (a Hugging Face tokenizer), else one by one."""
    try:
        batch = tokenizer(list(pieces), add_special_tokens=False)["input_ids"]
    except (TypeError, KeyError, AttributeError):
        batch = [tokenizer.encode(p, add_special_tokens=False) for p in pieces]
    return [list(ids) if p else [] for p, ids in zip(pieces, batch, strict=True)]


def check_vim194(tokenizer: Any, tokens: Sequence[int], *, spans: Sequence[tuple[int, int]],
                 text: str, where: str) -> Violation | None:
    """VIM194 on one trajectory (see the module docstring).

    Args:
        tokenizer: the run's tokenizer (``encode``, ``decode``).
        tokens: the trajectory's tokens (``Sample.tokens``).
        spans: the generated ``[start, end)`` ranges in order; the last is the reply to
            ``text`` (so ``tokens[:spans[-1][0]]`` is the prompt of the last call).
        text: the chat template's rendering of the last call's messages, with the generation
            prompt.
        where: the sample, for the message.
    """
    if not spans:
        return None
    inv = INVARIANTS["VIM194"]
    # pass 1, text only: the pieces between the generated spans, up to a span not found
    pieces: list[tuple[int, int, str]] = []      # (first token, end token, text) per piece
    missing: Violation | None = None
    tok_at, text_at = 0, 0
    for turn, (start, end) in enumerate(spans):
        if turn == len(spans) - 1:
            pieces.append((tok_at, start, text[text_at:]))
            break
        generated = str(tokenizer.decode(list(tokens[start:end]), skip_special_tokens=False))
        found = text.find(generated, text_at)
        if found < 0:
            before = str(tokenizer.decode(list(tokens[tok_at:start]), skip_special_tokens=False))
            shown = text_at + len(before) if text.startswith(before, text_at) else text_at
            pieces.append((tok_at, start, text[text_at:text_at + len(before)]))
            missing = inv.violation(where, problem=(
                f"differs from the chat template's rendering of its messages at token "
                f"{start}: the engine's reply of turn {turn + 1} (tokens {start}-{end - 1}, "
                f"{_decode(tokenizer, tokens[start:min(end, start + 2 * _SHOW)])}...) is not in "
                f"the rendering, which has {text[shown:shown + 60]!r} there: the template renders "
                "that turn another way (dropped reasoning, a re-rendered tool call, another "
                "end token)"))
            break
        pieces.append((tok_at, start, text[text_at:found]))
        tok_at, text_at = end, found + len(generated)
    # pass 2: each piece's tokens, in order; the first difference is reported
    for turn, ((first, stop, _), expected) in enumerate(
            zip(pieces, _encode_all(tokenizer, [p[2] for p in pieces]), strict=True)):
        actual = list(tokens[first:stop])
        at = first_difference(actual, expected)
        if at is not None:
            return inv.violation(where, problem=(
                f"differs from the chat template's rendering of its messages at token "
                f"{first + at} (before turn {turn + 1}'s reply): the trajectory has "
                f"{_decode(tokenizer, actual[at:at + _SHOW])} ({actual[at:at + _SHOW]}), the "
                f"template renders {_decode(tokenizer, expected[at:at + _SHOW])} "
                f"({expected[at:at + _SHOW]}); the policy is trained on a sequence it will "
                "not see when the conversation is rendered at once"))
    return missing
