"""What a dynamic sampling filter returns on each path: VIM037.

Every return path of a ``--dynamic-sampling-filter-path`` hook is followed through the
semantic model (local names, conditional expressions, the module's own helpers).

See ``docs/contract.md`` §5 (the filter's result) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["FilterReturnKind"]

_BOOL_OPS = (cst.Comparison, cst.BooleanOperation)
_BOOL_BUILTINS = frozenset({"builtins.all", "builtins.any", "builtins.bool"})


def _kind(expr: cst.BaseExpression | None, is_output: bool) -> str | None:
    """``"ok"``, ``"None"``, ``"a bare bool"``, or None when the code does not show it."""
    if is_output:
        return "ok"
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return "None"
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "a bare bool"
    if isinstance(expr, _BOOL_OPS) or (isinstance(expr, cst.UnaryOperation)
                                       and isinstance(expr.operator, cst.Not)):
        return "a bare bool"
    return None


class FilterReturnKind(FunctionTracker):
    """A dynamic sampling filter returns ``DynamicFilterOutput`` on every path.

    ## What it does
    Follows every ``return`` of a ``--dynamic-sampling-filter-path`` hook (through local
    names, conditional expressions and the module's helpers). A bare ``bool`` (``True``, a
    comparison, ``not ...``, ``all(...)``/``any(...)``/``bool(...)``) is a warning; ``None`` (also a path that falls off the end) is an
    error. The path that returns ``DynamicFilterOutput`` elsewhere is named.

    ## Why is this bad?
    The runtime wraps a bare value as ``DynamicFilterOutput(keep=bool(value))`` with a
    warning (VIM160) and loses the reason that the filter metrics log; ``None`` drops every
    group of the step (failure kind: "hook result kind").

    ## Example
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        if len({s.reward for s in samples}) > 1:
            return DynamicFilterOutput(keep=True)
        return False
    ```

    ## Use instead
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        if len({s.reward for s in samples}) > 1:
            return DynamicFilterOutput(keep=True)
        return DynamicFilterOutput(keep=False, reason="zero_std")
    ```

    ## Fix safety
    No fix: the reason is the author's.
    """

    INVARIANT = INVARIANTS["VIM037"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            from vime.rollout.filter_hub.base_types import DynamicFilterOutput
            def dynamic_sampling_filter(args, samples, **kwargs):
                if samples:
                    return DynamicFilterOutput(keep=True)
                return DynamicFilterOutput(keep=False, reason='empty')
        """),
        # Built by a helper, through a local name and an aliased import.
        Valid("""
            from vime.rollout.filter_hub import base_types as bt
            def _verdict(keep):
                return bt.DynamicFilterOutput(keep=keep)
            def dynamic_sampling_filter(args, samples, **kwargs):
                out = _verdict(len(samples) > 1)
                return out
        """),
        # A value the code does not show (an imported helper): not reported.
        Valid("""
            from my_filters import decide
            def dynamic_sampling_filter(args, samples, **kwargs):
                return decide(samples)
        """),
        # An instance's __call__ under an aliased import, one output on every path.
        Valid("from vime.rollout.filter_hub.base_types import DynamicFilterOutput as Out\n"
              "class KeepMixed:\n"
              "    def __call__(self, args, samples, **kwargs):\n"
              "        rewards = {s.get_reward_value(args) for s in samples}\n"
              "        return Out(keep=len(rewards) > 1, reason=None if len(rewards) > 1 else 'uniform')\n"
              "dynamic_sampling_filter = KeepMixed()\n"),
        # any(...) over a generator as the keep= value, wrapped.
        Valid("""
            from vime.rollout.filter_hub.base_types import DynamicFilterOutput
            def dynamic_sampling_filter(args, samples, **kwargs):
                return DynamicFilterOutput(keep=any(s.get_reward_value(args) > 0 for s in samples))
        """),
    ]
    INVALID = [
        # DynamicFilterOutput on one branch, a bare bool on the other.
        Invalid("""
            from vime.rollout.filter_hub.base_types import DynamicFilterOutput
            def dynamic_sampling_filter(args, samples, **kwargs):
                if len({s.reward for s in samples}) > 1:
                    return DynamicFilterOutput(keep=True)
                return False
        """, line=5, col=11, severity="warning"),
        # A comparison returned through a local name.
        Invalid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                keep = len(samples) > 2
                return keep
        """, line=3, col=11, severity="warning"),
        # None on a path (drops every group).
        Invalid("""
            from vime.rollout.filter_hub.base_types import DynamicFilterOutput
            def dynamic_sampling_filter(args, samples, **kwargs):
                if not samples:
                    return None
                return DynamicFilterOutput(keep=True)
        """, line=4, col=15, severity="error"),
        # An instance's __call__ under an aliased import, a bool on one path.
        Invalid("""
            from vime.rollout.filter_hub.base_types import DynamicFilterOutput as Out
            class KeepMixed:
                def __call__(self, args, samples, **kwargs):
                    rewards = {s.get_reward_value(args) for s in samples}
                    if len(rewards) > 1:
                        return Out(keep=True)
                    return len(rewards) > 1
            dynamic_sampling_filter = KeepMixed()
        """, line=7, col=15, severity="warning"),
        # The bool a module helper returns.
        Invalid("""
            def _mixed(args, samples):
                return len({s.get_reward_value(args) for s in samples}) > 1
            def dynamic_sampling_filter(args, samples, **kwargs):
                return _mixed(args, samples)
        """, line=4, col=11, severity="warning"),
        # any(...) over a generator: a bare bool.
        Invalid("""
            def dynamic_sampling_filter(args, samples, **kwargs):
                return any(s.get_reward_value(args) > 0 for s in samples)
        """, line=2, col=11, severity="warning"),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "dynamic_sampling_filter_path":
            return
        sem = self.context.semantic
        facts = sem.facts(node)
        if facts.yields:
            return
        kinds: list[tuple[cst.CSTNode, str]] = []
        good: cst.CSTNode | None = None
        for ret in facts.returns:
            for leaf, _ in sem.origins(node, ret.value, owner=self.owner):
                is_output = isinstance(leaf, cst.Call) and sem.refers_to(leaf.func,
                                                                         "DynamicFilterOutput")
                kind = _kind(leaf, is_output) if leaf is not None or ret.value is None else None
                if kind is None and isinstance(leaf, cst.Call) \
                        and sem.qualified(leaf.func) & _BOOL_BUILTINS:
                    kind = "a bare bool"  # all(...), any(...), bool(...)
                if kind == "ok":
                    good = good or ret.node
                elif kind is not None:
                    kinds.append((ret.value if ret.value is not None else ret.node, kind))
                    break
        if facts.falls_through:
            kinds.append((node.name, "None"))
        for where, kind in kinds:
            path = "this path"
            if good is not None:
                path = f"this path, while another returns `{code_of(good)[7:47].strip()}`"
            self.report(where, self.INVARIANT.render(name=binding.function, actual=kind,
                                                     path=path),
                        severity="error" if kind == "None" else "warning")
