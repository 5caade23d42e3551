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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from vime.contract.errors import Violation
from vime.contract.invariants import INVARIANTS

__all__ = ["INSERTED_TEXT_AT_FAULT", "INSERTED_TOKENS_AT_FAULT", "TEMPLATE_AT_FAULT",
           "TURN_ROLES", "TurnFraming", "check_generated_turns", "check_vim194",
           "first_difference", "generated_spans", "turn_framing"]

_SHOW = 6  # tokens shown on each side of a difference

#: VIM194's fix by the side at fault, where the check can tell: the template (it renders an
#: engine reply another way), or the custom generate's own inserted turn (its text is not the
#: template's framing of a turn, or its tokens are not the tokenizer's for that text). Where
#: it cannot (tokens of the template's own text that differ at a boundary), the invariant's
#: fix applies.
TEMPLATE_AT_FAULT = (
    "the chat template is at fault, not the trajectory: it renders the engine's reply "
    "another way; run `vime-lint template MODEL_DIR` to see where, and fix the template so "
    "each turn's rendering is a prefix of the next (or keep the engine's tokens and render "
    "only what follows them, as the agent endpoint does)")
INSERTED_TEXT_AT_FAULT = (
    "the text the generate inserts between two replies is at fault, not the chat template: "
    "write each inserted turn as the template frames it, {before!r} + the turn's content + "
    "{after!r} (or render the conversation with tokenizer.apply_chat_template and append only "
    "what follows the part already in the sample), not a hand-written separator")
INSERTED_TOKENS_AT_FAULT = (
    "the generate's encoding of its inserted turn is at fault, not the chat template: encode "
    "the whole inserted text in one call, tokenizer.encode(text, add_special_tokens=False), "
    "with special tokens kept as tokens (no split_special_tokens, no piece-by-piece encoding)")


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where ``a`` and ``b`` differ (the shorter length when one is a prefix
    of the other), or None when they are equal."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return repr(str(tokenizer.decode(list(ids), skip_special_tokens=False)))


def _token_difference(tokenizer: Any, actual: Sequence[int], expected: Sequence[int], at: int,
                      head: str, other: str) -> str:
    """VIM194's problem text for the first differing token ``at``: ``head``, the sample's
    tokens there (decoded, then ids), ``other``, the expected ones, and why it matters."""
    return (f"{head} {_decode(tokenizer, actual[at:at + _SHOW])} ({list(actual[at:at + _SHOW])}), "
            f"{other} {_decode(tokenizer, expected[at:at + _SHOW])} "
            f"({list(expected[at:at + _SHOW])}); the policy is trained on a sequence it will "
            "not see when the conversation is rendered at once")


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
                "end token)"), fix=TEMPLATE_AT_FAULT)
            break
        pieces.append((tok_at, start, text[text_at:found]))
        tok_at, text_at = end, found + len(generated)
    # pass 2: each piece's tokens, in order; the first difference is reported
    for turn, ((first, stop, _), expected) in enumerate(
            zip(pieces, _encode_all(tokenizer, [p[2] for p in pieces]), strict=True)):
        actual = list(tokens[first:stop])
        at = first_difference(actual, expected)
        if at is not None:
            return inv.violation(where, problem=_token_difference(
                tokenizer, actual, expected, at,
                f"differs from the chat template's rendering of its messages at token "
                f"{first + at} (before turn {turn + 1}'s reply): the trajectory has",
                "the template renders"))
    return missing


# ---- custom multi-turn generate samples (no messages): the template's framing of a turn ----

#: Stand-in texts whose rendering shows what the template puts around a turn.
_REPLY, _TURN, _ASK = "\x02vime-reply\x03", "\x02vime-turn\x03", "\x02vime-ask\x03"
#: Roles a generate's inserted turn may have (an environment answer, a tool result).
TURN_ROLES = ("user", "tool")


@dataclass(frozen=True)
class TurnFraming:
    """What a chat template renders between two assistant replies, learnt once from its own
    rendering of stand-in messages (:func:`turn_framing`).

    ``generation_prompt`` opens an assistant reply (ChatML: ``"<|im_start|>assistant\\n"``);
    ``between[role]`` is ``(before, after)``: the text after a reply's content and before a
    ``role`` turn's content, and the text after that content up to the next reply (the
    generation prompt included).
    """

    generation_prompt: str
    between: Mapping[str, tuple[str, str]]


