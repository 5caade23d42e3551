"""Scopes for the linter: LibCST's ``ScopeProvider`` with name resolution kept linear.

LibCST resolves names flow-sensitively: every read of a name gets the set of the
assignments made before it, and every assignment the set of reads after it. For a name that
one scope assigns ``n`` times and reads ``m`` times that is ``m * n`` set entries, built one
access at a time: a 500 KB function of ``x = x + 1`` lines took minutes (profiled with
cProfile: ``ScopeVisitor.infer_accesses`` -> ``Access.record_assignments`` /
``BaseAssignment.record_accesses``).

:class:`LinearScopeProvider` keeps LibCST's exact answer where ``m * n`` is at most
:data:`EXACT_PAIRS` (every real rollout module: the answers are the same objects' sets, so
rules see no difference), and for a larger (scope, name) pair resolves by scope as Python
itself does: every read gets all assignments of the name in its scope and every such
assignment all those reads, one shared set each, so the cost is ``m + n``. The difference
only shows in that pathological case: a read may also name an assignment made after it.

:func:`resolve_scopes` resolves it on a wrapper with one walk per provider: LibCST's own
``resolve`` runs every batchable provider inside a batched traversal of the whole tree, and for
``ExpressionContextProvider`` and ``ScopeProvider`` (whose ``visit_Module`` does all the work
with a visitor of its own) that traversal visits every node for nothing: two of the four walks
of the scope analysis, about 45 % of its time on a 300-line hook module (cProfile).

Usage::

    scopes = MetadataWrapper(module).resolve(LinearScopeProvider)   # like ScopeProvider
    scopes = resolve_scopes(wrapper)            # the same mapping, without the idle walks

Built on ``libcst.metadata.ScopeProvider`` (LibCST >= 1.5; its private attributes are checked
at import and the stock provider is used when they are missing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import libcst as cst
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, Scope, ScopeProvider
from libcst.metadata import scope_provider as _sp

__all__ = ["EXACT_PAIRS", "LinearScopeProvider", "resolve_scopes"]

#: Above this many (read, assignment) pairs of one name in one scope, names are resolved by
#: scope (linear) instead of by position (quadratic).
EXACT_PAIRS = 20_000

# LibCST's private names this module relies on (checked, never assumed).
_DEFERRED = "_ScopeVisitor__deferred_accesses"
_REFERENTS = "_Access__assignments"
_REFERENCES = "_BaseAssignment__accesses"
_SUPPORTED = all(hasattr(_sp, n) for n in ("ScopeVisitor", "_gen_dotted_names", "Access",
                                            "BaseAssignment"))


class _Visitor(_sp.ScopeVisitor if _SUPPORTED else cst.CSTVisitor):  # type: ignore[misc]
    def infer_accesses(self) -> None:
        deferred = getattr(self, _DEFERRED, None)
        if deferred is None:  # another LibCST layout: its own (exact) resolution
            super().infer_accesses()
            return
        groups: dict[tuple[Any, str], list[Any]] = defaultdict(list)
        for item in deferred:
            access = item.access
            name = access.node.value
            if item.enclosing_attribute is not None:
                # `a.b.c` is an access of the longest dotted prefix the scope assigns
                for dotted, node in _sp._gen_dotted_names(item.enclosing_attribute):
                    if dotted in access.scope:
                        access.node = node
                        name = dotted
                        break
            if item.enclosing_string_annotation is not None:
                access.node = item.enclosing_string_annotation
            groups[(access.scope, name)].append(access)
            access.scope.record_access(name, access)
        large = []
        for (scope, name), accesses in groups.items():
            assignments = scope._resolve_scope_for_access(name, scope)
            if len(accesses) * len(assignments) > EXACT_PAIRS:
                large.append((accesses, assignments))
                continue
            for access in accesses:  # LibCST's own, position-ordered resolution
                access.record_assignments(name)
            reads = set(accesses)
            for assignment in assignments:
                assignment.record_accesses(reads)
        # After every exact group (which write into sets in place): one set shared by all
        # reads of a large group, one by all its assignments (copied before a second group
        # adds to it).
        shared: set[int] = set()
        for accesses, assignments in large:
            referents = set(assignments)
            for access in accesses:
                setattr(access, _REFERENTS, referents)
            reads = set(accesses)
            shared.add(id(reads))
            for assignment in assignments:
                own = getattr(assignment, _REFERENCES)
                if not own:
                    setattr(assignment, _REFERENCES, reads)
                elif id(own) in shared:
                    setattr(assignment, _REFERENCES, own | reads)
                else:
                    own |= reads
        setattr(self, _DEFERRED, [])


class LinearScopeProvider(ScopeProvider):
    """``ScopeProvider`` whose name resolution is linear in the file's size (see the module
    docstring for the one case where its answer is coarser than LibCST's)."""

    def visit_Module(self, node: cst.Module) -> bool | None:
        if not _SUPPORTED:
            return super().visit_Module(node)
        visitor = _Visitor(self)
        node.visit(visitor)
        visitor.infer_accesses()
        return None


def resolve_scopes(wrapper: MetadataWrapper) -> Mapping[cst.CSTNode, Scope | None]:
    """``wrapper.resolve(LinearScopeProvider)``, computed without LibCST's idle batched walks
    (see the module docstring): each provider's ``visit_Module`` is called on the module
    directly, and its mapping stored on ``wrapper`` as ``resolve`` stores it (a later
    ``resolve`` of either provider reuses it). Falls back to ``resolve`` when the wrapper's
    layout is not LibCST's."""
    store = getattr(wrapper, "_metadata", None)
    if not _SUPPORTED or not isinstance(store, dict):
        return wrapper.resolve(LinearScopeProvider)
    if LinearScopeProvider in store:
        return store[LinearScopeProvider]  # type: ignore[no-any-return]
    module = wrapper.module
    if ExpressionContextProvider not in store:
        contexts = ExpressionContextProvider()
        contexts.visit_Module(module)
        store[ExpressionContextProvider] = MappingProxyType(dict(contexts._computed))
    scopes = LinearScopeProvider()
    with scopes.resolve(wrapper):   # its one dependency is already stored: no walk
        scopes.visit_Module(module)
    store[LinearScopeProvider] = MappingProxyType(dict(scopes._computed))
    return store[LinearScopeProvider]  # type: ignore[no-any-return]
