"""The fix of a ``VIM2xx`` finding, in vime's words: specific to the field or value when known, else the invariant's."""

from __future__ import annotations

import re

from vime.contract import INVARIANTS

__all__ = ["fix_for"]


def fix_for(code: str, context: str, detail: str) -> str:
    """The fix for this finding, in vime's words: specific to the field or value when known,
    else the invariant's."""
    if code in ("VIM203", "VIM204"):
        return INVARIANTS[code].fix
    if code == "VIM200":
        if re.search(r'got "(?:Tensor|ndarray|[^"]*floating|[^"]*float\d+|[^"]*int\d+)', detail):
            return "return a Python number: `float(value)` (`tensor.item()`, `float(x)`)"
        if 'got "None"' in detail or "Missing return" in detail or "Return value expected" \
                in detail:
            return "return a value on every path (raise instead of returning None)"
        if 'got "list[' in detail and "RolloutFn" in context:
            return "wrap the groups: `return RolloutFnTrainOutput(samples=groups)`"
        if 'got "dict[' in detail and "RolloutFn" in context:
            return ("return the output dataclass: `RolloutFnTrainOutput(samples=groups, "
                    "metrics=...)` on the train path, `RolloutFnEvalOutput(data={name: {...}})` "
                    "on the eval path")
        if 'got "str"' in detail:
            return "convert the text to the contract's type (`float(text)` for a reward)"
    if code == "VIM202" and "(Sample.reward)" in context:
        return "store a Python float (`float(x)`, `tensor.item()`), or a dict with --reward-key"
    if "(Sample.prompt)" in context:
        return "narrow it first: `if isinstance(sample.prompt, str): ...` (else a message list)"
    if "(Sample.reward)" in context:
        return "read it with `sample.get_reward_value(args)` (a float)"
    if "(Sample.status)" in context:
        return "store a member of `Sample.Status` (`Sample.Status.COMPLETED`)"
    if ".metrics`" in context:
        return "give one float per metric key (`float(sum(xs) / len(xs))`)"
    if "(Sample.tokens)" in context or "(Sample.loss_mask)" in context:
        if re.search(r'"(?:ndarray|Tensor)\b', detail):
            return ("convert with `.tolist()`: vime's contract check rejects an array, it wants "
                    "a list of ints (token ids from the tokenizer, 0/1 for a mask)")
        return "store a list of ints (token ids from the tokenizer, 0/1 for a mask)"
    if "(Sample.metadata)" in context:
        if code == "VIM202":
            return ("keep `sample.metadata` a dict: set its keys (`sample.metadata['turns'] = "
                    "n`), not a JSON string (building the training batch calls `.get` on it)")
        if '"loads"' in detail:
            return ("`sample.metadata` is already a dict (vime parses a JSON-string metadata "
                    "column when it reads the data): read its keys, drop `json.loads`")
    return INVARIANTS[code].fix
