"""A session's model calls -> training ``Sample``\\ s. Pure functions, no I/O.

A *call* is one request the agent sent to the endpoint, as token ids: the prompt the endpoint
rendered (``prompt_ids``) and what the engine generated (``completion_ids``, one sampler
log-prob each). Calls are grouped into *segments*: a call whose prompt starts with a segment's
whole sequence so far (prompt + completions + the tokens added between calls) extends that
segment; any other call (the agent rewrote, summarised or dropped part of its context, or a
sub-agent started its own conversation) opens a new segment. Each segment becomes one Sample:

- ``tokens`` = the segment's whole sequence; the prompt part is the first call's prompt;
- ``loss_mask`` = 1 on every engine-generated token, 0 on every token the endpoint added between
  calls (tool results, user turns, template tokens);
- ``rollout_log_probs`` = the engine's log-prob on generated tokens, 0.0 on added ones;
- ``weight_versions`` = one entry per call that generated tokens (in call order).

Several segments are a fan-out: the samples share one ``rollout_id`` (docs/contract.md §3) and
the step counts the extra segments as ``rollout/agent/context_rewrites``.

Usage::

    calls = [CallRecord(prompt_ids=[1, 2], completion_ids=[3, 4], log_probs=[-0.1, -0.2],
                        finish_reason="stop", weight_version="1"),
             CallRecord(prompt_ids=[1, 2, 3, 4, 9, 9], completion_ids=[5], log_probs=[-0.3],
                        finish_reason="length", weight_version="1")]
    segs = segment_calls(calls)          # one Segment: tokens [1, 2, 3, 4, 9, 9, 5]
    segs[0].loss_mask                    # [1, 1, 0, 0, 1]
    segs[0].rollout_log_probs            # [-0.1, -0.2, 0.0, 0.0, -0.3]
    context_rewrites(segs)               # 0

Source: ours; the prefix-extension rule is the one of the issue that introduced the endpoint
("every call's prompt ids extend the previous call's prompt + completion ids").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallRecord", "Segment", "context_rewrites", "segment_calls", "status_of_finish"]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One completed model call of a session, in token ids.

    ``len(log_probs) == len(completion_ids)``; log-probs are natural-log probabilities (<= 0)
    of the sampled tokens, as the engine reported them.
    """

    #: The prompt the endpoint sent to the engine (rendered chat, or the completion prompt).
    prompt_ids: tuple[int, ...]
    #: The tokens the engine generated (a stop token included when the engine stopped on it).
    completion_ids: tuple[int, ...]
    #: One sampler log-prob per completion token.
    log_probs: tuple[float, ...]
    #: The engine's finish reason: ``"stop"``, ``"length"`` or ``"abort"``.
    finish_reason: str
    #: The engine's weight version for this call (None when it reported none).
    weight_version: str | None = None
    #: A chat call's normalised messages and tools (None for a completion call): what the
    #: token-boundary check (VIM194, --check-token-boundaries) renders again.
    messages: tuple[Mapping[str, Any], ...] | None = None
    tools: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.log_probs) != len(self.completion_ids):
            raise ValueError(f"CallRecord: {len(self.log_probs)} log_probs for "
                             f"{len(self.completion_ids)} completion_ids; expected one each")


@dataclass(slots=True)
class Segment:
    """One training sample's worth of calls: a prompt and a response built by extension."""

    #: The first call's prompt ids (the sample's prompt part).
    prompt_ids: list[int]
    #: Response tokens after the prompt: completions and the tokens added between calls.
    response_ids: list[int] = field(default_factory=list)
    #: 1 on engine-generated tokens, 0 on added ones; ``len == len(response_ids)``.
    loss_mask: list[int] = field(default_factory=list)
    #: The engine's log-prob on generated tokens, 0.0 on added ones.
    rollout_log_probs: list[float] = field(default_factory=list)
    #: One weight version per call that generated tokens and reported one.
    weight_versions: list[str] = field(default_factory=list)
    #: Indices (in session order) of the calls in this segment.
    calls: list[int] = field(default_factory=list)
    #: The finish reason of the segment's last call.
    finish_reason: str = "stop"

    @property
    def tokens(self) -> list[int]:
        """The whole sequence: ``prompt_ids + response_ids``."""
        return self.prompt_ids + self.response_ids

    def extended_by(self, prompt_ids: Sequence[int]) -> bool:
        """Whether ``prompt_ids`` starts with this segment's whole sequence."""
        n = len(self.prompt_ids) + len(self.response_ids)
        return (len(prompt_ids) >= n and list(prompt_ids[:len(self.prompt_ids)]) == self.prompt_ids
                and list(prompt_ids[len(self.prompt_ids):n]) == self.response_ids)

    def append(self, index: int, call: CallRecord) -> None:
        """Extend with ``call`` (whose prompt must extend this segment): the new prompt tokens
        get mask 0 and log-prob 0.0, the completion mask 1 and its log-probs.

        Raises:
            ValueError: ``call.prompt_ids`` does not extend the segment.
        """
        if not self.extended_by(call.prompt_ids):
            raise ValueError(f"call {index}: its prompt does not extend segment of calls "
                             f"{self.calls}")
        added = list(call.prompt_ids[len(self.prompt_ids) + len(self.response_ids):])
        self.response_ids += added + list(call.completion_ids)
        self.loss_mask += [0] * len(added) + [1] * len(call.completion_ids)
        self.rollout_log_probs += [0.0] * len(added) + [float(x) for x in call.log_probs]
        if call.completion_ids and call.weight_version is not None:
            self.weight_versions.append(call.weight_version)
        self.calls.append(index)
        self.finish_reason = call.finish_reason


def segment_calls(calls: Sequence[CallRecord]) -> list[Segment]:
    """Group ``calls`` (session order) into segments, see the module docstring.

    A call joins the most recently extended segment whose whole sequence its prompt starts
    with (so two interleaved sub-agent conversations stay two segments); otherwise it opens a
    new segment whose prompt is the call's prompt.

    Returns:
        ``list[Segment]`` in order of their first call; empty for no calls.
    """
    segments: list[Segment] = []
    recent: list[int] = []  # segment indices, most recently extended last
    for i, call in enumerate(calls):
        target = next((k for k in reversed(recent) if segments[k].extended_by(call.prompt_ids)),
                      None)
        if target is None:
            segments.append(Segment(prompt_ids=list(call.prompt_ids)))
            target = len(segments) - 1
        else:
            recent.remove(target)
        recent.append(target)
        segments[target].append(i, call)
    return segments


def context_rewrites(segments: Sequence[Segment]) -> int:
    """Calls that could not extend an earlier segment: ``len(segments) - 1`` (0 for none)."""
    return max(0, len(segments) - 1)


def status_of_finish(finish_reason: str) -> str:
    """The ``Sample.Status`` name for a segment's last finish reason: ``length`` ->
    ``TRUNCATED``, ``abort``/``cancelled`` -> ``ABORTED``, anything else -> ``COMPLETED``."""
    return {"length": "TRUNCATED", "abort": "ABORTED", "cancelled": "ABORTED"}.get(
        finish_reason, "COMPLETED")
