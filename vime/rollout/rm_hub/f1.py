"""Token-level F1 between a response and its label (``--rm-type f1``).

Usage::

    f1_score("The answer is 85.", "answer 85")      # 0.666...: 2 shared of 4 and 2 tokens

Tokens are lower-cased words with punctuation stripped; articles are kept. Precision and recall
count shared tokens with multiplicity (as SQuAD's F1 does).

F1 as defined for SQuAD (Rajpurkar et al., 2016).
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["f1_score", "normalize_tokens"]

_PUNCT = re.compile(r"[^\w\s]")


def normalize_tokens(text: str) -> list[str]:
    """Lower-cased, punctuation-free whitespace tokens."""
    return _PUNCT.sub(" ", (text or "").lower()).split()


def f1_score(response: str, label: str | None) -> float:
    """F1 of shared tokens, in [0, 1]; 0.0 when either has no token (a label without a word,
    such as ``"???"``, cannot be graded, so it gives no credit; SQuAD's script gives 1.0 when
    both are empty, which pays an empty response for an unreadable label).

    Raises:
        ValueError: ``label`` is None (no ``--label-key``).
    """
    if label is None:
        raise ValueError("f1 reward needs a label: set --label-key")
    pred, gold = normalize_tokens(response), normalize_tokens(str(label))
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)
