"""VIM023: every return path of a reward function returns the same kind, a number or a
dict; the values are read through
:func:`~vime_lint.static.rules._reward_rule.reward_leaves` (local names, helpers, the list of a
batch reward function)."""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static.analysis import Leaf
from vime_lint.static.rules._reward_rule import RM, RewardRule, reward_leaves, short, via

__all__ = ["RewardReturnKind"]

#: Calls whose result is a number (a real, bool, or a numpy/torch number: VIM121 counts them all
#: as numbers).
_NUMBER_CALLS = frozenset({
    "builtins.float", "builtins.int", "builtins.bool", "builtins.round", "builtins.len",
    "builtins.abs", "builtins.sum", "builtins.min", "builtins.max",
})
_NUMBER_ROOTS = ("math.", "statistics.", "numpy.", "torch.", "jax.")
_NUMBER_METHODS = frozenset({"item", "get_reward_value"})
_DICT_CALLS = frozenset({"builtins.dict", "collections.OrderedDict", "collections.defaultdict",
                         "collections.Counter"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo,
               cst.Power)


class RewardReturnKind(RewardRule):
    """Every return path of a reward function returns the same kind: number or dict.

    ## What it does
    Follows every value a ``--custom-rm-path`` function can return (through local names,
    conditional expressions, module constants and the module's own helpers such as
    ``return compute_score(...)`` or, in a class reward, ``return self._score(...)``; the elements of the returned list for a ``--group-rm``
    batch function) and reports the first value of a second kind when one path returns a
    number (a literal, ``float(...)``, arithmetic, a comparison, ``math``/``numpy``/``torch``
    results) and another a dict (``{...}``, ``dict(...)``). Values it cannot see (parameters,
    calls into other modules) count as neither. Runtime twin: VIM121.

    ## Why is this bad?
    A batch then mixes floats and dicts: with ``--reward-key`` the float is not subscriptable,
    without it the dict cannot be normalised, and the per-key reward columns misalign
    (verl-project/verl#1031, GAIR-NLP/ToRL#19; failure kind: "mixed float and dict
    rewards").

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        if "\\\\boxed" not in sample.response:
            return 0.0
        return {"score": 1.0, "format": 1.0}
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        if "\\\\boxed" not in sample.response:
            return {"score": 0.0, "format": 0.0}
        return {"score": 1.0, "format": 1.0}
    ```

    ## Fix safety
    No fix: which kind to keep is the author's choice (and --reward-key follows it).
    """

    INVARIANT = INVARIANTS["VIM023"]
    VALID = [
        Valid("""
            async def reward_func(args, sample, **kwargs):
                if not sample.response:
                    return 0
                return float(sample.response == sample.label)
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                if not sample.response:
                    return {'score': 0.0, 'acc': 0.0}
                return dict(score=1.0, acc=1.0)
        """),
        Valid("""
            import json
            async def reward_func(args, sample, **kwargs):
                body = json.loads(sample.response)
                return body if isinstance(body, dict) else float(body)
        """),
        Valid("""
            async def batched_reward_func(args, samples, **kwargs):
                return [float(s.label == s.response) for s in samples]
        """),
        Valid("""
            def score(response):
                return {'score': float(bool(response))}
            def helper():
                return 1.0
            async def reward_func(args, sample, **kwargs):
                return score(sample.response)
        """),
        # A class reward whose self method returns the same kind; a batch comprehension of
        # dicts.
        Valid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    if not sample.response:
                        return {'score': 0.0, 'acc': 0.0}
                    return self._full(sample)
                def _full(self, sample):
                    return {'score': 1.0, 'acc': float(sample.response == sample.label)}
            reward_func = Judge()
        """),
        Valid("""
            async def reward_func(args, samples, **kwargs):
                return [{'score': float(bool(s.response))} for s in samples]
        """, options={"hooks": {"reward_func": RM}, "launch_flags": ["--group-rm"]}),
    ]
    INVALID = [
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    if '\\\\boxed' not in sample.response:\n        return 0.0\n"
                "    return {'score': 1.0, 'format': 1.0}\n", line=4, col=11),
        Invalid("""
            def compute_score(response, label):
                if response is None:
                    return -1.0
                result = {'score': float(response == label)}
                return result
            async def custom_rm(args, sample, **kwargs):
                return compute_score(sample.response, sample.label)
        """, line=4, col=13),
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                return {'score': 1.0} if sample.label else 0.0
        """, line=2, col=47),
        Invalid("""
            import numpy as np
            FAILED = {'score': 0.0}
            async def score(args, sample, **kwargs):
                if not sample.response:
                    return FAILED
                return np.mean([1.0, 0.5])
        """, line=6, col=11, options={"hooks": {"score": RM}}),
        Invalid("""
            async def group_reward_func(args, samples, **kwargs):
                rewards = []
                for s in samples:
                    if s.response:
                        rewards.append({'score': 1.0})
                    else:
                        rewards.append(0.0)
                return rewards
        """, line=7, col=27),
        # A class reward's __call__, and the self method it returns; a batch comprehension
        # mixing kinds; numpy imported under another name, through local aliases.
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    if not sample.response:
                        return 0.0
                    return {'score': 1.0}
            reward_func = Judge()
        """, line=5, col=15),
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return self._score(sample)
                def _score(self, sample):
                    if not sample.response:
                        return 0.0
                    return {'score': 1.0}
            reward_func = Judge()
        """, line=7, col=15),
        Invalid("""
            async def reward_func(args, samples, **kwargs):
                return [{'score': 1.0} if s.response else 0.0 for s in samples]
        """, line=2, col=46, options={"hooks": {"reward_func": RM}, "launch_flags": ["--group-rm"]}),
        Invalid("""
            import numpy as xp
            async def reward_func(args, sample, **kwargs):
                if not sample.response:
                    return {'score': 0.0}
                out = xp.mean([1.0, 0.5])
                res = out
                return res
        """, line=5, col=10),
    ]

    def _kind(self, e: cst.BaseExpression) -> str | None:
        if isinstance(e, (cst.Integer, cst.Float, cst.Comparison)):
            return "number"
        if isinstance(e, cst.Name):
            return "number" if e.value in ("True", "False") else None
        if isinstance(e, cst.UnaryOperation):
            return "number" if isinstance(e.operator, cst.Not) else self._kind(e.expression)
        if isinstance(e, (cst.Dict, cst.DictComp)):
            return "dict"
        if isinstance(e, cst.BinaryOperation):
            if isinstance(e.operator, _ARITHMETIC):
                return "number"
            kinds = {self._kind(e.left), self._kind(e.right)}
            return "dict" if "dict" in kinds else ("number" if "number" in kinds else None)
        if isinstance(e, cst.Call):
            if isinstance(e.func, cst.Attribute) and e.func.attr.value in _NUMBER_METHODS:
                return "number"
            names = self.qualified(e.func)
            if names & _DICT_CALLS:
                return "dict"
            if names & _NUMBER_CALLS or any(n.startswith(_NUMBER_ROOTS) for n in names):
                return "number"
        return None

    def reward(self, fn: cst.FunctionDef, binding: HookBinding) -> None:
        first: dict[str, Leaf] = {}
        for leaf in reward_leaves(fn, binding, self.context):
            kind = self._kind(leaf.value)
            if kind is not None and kind not in first:
                first[kind] = leaf
                if len(first) == 2:
                    (k1, a), (k2, b) = first.items()
                    self.report(b.value, self.INVARIANT.render(
                        name=binding.function,
                        first=f"a {k1} (`{short(a.value)}`{via(a)})",
                        second=f"a {k2} (`{short(b.value)}`{via(b)})"))
                    return


#: torch callables whose result is not a tensor (by qualified-name prefix).
