"""The per-step sample table the trackers show: a few samples of each step, failed ones first.

Usage::

    rows = sample_table(args, samples)   # [{"index", "group_index", "prompt", "response",
                                         #   "reward", "status", "vime_error"}, ...]

Standard library only (the rollout manager builds it on every step a tracker is on).
"""

from __future__ import annotations

import json
from argparse import Namespace
from collections.abc import Sequence
from enum import Enum
from typing import Any

from vime.report.fates import error_of

__all__ = ["TABLE_COLUMNS", "TABLE_ROWS", "sample_table"]

#: Samples per step in the table.
TABLE_ROWS = 8
#: The table's columns, in order.
TABLE_COLUMNS = ("index", "group_index", "prompt", "response", "reward", "status", "vime_error")
#: Characters of a prompt or response kept in the table.
TEXT_CHARS = 2000


def _reward(args: Namespace, sample: Any) -> float | None:
    value = sample.reward
    if isinstance(value, dict):
        value = value.get(getattr(args, "reward_key", None) or "")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def sample_table(args: Namespace, samples: Sequence[Any], rows: int = TABLE_ROWS
                 ) -> list[dict[str, Any]]:
    """Up to ``rows`` samples of a step as table rows (the failed ones first, then in order);
    ``vime_error`` is ``"hook/type: message"`` or ""."""
    failed = [s for s in samples if error_of(s)]
    chosen = (failed + [s for s in samples if not error_of(s)])[:rows]
    out = []
    for s in chosen:
        rec = error_of(s)
        prompt = s.prompt if isinstance(s.prompt, str) else json.dumps(s.prompt, default=str)
        out.append({
            "index": s.index, "group_index": s.group_index, "prompt": prompt[:TEXT_CHARS],
            "response": str(s.response)[:TEXT_CHARS], "reward": _reward(args, s),
            "status": s.status.value if isinstance(s.status, Enum) else str(s.status),
            "vime_error": (f"{rec.get('hook')}/{rec.get('type')}: {rec.get('message', '')}"
                           if rec else ""),
        })
    return out
