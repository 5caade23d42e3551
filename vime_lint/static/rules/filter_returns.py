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

_OUT = "from vime.rollout.filter_hub.base_types import DynamicFilterOutput\n"
_BOOL_OPS = (cst.Comparison, cst.BooleanOperation)


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
    comparison, ``not ...``) is a warning; ``None`` (also a path that falls off the end) is an
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
        Valid(_OUT + "def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    if samples:\n        return DynamicFilterOutput(keep=True)\n"
              "    return DynamicFilterOutput(keep=False, reason='empty')\n"),
        # Built by a helper, through a local name and an aliased import.
        Valid("from vime.rollout.filter_hub import base_types as bt\n"
              "def _verdict(keep):\n    return bt.DynamicFilterOutput(keep=keep)\n"
              "def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    out = _verdict(len(samples) > 1)\n    return out\n"),
        # A value the code does not show (an imported helper): not reported.
        Valid("from my_filters import decide\n"
              "def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    return decide(samples)\n"),
    ]
    INVALID = [
        # DynamicFilterOutput on one branch, a bare bool on the other.
        Invalid(_OUT + "def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    if len({s.reward for s in samples}) > 1:\n"
                "        return DynamicFilterOutput(keep=True)\n    return False\n",
                line=5, col=11, severity="warning"),
        # A comparison returned through a local name.
        Invalid("def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    keep = len(samples) > 2\n    return keep\n", line=3, col=11,
                severity="warning"),
        # None on a path (drops every group).
        Invalid(_OUT + "def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    if not samples:\n        return None\n"
                "    return DynamicFilterOutput(keep=True)\n", line=4, col=15,
                severity="error"),
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
