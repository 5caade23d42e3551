"""Types for helpers of other modules: the calls in a module's hooks to imported functions, with a contract-typed argument.

:func:`imported_calls` lists them for one module; the check gathers them into :data:`Seeds`
for each imported module, whose ``annotate(seeds=...)`` types those helpers as if its own
hooks called them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from vime_lint.typecheck.contract_types import WIDE_TYPES
from vime_lint.typecheck.plan import AnnotationPlan

__all__ = ["Seeds", "imported_calls"]

#: Types given to a module's helpers by hooks of other modules that import and call them:
#: helper name -> (parameter position or name -> (type, origin), the hooks calling it).
Seeds = Mapping[str, tuple[Mapping[int | str, tuple[str, str]], frozenset[str]]]


def imported_calls(source: str, module: str, plan: AnnotationPlan
                   ) -> list[tuple[str, str, int | str, str, str, str]]:
    """Calls in the hooks of ``source`` (module ``module``, dotted) to functions imported from
    other modules (``from pkg.util import fill``; relative imports resolved against
    ``module``), with a contract-typed parameter as a bare-name argument:
    ``(imported module, function, parameter position or name, type, origin, hook)``."""
    tree = ast.parse(source)
    imported: dict[str, tuple[str, str]] = {}
    package = module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module is not None or (
                isinstance(node, ast.ImportFrom) and node.level):
            assert isinstance(node, ast.ImportFrom)
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            for alias in node.names:
                imported[alias.asname or alias.name] = (base, alias.name)
    out: list[tuple[str, str, int | str, str, str, str]] = []
    hooks = {f.name: f for f in plan.functions if f.spec is not None}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name not in hooks:
            continue
        params = hooks[node.name].params
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id in imported):
                continue
            mod, name = imported[call.func.id]
            keys: list[tuple[int | str, ast.expr]] = [
                *((i, a) for i, a in enumerate(call.args) if not isinstance(a, ast.Starred)),
                *((k.arg, k.value) for k in call.keywords if k.arg is not None)]
            for key, arg in keys:
                if isinstance(arg, ast.Name) and arg.id in params and \
                        params[arg.id].type not in WIDE_TYPES:
                    tp = params[arg.id]
                    out.append((mod, name, key, tp.type,
                                f"{tp.origin}, via {node.name}({arg.id}) in {module}",
                                node.name))
    return out
