"""Answer extraction and grading for numeric answers (``--rm-type math`` and ``boxed_math``).

Usage::

    extract_last_number("The answer is -1,234.")      # "-1234"
    extract_boxed(r"so \\boxed{\\frac{1}{2}} done")   # "\\frac{1}{2}"
    math_reward("The answer is 85.", "85")            # 1.0
    math_reward("The answer is 85.", "The answer is 85.")   # 1.0 (the label's last number)

Grading: the last number of the response equals the label's last number (or the label itself
when it holds no number, compared as stripped text). Numbers are compared exactly as decimals
(``"85" == "85.0"``); thousands separators are ignored.

See ``docs/contract.md`` §5 (the ``math`` type and the ``boxed_`` prefix).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["extract_boxed", "extract_last_number", "math_reward", "numbers_equal"]

_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")


def extract_last_number(text: str) -> str | None:
    """The last number in ``text`` without thousands separators (None if there is none)."""
    found = _NUMBER.findall(text or "")
    if not found:
        return None
    return str(found[-1]).replace(",", "").lstrip("+")


def extract_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (balanced braces), or None."""
    start = (text or "").rfind("\\boxed")
    if start < 0:
        return None
    i = text.find("{", start)
    if i < 0:
        return None
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
    return None


def numbers_equal(a: str, b: str) -> bool:
    """Decimal equality of two number strings (``"85" == "85.0"``); False if either is not one."""
    try:
        return Decimal(a) == Decimal(b)
    except (InvalidOperation, ValueError):
        return False


def math_reward(response: str, label: str | int | float | None, *, boxed: bool = False) -> float:
    """1.0 if the response's answer matches ``label``, else 0.0.

    Args:
        response: generated text.
        label: the ground truth (a number, or text whose last number is the answer).
        boxed: grade only the last ``\\boxed{...}`` of the response (0.0 without one).

    Raises:
        ValueError: ``label`` is None (the dataset has no ``--label-key``).
    """
    if label is None:
        raise ValueError("math reward needs a label: set --label-key (or the eval dataset's "
                         "label_key) to the record key holding the answer")
    if boxed:
        inner = extract_boxed(response)
        if inner is None:
            return 0.0
        response = inner
    label_text = str(label).strip()
    label_boxed = extract_boxed(label_text)
    if label_boxed is not None:
        label_text = label_boxed
    expected = extract_last_number(label_text)
    got = extract_last_number(response)
    if expected is None:
        return 1.0 if response.strip() == label_text else 0.0
    return 1.0 if got is not None and numbers_equal(got, expected) else 0.0
