"""Qualified names of expressions, read from LibCST's scope analysis (once per file).

Every rule resolves a name through here, never by its spelling: ``import
vime.rollout.base_types as bt`` then ``bt.RolloutFnTrainOutput`` and ``from
vime.rollout.base_types import RolloutFnEvalOutput as EvalOutput`` then ``EvalOutput`` both
resolve to the contract's class. ``slime.*`` (the upstream name of vime) and ``miles.*`` (a
fork of slime with the same hook API) read as ``vime.*`` (:data:`UPSTREAM_PACKAGES`).

Usage::

    names = Names(module, wrapper.resolve(ScopeProvider))
    names.qualified(call.func)                          # {"vime.rollout.base_types.RolloutFnTrainOutput"}
    names.refers_to(call.func, "RolloutFnTrainOutput")  # True (also when never imported)

Built on ``libcst.metadata.ScopeProvider`` (``Scope.get_qualified_names_for``).
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import QualifiedNameSource, Scope

from vime_lint.static._cst import dotted as spelled

__all__ = ["UPSTREAM_PACKAGES", "Names", "is_upstream", "spelled"]

_MAX_ALIAS_DEPTH = 3


#: Packages whose hook API is vime's under another name: slime (upstream) and miles (a fork
#: of slime). Their qualified names resolve as ``vime.*``; importing them is ported code (VIM012).
UPSTREAM_PACKAGES: tuple[str, ...] = ("slime", "miles")


def is_upstream(module: str) -> bool:
    """True for ``slime``/``miles`` and their submodules (``miles.utils.types``)."""
    return module.partition(".")[0] in UPSTREAM_PACKAGES


#: Upstream modules whose vime counterpart has another name (same functions, same contract):
#: slime's and miles' SGLang rollout is vime's vLLM rollout (``generate``, ``generate_rollout``).
_UPSTREAM_MODULES: tuple[tuple[str, str], ...] = (
    ("rollout.sglang_rollout", "rollout.vllm_rollout"),
)


def _normalise(name: str) -> str:
    head, dot, rest = name.partition(".")
    if not dot or head not in UPSTREAM_PACKAGES:
        return name
    for upstream, ours in _UPSTREAM_MODULES:
        if rest == upstream or rest.startswith(upstream + "."):
            rest = ours + rest[len(upstream):]
            break
    return "vime." + rest


class Names:
    """Qualified-name resolution for one module.

    Module-level aliases (``Out = bt.RolloutFnTrainOutput``) are followed up to three levels.
    """

    def __init__(self, module: cst.Module, scopes: Mapping[cst.CSTNode, Scope | None]) -> None:
        self.module = module
        self._scopes = scopes
        #: Module-level ``name = <Name or Attribute>`` assignments (aliases to follow).
        self.aliases: dict[str, cst.BaseExpression] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                            and isinstance(small.targets[0].target, cst.Name) \
                            and isinstance(small.value, (cst.Name, cst.Attribute)):
                        self.aliases[small.targets[0].target.value] = small.value
        self._cache: dict[int, frozenset[str]] = {}

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        """The scope ``node`` is in (None for nodes LibCST gives no scope)."""
        return self._scopes.get(node)

    def qualified(self, node: cst.CSTNode, _depth: int = 0) -> frozenset[str]:
        """Qualified names of a ``Name``/``Attribute``/``Call`` (a call: of its callee).

        Names bound by imports resolve to the imported dotted path; module-level names to
        their own name; unbound names give an empty set.
        """
        if isinstance(node, cst.Call):
            node = node.func
        hit = self._cache.get(id(node))
        if hit is not None:
            return hit
        scope = self._scopes.get(node)
        out: set[str] = set()
        if scope is not None:
            try:
                found = scope.get_qualified_names_for(node)
            except Exception:  # noqa: BLE001 - LibCST raises on odd nodes; they have no name
                found = set()
            for q in found:
                name = _normalise(q.name)
                out.add(name)
                head, _, rest = name.partition(".")
                if q.source is QualifiedNameSource.LOCAL and head in self.aliases \
                        and _depth < _MAX_ALIAS_DEPTH and "<locals>" not in name:
                    for base in self.qualified(self.aliases[head], _depth + 1):
                        out.add(f"{base}.{rest}" if rest else base)
        result = frozenset(out)
        self._cache[id(node)] = result
        return result

    def is_bound(self, node: cst.BaseExpression) -> bool:
        """True when the root name of ``node`` is assigned, imported or a builtin, as seen
        from where it is used."""
        cur: cst.BaseExpression = node.func if isinstance(node, cst.Call) else node
        while isinstance(cur, cst.Attribute):
            cur = cur.value
        if not isinstance(cur, cst.Name):
            return True
        scope = self._scopes.get(cur)
        return scope is not None and bool(scope[cur.value])

    def refers_to(self, node: cst.CSTNode, name: str, *, package: str = "vime") -> bool:
        """True when ``node`` (a callee, or a call) names ``package``'s ``name``.

        ``name`` is the last part (``"RolloutFnTrainOutput"``) or a dotted tail
        (``"rm_hub.async_rm"``). A name that nothing binds (a snippet without its imports) is
        read by its spelling; a name bound to something else (the user's own class of that
        name, another library's) is not the contract's.
        """
        expr = node.func if isinstance(node, cst.Call) else node
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        tail = "." + name
        for q in self.qualified(expr):
            if q.startswith(package + ".") and q.endswith(tail):
                return True
        if self.is_bound(expr):
            return False
        text = spelled(expr)
        return text is not None and (text == name or text.endswith(tail))

    def qualified_in(self, node: cst.CSTNode, names: frozenset[str] | set[str]) -> str | None:
        """The first qualified name of ``node`` that is in ``names``, else None."""
        for q in self.qualified(node):
            if q in names:
                return q
        return None
