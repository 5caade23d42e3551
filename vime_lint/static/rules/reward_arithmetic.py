"""VIM010: filters, post-processing and loggers read rewards through
``get_reward_value(args)``, not by arithmetic on ``sample.reward``.

See ``docs/contract.md`` §4 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["RewardArithmetic"]


_REWARD_HOOKS = frozenset({
    "dynamic_sampling_filter_path", "custom_reward_post_process_path",
    "custom_rollout_log_function_path", "custom_eval_rollout_log_function_path",
    "rollout_sample_filter_path", "rollout_all_samples_process_path", "buffer_filter_path",
    "custom_convert_samples_to_train_data_path",
})
_AGGREGATES = ("sum", "max", "min", "mean", "std", "var", "median", "fmean", "pstdev",
               "stdev", "tensor", "array")


def _is_reward(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "reward"


class RewardArithmetic(FunctionTracker):
    """Filters, post-processing and loggers read rewards through ``get_reward_value(args)``.

    ## What it does
    In dynamic/buffer/sample filters, reward post-processing, conversion and logging hooks,
    reports ``x.reward`` used as a number: an operand of arithmetic or of a comparison other
    than ``is None``, or the items of ``sum``/``mean``/``std``/``max``/``min``/``np.array``;
    also in the module's own helpers (and ``self`` methods) such a hook calls, reported in the
    helper under its name. Runtime twin: VIM110.

    ## Why is this bad?
    ``Sample.reward`` may be a dict read through ``--reward-key``; arithmetic on it raises,
    and comparisons silently answer wrong (failure kind: "filter assumes numeric reward").

    ## Example
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        return len({s.reward for s in samples}) > 1 and sum(s.reward for s in samples) > 0
    ```

    ## Use instead
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        rewards = [s.get_reward_value(args) for s in samples]
        return len(set(rewards)) > 1 and sum(rewards) > 0
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM010"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                return sum(s.get_reward_value(args) for s in samples) > 0
        """),
        Valid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                return all(s.reward is not None for s in samples)
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return sample.reward + 1
        """),
        # An instance's __call__ under an aliased import, through get_reward_value.
        Valid("""
            import numpy as np
            class KeepMixed:
                def __call__(self, args, samples, **kwargs):
                    return np.std([s.get_reward_value(args) for s in samples]) > 0
            dynamic_sampling_filter = KeepMixed()
        """),
        # A module helper the hook calls, through get_reward_value.
        Valid("""
            def _mean(args, group):
                return sum(s.get_reward_value(args) for s in group) / len(group)
            def dynamic_sampling_filter(args, samples, **kwargs):
                return 0 < _mean(args, samples) < 1
        """),
    ]
    INVALID = [
        Invalid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                return sum(s.reward for s in samples) > 0
        """, line=2, col=11),
        Invalid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                return samples[0].reward > 0.5
        """, line=2, col=11),
        # An aliased import aggregating a list comprehension.
        Invalid("""
            import numpy as np
            def dynamic_sampling_filter(args, samples, **kwargs):
                return np.std([s.reward for s in samples]) > 0
        """, line=3, col=11),
        # An instance's __call__, on a local alias of one group element.
        Invalid("""
            class KeepMixed:
                def __call__(self, args, samples, **kwargs):
                    best = max(samples, key=lambda s: s.get_reward_value(args))
                    return best.reward > 0.5
            dynamic_sampling_filter = KeepMixed()
        """, line=4, col=15),
        # In a module helper the hook calls, reported there under the helper's name.
        Invalid("""
            def _mean(group):
                return sum(s.reward for s in group) / len(group)
            def dynamic_sampling_filter(args, samples, **kwargs):
                return 0 < _mean(samples) < 1
        """, line=2, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.active = 0
        self.active_stack: list[bool] = []
        #: Module-level helpers already checked for some hook (each is reported once).
        self.helpers_seen: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        b = self.hook_of(node)
        hook = b is not None and b.spec.dest in _REWARD_HOOKS
        if hook:
            self.active += 1
            self._check_helpers(node)
        self.active_stack.append(hook)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self.active_stack.pop():
            self.active -= 1
        super().leave_FunctionDef(original_node)

    def _check_helpers(self, hook: cst.FunctionDef) -> None:
        """The module's own functions the hook calls (not nested in it: the walk reaches
        those), each checked once, reported in the helper under the helper's name."""
        for helper in self.context.semantic.closure(hook, self.owner)[1:]:
            if id(helper) in self.helpers_seen or _inside(helper, hook):
                continue
            b = self.hook_of(helper)
            if b is not None and b.spec.dest in _REWARD_HOOKS:
                continue  # checked as a hook of its own
            self.helpers_seen.add(id(helper))
            collector = _RewardMath()
            helper.body.visit(collector)
            for found in collector.found:
                self.report(found, self.INVARIANT.render(name=helper.name.value))

    def _name(self) -> str:
        fn = self.functions[0] if self.functions else None
        return fn.name.value if fn is not None else "?"

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.active and _reward_binop(node):
            self.report(node, self.INVARIANT.render(name=self._name()))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if self.active and _reward_comparison(node):
            self.report(node, self.INVARIANT.render(name=self._name()))

    def visit_Call(self, node: cst.Call) -> None:
        if self.active and _reward_aggregate(node):
            self.report(node, self.INVARIANT.render(name=self._name()))


def _inside(inner: cst.CSTNode, outer: cst.FunctionDef) -> bool:
    """True when ``inner`` is a node of ``outer``'s body (a nested ``def``)."""
    found = False

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal found
            if node is inner:
                found = True
            return not found

    outer.body.visit(_Find())
    return found


def _reward_binop(node: cst.BinaryOperation) -> bool:
    return _is_reward(node.left) or _is_reward(node.right)


def _reward_comparison(node: cst.Comparison) -> bool:
    operands = [node.left, *(c.comparator for c in node.comparisons)]
    identity = all(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                   for c in node.comparisons)
    return not identity and any(_is_reward(o) for o in operands)


def _reward_aggregate(node: cst.Call) -> bool:
    if not node.args:
        return False
    name = (dotted(node.func) or "").rpartition(".")[2]
    if name not in _AGGREGATES:
        return False
    arg = node.args[0].value
    return isinstance(arg, (cst.GeneratorExp, cst.ListComp)) and _is_reward(arg.elt)


class _RewardMath(cst.CSTVisitor):
    """The reward arithmetic in one helper's body (the rule's three shapes)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.CSTNode] = []

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if _reward_binop(node):
            self.found.append(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if _reward_comparison(node):
            self.found.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if _reward_aggregate(node):
            self.found.append(node)
