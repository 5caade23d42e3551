"""VIM016: no attribute assignment on ``args``: it is configuration only.

See ``docs/contract.md`` §4 (``args`` is configuration only) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["ArgsMutation"]


def _has_args_param(fn: cst.FunctionDef | None) -> bool:
    if fn is None:
        return False
    return any(p.name.value == "args" for p in (*fn.params.posonly_params, *fn.params.params,
                                                 *fn.params.kwonly_params))


class ArgsMutation(FunctionTracker):
    """No attribute assignment on ``args``.

    ## What it does
    In modules that define hooks, reports ``args.x = ...``, ``args.x += ...`` and
    ``setattr(args, ...)`` inside functions that take an ``args`` parameter, also through a
    local name bound to ``args`` itself (``cfg = args``; a ``copy.copy(args)`` is fine).

    ## Why is this bad?
    ``args`` is the run's shared configuration, copied into every Ray actor. State stashed on
    it lives in one process only: other actors never see it, and a restart loses it (failure
    kind: "shared configuration").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        args.step_counter = rollout_id
    ```

    ## Use instead
    ```python
    _STATE = {"step": 0}

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        _STATE["step"] = rollout_id
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM016"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                n = args.rollout_batch_size
        """),
        Valid("""
            args = parse()
            args.x = 1
        """),
        # A copy of args (import copy) is the hook's own to change.
        Valid("""
            import copy
            async def generate(args, sample, sampling_params):
                local = copy.copy(args)
                local.max_new_tokens = 16
                return sample
        """),
        # A class hook keeps its state on self, reading args in __init__.
        Valid("""
            class Rollout:
                def __init__(self, args):
                    self.args = args
                    self.batch = args.rollout_batch_size
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    self.last = rollout_id
                    return data_source.get_samples(self.batch)
        """),
    ]
    INVALID = [
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                args.counter = rollout_id
        """, line=2, col=4),
        Invalid("""
            async def generate(args, sample, sampling_params):
                setattr(args, 'cache', {})
                return sample
        """, line=2, col=4),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                args.steps += 1
        """, line=2, col=4),
        # An instance's __call__.
        Invalid("""
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    args.last_rollout_id = rollout_id
                    return data_source.get_samples(1)
            generate_rollout = Rollout()
        """, line=3, col=8),
        # In a module helper the hook calls with args.
        Invalid("""
            def _setup(args):
                args.tokenizer_loaded = True
            async def generate(args, sample, sampling_params):
                _setup(args)
                return sample
        """, line=2, col=4),
        # Through a local alias of args (the same object, not a copy).
        Invalid("""
            async def generate(args, sample, sampling_params):
                cfg = args
                cfg.max_new_tokens = 16
                return sample
        """, line=3, col=4),
    ]

    def _is_args(self, expr: cst.BaseExpression) -> bool:
        """``args`` itself, or a local name every binding of which is plain ``args``
        (``cfg = args``: the same object, not a copy)."""
        if not isinstance(expr, cst.Name) or not _has_args_param(self.current):
            return False
        if expr.value == "args":
            return True
        assert self.current is not None
        values = self.context.semantic.facts(self.current).values.get(expr.value)
        return values is not None and len(values) > 0 and all(
            isinstance(v, cst.Name) and v.value == "args" for v in values)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and self._is_args(target.value):
            assert self.current is not None
            self.report(node, self.INVARIANT.render(attr=target.attr.value,
                                                    name=self.current.name.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check(node, t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node, node.target)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "setattr" \
                and len(node.args) >= 2 and self._is_args(node.args[0].value):
            assert self.current is not None
            attr = string_value(node.args[1].value) or "..."
            self.report(node, self.INVARIANT.render(attr=attr, name=self.current.name.value))
