"""The ``data`` of ``RolloutFnEvalOutput``: VIM020.

:class:`EvalDataKeys` checks that each eval data entry carries ``rewards``, ``truncated`` and
``samples`` where the code shows the entries.

See ``docs/contract.md`` §3 (eval ``data``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime.contract.hooks import EVAL_ENTRY_KEYS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import EVAL_OUT, is_output_call

__all__ = ["EvalDataKeys"]


def _dict_keys(d: cst.Dict) -> set[str] | None:
    keys: set[str] = set()
    for el in d.elements:
        if not isinstance(el, cst.DictElement):
            return None  # a ** splat: keys unknown
        key = string_value(el.key)
        if key is None:
            return None
        keys.add(key)
    return keys


def _call_keys(call: cst.BaseExpression) -> set[str] | None:
    """The keywords of ``dict(k=v, ...)`` (None with ``**`` or positional arguments)."""
    if not isinstance(call, cst.Call):
        return None
    keys: set[str] = set()
    for arg in call.args:
        if arg.keyword is None:
            return None
        keys.add(arg.keyword.value)
    return keys


class EvalDataKeys(FunctionTracker):
    """Each eval data entry carries ``rewards``, ``truncated`` and ``samples``.

    ## What it does
    Checks the ``data`` of ``RolloutFnEvalOutput(data=...)`` when the code shows it: a dict
    literal of dict literals (or ``dict(...)`` calls), a dict comprehension over datasets
    (``{name: {...} for name in ...}``), or a local variable filled with ``data = {...}`` /
    ``data[name] = {...}``, following local names and the module's helpers (``self`` methods
    of a class eval function too).

    ## Why is this bad?
    Eval logging averages ``rewards`` (``eval/<name>``), reads ``truncated`` for the
    truncation ratio and ``samples`` for debug dumps; a missing key fails the eval step, and
    upstream's own contract tests reject it.

    ## Example
    ```python
    return RolloutFnEvalOutput(data={"toy": {"rewards": rewards}})
    ```

    ## Use instead
    ```python
    return RolloutFnEvalOutput(
        data={"toy": {"rewards": rewards, "truncated": truncated, "samples": samples}})
    ```

    ## Fix safety
    No fix: the values must come from the samples.
    """

    INVARIANT = INVARIANTS["VIM020"]
    VALID = [
        Valid("RolloutFnEvalOutput(data={'toy': {'rewards': r, 'truncated': t, 'samples': s}})\n"),
        Valid("RolloutFnEvalOutput(data=build(samples))\n"),
        Valid("RolloutFnEvalOutput(data={'toy': {**base, 'rewards': r}})\n"),
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput
            def f(r, t, s):
                entry = dict(rewards=r, truncated=t, samples=s)
                return EvalOutput(data={'toy': entry})
        """),
        # A dict comprehension over datasets with every key; entries stored in a loop; a
        # class eval function whose self method builds the data.
        Valid("from vime.rollout.base_types import RolloutFnEvalOutput\n"
              "def eval_rollout(args, rollout_id, data_source, evaluation=True):\n"
              "    data = {n: {'rewards': r, 'truncated': t, 'samples': s}"
              " for n, (r, t, s) in run(args).items()}\n"
              "    return RolloutFnEvalOutput(data=data)\n"),
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput
            def eval_rollout(args, rollout_id, data_source, evaluation=True):
                data = {}
                for name in ('a', 'b'):
                    data[name] = dict(rewards=[], truncated=[], samples=[])
                return RolloutFnEvalOutput(data=data)
        """),
        Valid("""
            from vime.rollout.base_types import RolloutFnEvalOutput
            class Evaluator:
                def __call__(self, args, rollout_id, data_source, evaluation=True):
                    return RolloutFnEvalOutput(data=self._data())
                def _data(self):
                    return {'toy': {'rewards': [], 'truncated': [], 'samples': []}}
            eval_rollout = Evaluator()
        """),
        # The user's own class of the same name is not vime's.
        Valid("""
            class RolloutFnEvalOutput:
                def __init__(self, data):
                    self.data = data
            RolloutFnEvalOutput(data={'toy': {}})
        """),
        Valid("""
            def f(x):
                data = {}
                data['a'] = {'rewards': 1, 'truncated': 2, 'samples': 3}
                return RolloutFnEvalOutput(data=data)
        """),
    ]
    INVALID = [
        Invalid("RolloutFnEvalOutput(data={'toy': {'rewards': r}})\n", line=1, col=33),
        Invalid("""
            import vime.rollout.base_types as bt
            bt.RolloutFnEvalOutput({'toy': {'rewards': r, 'samples': s}})
        """, line=2, col=31),
        Invalid("""
            def f(x):
                data = {}
                data['a'] = {'rewards': 1, 'samples': 3}
                return RolloutFnEvalOutput(data=data)
        """, line=3, col=16),
        # An aliased constructor, the entry built step by step under a name.
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput
            def f(r, s):
                entry = dict(rewards=r, samples=s)
                return EvalOutput(data={'toy': entry})
        """, line=3, col=12),
        # A dict comprehension over datasets (inline); a class eval function's self method;
        # an entry bound to a local name in a loop, then stored.
        Invalid("from vime.rollout.base_types import RolloutFnEvalOutput\n"
                "def eval_rollout(args, rollout_id, data_source, evaluation=True):\n"
                "    return RolloutFnEvalOutput(data={n: {'rewards': r, 'samples': s}"
                " for n, (r, s) in run(args).items()})\n", line=3, col=40),
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput
            class Evaluator:
                def __call__(self, args, rollout_id, data_source, evaluation=True):
                    return RolloutFnEvalOutput(data=self._data())
                def _data(self):
                    return {'toy': {'rewards': [], 'samples': []}}
            eval_rollout = Evaluator()
        """, line=6, col=23),
        Invalid("""
            from vime.rollout.base_types import RolloutFnEvalOutput
            def eval_rollout(args, rollout_id, data_source, evaluation=True):
                data = {}
                for name in ('a', 'b'):
                    entry = {'rewards': [], 'samples': []}
                    data[name] = entry
                return RolloutFnEvalOutput(data=data)
        """, line=5, col=16),
        # The data built by a module helper.
        Invalid("""
            import vime.rollout.base_types as bt
            def _data(r, s):
                return {'toy': {'rewards': r, 'samples': s}}
            def f(r, s):
                data = _data(r, s)
                return bt.RolloutFnEvalOutput(data=data)
        """, line=3, col=19),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not is_output_call(node, EVAL_OUT, self.context.semantic):
            return
        data: cst.BaseExpression | None = None
        for i, arg in enumerate(node.args):
            if (arg.keyword is not None and arg.keyword.value == "data") or (
                    i == 0 and arg.keyword is None and not arg.star):
                data = arg.value
        for outer in self._leaves(data, comprehensions=True):
            if isinstance(outer, cst.Dict):
                self._check_outer(outer)
            elif isinstance(outer, cst.DictComp):  # {name: {...} for name in ...}
                for entry in self._leaves(outer.value):
                    self._check_entry(entry, "<dataset>")
        if isinstance(data, cst.Name) and self.current is not None:
            local = self.context.semantic.facts(self.current)
            for v in local.subscript_values.get(data.value, []):
                for entry in self._leaves(v):
                    self._check_entry(entry, "<dataset>")

    def _leaves(self, expr: cst.BaseExpression | None,
                comprehensions: bool = False) -> list[cst.BaseExpression]:
        """The dict literals and ``dict(...)`` calls (with ``comprehensions``, also dict
        comprehensions) ``expr`` comes from (through local names and the module's own
        helpers)."""
        if expr is None:
            return []
        leaves = [expr] if self.current is None else [
            leaf for leaf, _ in self.context.semantic.origins(self.current, expr, owner=self.owner)
            if leaf is not None]
        sem = self.context.semantic
        return [leaf for leaf in leaves if isinstance(leaf, cst.Dict) or (
            comprehensions and isinstance(leaf, cst.DictComp)) or (
            isinstance(leaf, cst.Call) and isinstance(leaf.func, cst.Name)
            and leaf.func.value == "dict" and sem.qualified(leaf.func) <= {"dict", "builtins.dict"})]

    def _check_outer(self, data: cst.Dict) -> None:
        for el in data.elements:
            if isinstance(el, cst.DictElement):
                for entry in self._leaves(el.value):
                    self._check_entry(entry, string_value(el.key) or "<dataset>")

    def _check_entry(self, entry: cst.BaseExpression, dataset: str) -> None:
        keys = _dict_keys(entry) if isinstance(entry, cst.Dict) else _call_keys(entry)
        if keys is None:
            return
        missing = [k for k in EVAL_ENTRY_KEYS if k not in keys]
        if missing:
            self.report(entry, self.INVARIANT.render(
                dataset=dataset, missing=", ".join(f"`{m}`" for m in missing)))