def turn_framing(tokenizer: Any, template_kwargs: Mapping[str, Any] | None = None
                 ) -> TurnFraming | None:
    """The chat template's :class:`TurnFraming`, from ``apply_chat_template`` on
    ``[user, assistant, ROLE]`` with the generation prompt, for each role of
    :data:`TURN_ROLES` the template renders; None when it has no template, renders no
    generation prompt, or renders neither role."""
    kwargs = dict(template_kwargs or {})

    def render(messages: list[dict[str, str]], prompt: bool) -> str | None:
        try:
            return str(tokenizer.apply_chat_template(messages, tokenize=False,
                                                     add_generation_prompt=prompt, **kwargs))
        except Exception:  # noqa: BLE001 - no template, or one that refuses this order
            return None

    ask = [{"role": "user", "content": _ASK}]
    with_prompt, without = render(ask, True), render(ask, False)
    if with_prompt is None or without is None or not with_prompt.startswith(without):
        return None
    generation_prompt = with_prompt[len(without):]
    if not generation_prompt.strip():
        return None
    between: dict[str, tuple[str, str]] = {}
    for role in TURN_ROLES:
        text = render([*ask, {"role": "assistant", "content": _REPLY},
                       {"role": role, "content": _TURN}], True)
        if text is None or text.count(_REPLY) != 1 or text.count(_TURN) != 1:
            continue
        after_reply = text[text.index(_REPLY) + len(_REPLY):]
        before, _, after = after_reply.partition(_TURN)
        if after.endswith(generation_prompt):
            between[role] = (before, after)
    return TurnFraming(generation_prompt, MappingProxyType(between)) if between else None


def generated_spans(loss_mask: Sequence[int], response_start: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` token ranges (in ``Sample.tokens``) where ``loss_mask`` is 1: the
    spans the engine generated in a multi-turn sample."""
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(loss_mask):
        if not m:
            continue
        at = response_start + i
        if spans and spans[-1][1] == at:
            spans[-1] = (spans[-1][0], at + 1)
        else:
            spans.append((at, at + 1))
    return spans


def _frames(reply: str, inserted: str, before: str, after: str) -> bool:
    """Whether ``reply + inserted`` is ``content + before + TURN + after``, where the reply may
    itself end with the start of ``before`` (an end-of-turn token the engine generated)."""
    joined = reply + inserted
    for at in range(max(0, len(reply) - len(before)), len(reply) + 1):
        if joined.startswith(before, at):
            return len(joined) - len(after) >= at + len(before) and joined.endswith(after)
    return False


def check_generated_turns(tokenizer: Any, tokens: Sequence[int], *,
                          loss_mask: Sequence[int], response_length: int, framing: TurnFraming,
                          where: str) -> Violation | None:
    """VIM194 on a custom multi-turn generate's sample, which carries no messages: every stretch
    of tokens the generate inserted between two generated spans (``loss_mask`` 0 between 1s)
    that opens a new reply (it holds the generation prompt) must be what the template renders
    there: the end of the reply, a ``user`` or ``tool`` turn, the generation prompt
    (:class:`TurnFraming`), encoded as the tokenizer encodes that text. A stretch without the
    generation prompt continues the same reply (a tool result inside one assistant turn, as in
    search-R1-style generates) and is not compared.

    Args:
        tokens: ``Sample.tokens`` (prompt, then ``response_length`` response tokens).
        loss_mask: ``Sample.loss_mask`` (``response_length`` entries).
        where: the sample, for the message.
    """
    start = len(tokens) - response_length
    spans = generated_spans(loss_mask, start)
    inv = INVARIANTS["VIM194"]
    marker = framing.generation_prompt.strip()
    for turn, ((s0, e0), (s1, _)) in enumerate(zip(spans, spans[1:], strict=False), start=1):
        inserted_ids = list(tokens[e0:s1])
        inserted = str(tokenizer.decode(inserted_ids, skip_special_tokens=False))
        if marker not in inserted:
            continue
        reply = str(tokenizer.decode(list(tokens[s0:e0]), skip_special_tokens=False))
        if not any(_frames(reply, inserted, b, a) for b, a in framing.between.values()):
            role, (before, after) = next(iter(framing.between.items()))
            return inv.violation(where, problem=(
                f"inserts a turn the chat template does not render at token {e0} (after reply "
                f"{turn}, tokens {s0}-{e0 - 1}): the sample has {inserted[:80]!r} there, the "
                f"template renders {before!r} after a reply, then the {role} turn, then "
                f"{after!r} (tried: {', '.join(framing.between)}); the policy is trained on "
                "turn boundaries it will not see when the conversation is rendered at once"),
                fix=INSERTED_TEXT_AT_FAULT.format(before=before, after=after))
        expected = _encode_all(tokenizer, [inserted])[0]
        at = first_difference(inserted_ids, expected)
        if at is not None:
            return inv.violation(where, problem=_token_difference(
                tokenizer, inserted_ids, expected, at,
                f"differs from the tokenizer's encoding of its own text at token {e0 + at} "
                f"(the turn inserted after reply {turn}): the sample has",
                "encoding that text gives"), fix=INSERTED_TOKENS_AT_FAULT)
    return None
