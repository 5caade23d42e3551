"""The token-boundary comparator (VIM194) on a custom multi-turn generate's samples: 1 in
``--check-token-boundaries N`` samples whose loss mask has two or more generated spans is
compared with the chat template's framing of a turn
(:func:`vime.contract.checks.chat.check_generated_turns`). The agent endpoint's trajectories,
which carry their messages, are compared in :mod:`vime.agent.generate` instead.

Usage (the default rollout, after a custom generate's result passed its B2 check)::

    check_generated_turns(state, args, result, hook_path=path)
"""

from __future__ import annotations

import logging
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.contract import checks as rt
from vime.contract.errors import Violation
from vime.utils.types import Sample

__all__ = ["check_generated_turns", "multi_turn"]

logger = logging.getLogger(__name__)



def multi_turn(sample: Any) -> bool:
    """Whether ``sample`` has a loss mask with two or more generated spans (a 0 between 1s)."""
    mask = getattr(sample, "loss_mask", None)
    if not isinstance(mask, list) or not mask:
        return False
    ones = [i for i, m in enumerate(mask) if m]
    return bool(ones) and 0 in mask[ones[0]:ones[-1]]


def _picked(state: Any, args: Namespace) -> bool:
    from vime.config.parser import DEFAULT_TOKEN_BOUNDARY_CHECK

    every = arg(args, "check_token_boundaries")
    every = DEFAULT_TOKEN_BOUNDARY_CHECK if every is None else int(every)
    if every <= 0:
        return False
    state.turn_samples += 1
    return bool((state.turn_samples - 1) % every == 0)


def _framing(state: Any, args: Namespace) -> Any:
    """The template's framing, learnt once per process (None: no tokenizer or template)."""
    if not state.turn_framing_learnt:
        state.turn_framing_learnt = True
        from vime.contract.checks.chat import turn_framing

        try:
            tokenizer = state.tokenizer
        except Exception as exc:  # noqa: BLE001 - the check is skipped, and said once
            logger.warning("--check-token-boundaries: the tokenizer of --hf-checkpoint did "
                           "not load (%s); custom multi-turn generate samples are not compared",
                           exc)
            return None
        state.turn_framing = turn_framing(tokenizer, arg(args, "apply_chat_template_kwargs"))
        if state.turn_framing is None:
            logger.warning("--check-token-boundaries: the chat template of --hf-checkpoint "
                           "renders no generation prompt or no user/tool turn; custom "
                           "multi-turn generate samples are not compared")
    return state.turn_framing


def check_generated_turns(state: Any, args: Namespace, result: Sample | list[Sample], *,
                          hook_path: str | None, rollout_id: int | None = None
                          ) -> list[Violation]:
    """Compare the picked multi-turn samples of one custom generate ``result`` (a ``Sample``
    or ``list[Sample]``) with the chat template; ``state`` is the process's
    :class:`~vime.rollout.vllm.state.RolloutState`. Returns the findings (warnings, logged by
    the boundary)."""
    if arg(args, "contract_check") == "off":   # nothing would be reported: no tokenizer load
        return []
    leaves = result if isinstance(result, list) else [result]
    picked = [s for s in leaves if multi_turn(s) and _picked(state, args)]
    if not picked:
        return []
    framing = _framing(state, args)
    if framing is None:
        return []
    rows = [(f"custom generate sample (index={s.index})", s.tokens, s.loss_mask,
             int(s.response_length)) for s in picked
            if s.tokens and s.loss_mask is not None and len(s.loss_mask) == s.response_length]
    return rt.check_generated_turns_result(rows, state.tokenizer, framing, args,
                                           hook_path=hook_path, rollout_id=rollout_id)
