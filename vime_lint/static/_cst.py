"""Small pure helpers over LibCST nodes, shared by the rules.

Usage::

    params_of(fn)                  # [Param("args", "POSITIONAL_OR_KEYWORD", False, ""), ...]
    dotted(node)                   # "asyncio.to_thread" for an Attribute chain, else None
    code_of(node)                  # source text of an expression
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vime.contract import Param

__all__ = [
    "called",
    "returns_nothing",
    "body_statements", "code_of", "dotted", "dotted_text", "may_fall_through", "params_of",
    "reads_any",
    "string_value",
]

_EMPTY = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node`` (whitespace inside the node kept)."""
    return _EMPTY.code_for_node(node)


def dotted(node: cst.BaseExpression) -> str | None:
    """``"a.b.c"`` for a ``Name``/``Attribute`` chain as written, else None: the one spelling
    helper (for messages and snippets without imports; rules resolve names through
    :meth:`vime_lint.static.analysis.Semantic.qualified`)."""
    parts: list[str] = []
    cur: cst.BaseExpression = node
    while isinstance(cur, cst.Attribute):
        parts.append(cur.attr.value)
        cur = cur.value
    if isinstance(cur, cst.Name):
        parts.append(cur.value)
        return ".".join(reversed(parts))
    return None


def dotted_text(node: cst.BaseExpression | None) -> str:
    """:func:`dotted`, or ``""`` for None and for anything that is not a name chain (an
    import's module, an annotation)."""
    return (dotted(node) or "") if node is not None else ""


def string_value(node: cst.BaseExpression) -> str | None:
    """The value of a plain (non-f, non-concatenated) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def returns_nothing(value: cst.BaseExpression | None) -> bool:
    """Whether ``return value`` gives no value: a bare ``return`` (``value`` None) or
    ``return None``."""
    return value is None or (isinstance(value, cst.Name) and value.value == "None")


def called(value: cst.BaseExpression | None) -> cst.Call | None:
    """The call ``value`` is, awaited or not (``f(...)``, ``await f(...)``), else None."""
    if isinstance(value, cst.Await):
        value = value.expression
    return value if isinstance(value, cst.Call) else None


def _param(p: cst.Param, kind: str) -> Param:
    default = p.default
    return Param(p.name.value, kind, default is not None,
                 code_of(default) if default is not None else "")


def params_of(fn: cst.FunctionDef | cst.Lambda, *, drop_self: bool = False) -> list[Param]:
    """The parameters of ``fn`` as ``vime.contract.Param`` tuples, in order.

    ``kind`` is an ``inspect.Parameter.kind`` name; ``default_repr`` is the default's source
    text (``"False"``). With ``drop_self`` the first parameter (``self``) is left out.
    """
    ps = fn.params
    out = [_param(p, "POSITIONAL_ONLY") for p in ps.posonly_params]
    out += [_param(p, "POSITIONAL_OR_KEYWORD") for p in ps.params]
    if isinstance(ps.star_arg, cst.Param):
        out.append(_param(ps.star_arg, "VAR_POSITIONAL"))
    out += [_param(p, "KEYWORD_ONLY") for p in ps.kwonly_params]
    if ps.star_kwarg is not None:
        out.append(_param(ps.star_kwarg, "VAR_KEYWORD"))
    if drop_self and out:
        out = out[1:]
    return out


def body_statements(node: cst.BaseSuite) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    """The statements of a block (indented or on the ``if x: ...`` line)."""
    if isinstance(node, cst.IndentedBlock):
        return node.body
    if isinstance(node, cst.SimpleStatementSuite):
        return node.body
    return ()


def _terminates_small(stmt: cst.BaseSmallStatement) -> bool:
    if isinstance(stmt, (cst.Return, cst.Raise)):
        return True
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        name = dotted(stmt.value.func)
        return name in ("sys.exit", "exit", "quit", "os._exit", "os.abort")
    if isinstance(stmt, cst.Assert):
        return isinstance(stmt.test, cst.Name) and stmt.test.value == "False"
    return False


def _contains_break(node: cst.CSTNode) -> bool:
    """True if ``node`` holds a ``break`` for its own loop (nested loops skipped)."""
    for child in node.children:
        if isinstance(child, cst.Break):
            return True
        if isinstance(child, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if _contains_break(child):
            return True
    return False


def _stmt_may_fall_through(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return not any(_terminates_small(s) for s in stmt.body)
    if isinstance(stmt, cst.BaseSmallStatement):
        return not _terminates_small(stmt)
    if isinstance(stmt, cst.If):
        if may_fall_through(stmt.body):
            return True
        orelse = stmt.orelse
        if orelse is None:
            return True
        if isinstance(orelse, cst.If):
            return _stmt_may_fall_through(orelse)
        return may_fall_through(orelse.body)
    if isinstance(stmt, cst.Try):
        if stmt.finalbody is not None and not may_fall_through(stmt.finalbody.body):
            return False
        body_ft = may_fall_through(stmt.body)
        if stmt.orelse is not None:
            body_ft = may_fall_through(stmt.orelse.body)
        return body_ft or any(may_fall_through(h.body) for h in stmt.handlers)
    if isinstance(stmt, cst.With):
        return may_fall_through(stmt.body)
    if isinstance(stmt, cst.While):
        endless = isinstance(stmt.test, cst.Name) and stmt.test.value == "True"
        return not (endless and not _contains_break(stmt.body))
    if isinstance(stmt, (cst.Match, cst.TryStar)):
        return False  # not modelled: stay quiet (precision first)
    return True


def may_fall_through(suite: cst.BaseSuite) -> bool:
    """True when control can reach the end of ``suite`` (a function returns None there).

    Conservative for precision: constructs it does not model (``match``, ``try*``) count as
    terminating, so a finding is only reported when the fall-through is visible.
    """
    stmts = body_statements(suite)
    if not stmts:
        return True
    return _stmt_may_fall_through(stmts[-1])


def reads_any(node: cst.CSTNode, names: set[str] | frozenset[str]) -> bool:
    """True when ``node`` reads one of ``names`` (nested functions included)."""
    if isinstance(node, cst.Name):
        return node.value in names
    return any(reads_any(c, names) for c in node.children)
