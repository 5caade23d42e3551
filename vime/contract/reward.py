"""How a sample's reward is read as the number training uses (``Sample.get_reward_value``):
the one rule, stdlib only, for ``vime.utils.types`` and the runtime checks alike.

Usage::

    reward_read_problem({"acc": 1.0}, None)   # "is a dict with keys ['acc'] but --reward-key ..."
    reward_read_problem({"acc": 1.0}, "acc")  # None: reward["acc"] is read
    reward_fix(None, None)                    # "set sample.reward to a float on every sample ..."

See ``docs/contract.md`` §2 (``get_reward_value``), VIM110.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

__all__ = ["reward_fix", "reward_read_problem"]


def reward_read_problem(value: Any, reward_key: str | None, *,
                        key_arg: str = "--reward-key") -> str | None:
    """Why no scalar can be read from the reward ``value`` (VIM110), or None when one can:
    ``value`` itself, or ``value[reward_key]`` of a dict. None, a dict with ``reward_key``
    unset and a dict without that key cannot be read. Whether the scalar read is a finite real
    is the runtime check's question (``vime.contract.checks.values.reward_problem``). The text
    reads after the reward's location."""
    if value is None:
        return "is None; every sample needs a reward before training"
    if isinstance(value, Mapping):
        keys = sorted(map(str, value))
        if not reward_key:
            return f"is a dict with keys {keys} but {key_arg} is not set"
        if reward_key not in value:
            return f"is a dict without the key {reward_key!r} ({key_arg}); it has {keys}"
    return None


def reward_fix(value: Any, reward_key: str | None, *, key_arg: str = "--reward-key") -> str:
    """The one fix for a reward that is not valid, chosen by what is wrong: a missing reward
    needs a reward (``key_arg`` cannot help), a dict needs ``key_arg`` (or the key in it),
    anything else a finite float."""
    if value is None:
        return ("set sample.reward to a float on every sample before it is returned (the "
                "default rollout scores samples with --rm-type or --custom-rm-path)")
    if isinstance(value, Mapping):
        keys = sorted(map(str, value))
        if not reward_key:
            return f"pass {key_arg} naming one of {keys}"
        if reward_key in value:
            return reward_fix(value[reward_key], None, key_arg=key_arg)
        return f"store {reward_key!r} in every reward dict, or pass {key_arg} naming one of {keys}"
    if isinstance(value, bool):
        return "store a float (1.0 / 0.0), not a bool"
    if hasattr(value, "item"):
        return "store a Python float: call .item() on the tensor or array"
    if isinstance(value, (str, bytes)):
        return (f"return a number, not a {type(value).__name__}: compare the parsed answer "
                "and return 1.0 / 0.0, or float(text) for a score the model wrote")
    if isinstance(value, numbers.Real):
        return "store a finite float (check for division by zero, NaN or inf)"
    return f"return a float, not a {type(value).__name__}"
