"""mypy's ``"Sample" has no attribute`` as VIM031 (or VIM032 for a stale flag), with the severity and words of ``vime-lint rollout``.

A store is an error for a near miss of a field's name, else a warning; an attribute the
module both stores and reads back is its own and not reported; a read nothing stores is an
error.
"""

from __future__ import annotations

import ast
import re

from vime.contract import INVARIANTS
from vime.contract.errors import Severity
from vime_lint.static._model import Finding
from vime_lint.typecheck.run import MypyMessage
from vime_lint.typecheck.source_index import SourceIndex

__all__ = ["NO_ATTR", "attribute_uses", "unknown_attribute"]


NO_ATTR = re.compile(r'(?:Item )?"Sample"(?: of "[^"]*")? has no attribute "(?P<attr>\w+)"')


def attribute_uses(index: SourceIndex) -> tuple[set[str], set[str]]:
    """Attribute names the module stores (``x.a = ...``) and reads (``x.a``,
    ``getattr(x, "a", ...)``, ``hasattr(x, "a")``)."""
    stores: set[str] = set()
    reads: set[str] = set()
    for node in index.nodes:
        if isinstance(node, ast.Attribute):
            (stores if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            reads.discard(node.target.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            reads.add(node.args[1].value)  # getattr(s, "name", ...): read back by name
    return stores, reads


def unknown_attribute(path: str, index: SourceIndex, m: MypyMessage, attr: str,
                       uses: tuple[set[str], set[str]]) -> Finding | None:
    """VIM031 for ``"Sample" has no attribute "attr"``, as ``vime-lint rollout`` reports it, or
    None for an attribute the module both stores and reads (its own)."""
    from vime_lint.static.rules.unknown_sample_attribute import (
        UnknownSampleAttribute,
        unknown_store,
    )

    stores, reads = uses
    if attr.startswith("_"):
        return None  # private: `vime-lint rollout` leaves it alone too
    node = next((n for n in index.nodes if isinstance(n, ast.Attribute) and n.attr == attr
                 and n.lineno == m.line and n.col_offset == m.col), None)
    store = node is not None and isinstance(node.ctx, ast.Store)
    if attr in stores and attr in reads:
        return None  # the module's own attribute: stored and read back (it works)
    target = ast.unparse(node) if node is not None else f"sample.{attr}"
    if attr in ("truncated", "aborted"):  # the stale flags: VIM032, as in `vime-lint rollout`
        from vime_lint.static.rules.stale_sample_flag import StaleSampleFlag

        inv = INVARIANTS["VIM032"]
        return Finding(code="VIM032", slug=StaleSampleFlag.slug(), severity=inv.severity,
                       message=inv.render(problem=f"`{target}` is a stale flag of an old API: "
                                                  f"{inv.fix}") + f"; mypy: {m.message}",
                       path=path, line=m.line, col=m.col, end_line=max(m.end_line, m.line),
                       end_col=m.end_col if m.end_line >= m.line else m.col + 1,
                       fix_hint=inv.fix)
    severity: Severity
    if store:
        problem, severity = unknown_store(target, attr)
    else:
        problem, severity = (f"the attribute read `{target}` reads `{attr}`, which is not a "
                             "Sample field and that nothing stores; it raises "
                             "AttributeError"), "error"
    inv = INVARIANTS["VIM031"]
    return Finding(code="VIM031", slug=UnknownSampleAttribute.slug(), severity=severity,
                   message=inv.render(problem=problem) + f"; mypy: {m.message}", path=path,
                   line=m.line, col=m.col, end_line=max(m.end_line, m.line),
                   end_col=m.end_col if m.end_line >= m.line else m.col + 1, fix_hint=inv.fix)
