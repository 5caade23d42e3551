"""VIM017: groups from ``get_samples`` are not expanded again by ``n_samples_per_prompt``.

See ``docs/contract.md`` §7 (groups from ``get_samples``) and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["GroupExpandedTwice"]


def _is_n_samples(expr: cst.BaseExpression) -> bool:
    """``args.n_samples_per_prompt`` (or ``self.args.…``: the same setting)."""
    name = dotted(expr) or ""
    return name == "args.n_samples_per_prompt" or name.endswith(".args.n_samples_per_prompt")


def _is_n_samples_range(node: cst.Call, values: dict[str, list[cst.BaseExpression | None]]
                        ) -> bool:
    """``range(args.n_samples_per_prompt)``, also through a local name bound only to it."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "range"
            and len(node.args) == 1):
        return False
    arg = node.args[0].value
    if isinstance(arg, cst.Name):
        bound = values.get(arg.value)
        return bool(bound) and all(v is not None and _is_n_samples(v) for v in bound or ())
    return _is_n_samples(arg)


class GroupExpandedTwice(FunctionTracker):
    """Groups from ``get_samples`` are not expanded again by ``n_samples_per_prompt``.

    ## What it does
    Reports ``range(args.n_samples_per_prompt)`` (also ``self.args.…``, or a local name bound
    to it) in a function that also calls ``.get_samples(...)``. Runtime twin: VIM103.

    ## Why is this bad?
    ``get_samples`` already returns groups of ``n_samples_per_prompt`` copies of a prompt;
    copying each again makes groups of n² samples, which breaks group normalisation (failure
    kind: "group expanded twice").

    ## Example
    ```python
    groups = data_source.get_samples(args.rollout_batch_size)
    groups = [[copy.deepcopy(g[0]) for _ in range(args.n_samples_per_prompt)] for g in groups]
    ```

    ## Use instead
    ```python
    groups = data_source.get_samples(args.rollout_batch_size)
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM017"]
    VALID = [
        Valid("""
            def f(args, ds):
                return ds.get_samples(4)
        """),
        Valid("""
            def f(args, prompts):
                return [[p for _ in range(args.n_samples_per_prompt)] for p in prompts]
        """),
        # A class hook that checks the group size on self.args, without copying.
        Valid("""
            class Rollout:
                def __init__(self, args):
                    self.args = args
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(self.args.rollout_batch_size)
                    assert all(len(g) == self.args.n_samples_per_prompt for g in groups)
                    return groups
        """),
        # A local alias of the setting used for arithmetic; the loop is over the group.
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                n = args.n_samples_per_prompt
                groups = data_source.get_samples(args.rollout_batch_size)
                for group in groups:
                    for i in range(len(group)):
                        group[i].metadata['index'] = i % n
                return groups
        """),
    ]
    INVALID = [
        Invalid("""
            def f(args, ds):
                groups = ds.get_samples(4)
                return [[g[0] for _ in range(args.n_samples_per_prompt)] for g in groups]
        """, line=3, col=27),
        # An instance's __call__ reading the setting through self.args.
        Invalid("""
            import copy
            class Rollout:
                def __init__(self, args):
                    self.args = args
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(self.args.rollout_batch_size)
                    return [[copy.deepcopy(g[0]) for _ in range(self.args.n_samples_per_prompt)]
                            for g in groups]
        """, line=7, col=46),
        # Through a local alias of the setting, under an aliased import.
        Invalid("""
            import copy as cp
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                n = args.n_samples_per_prompt
                out = []
                for group in data_source.get_samples(args.rollout_batch_size):
                    out.append([cp.copy(group[0]) for _ in range(n)])
                return out
        """, line=6, col=47),
        # A flattening comprehension that repeats every group.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(args.rollout_batch_size)
                flat = [s for g in groups for _ in range(args.n_samples_per_prompt) for s in g]
                return flat
        """, line=3, col=39),
        # Inside a lambda given to map over the groups.
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(args.rollout_batch_size)
                return list(map(lambda g: [g[0] for _ in range(args.n_samples_per_prompt)], groups))
        """, line=3, col=45),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.state: list[tuple[list[cst.Call], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.state.append(([], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        ranges, calls = self.state.pop()
        if calls[0]:
            for r in ranges:
                self.report(r, self.INVARIANT.render(name=original_node.name.value))
        super().leave_FunctionDef(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.state:
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "get_samples":
            self.state[-1][1][0] = True
        else:
            fn = next((f for f in reversed(self.functions) if f is not None), None)
            values = self.context.semantic.facts(fn).values if fn is not None else {}
            if _is_n_samples_range(node, values):
                self.state[-1][0].append(node)
