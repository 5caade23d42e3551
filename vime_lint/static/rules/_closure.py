"""The module-level helpers a hook calls, transitively (shared by rule families).

Multi-turn code usually keeps its loop in a helper (``generate -> run_episode``), so the
finish-reason rule (VIM009) and the retokenisation rule (VIM018) look at a hook together with
:func:`local_closure` of it.
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._rule import FileContext

__all__ = ["local_closure"]

_MAX_HELPERS = 64



def local_closure(fn: cst.FunctionDef, context: FileContext) -> list[cst.FunctionDef]:
    """``fn`` and the module-level functions it calls by plain name, transitively (in
    discovery order, at most 64 helpers)."""

    class _Calls(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name):
                self.names.append(node.func.value)

    out = [fn]
    seen = {fn.name.value}
    i = 0
    while i < len(out) and len(out) <= _MAX_HELPERS:
        calls = _Calls()
        out[i].body.visit(calls)
        for name in calls.names:
            target = context.definitions.get(name)
            if name not in seen and isinstance(target, cst.FunctionDef):
                seen.add(name)
                out.append(target)
        i += 1
    return out
