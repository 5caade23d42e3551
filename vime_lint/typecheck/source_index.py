"""The user's module parsed once, to find the expressions at the positions of mypy's messages."""

from __future__ import annotations

import ast
from collections.abc import Sequence

__all__ = ["SourceIndex", "chain_root", "focus", "within"]


#: Statements with a body: the position's context is never a whole block.
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
             ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)


def within(node: ast.AST, line: int, col: int) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return start <= (line, col) < end or start == (line, col)


def chain_root(node: ast.expr) -> tuple[ast.Name | None, list[ast.Attribute]]:
    """The Name a chain ``a[0].b.c`` starts from, and its attributes, innermost first."""
    attrs: list[ast.Attribute] = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node)
            node = node.value
        elif isinstance(node, (ast.Subscript, ast.Call)):
            node = node.value if isinstance(node, ast.Subscript) else node.func
        else:
            break
    return (node if isinstance(node, ast.Name) else None), attrs[::-1]


class SourceIndex:
    """The user's module parsed once: the nodes at each position."""

    def __init__(self, source: str) -> None:
        try:
            self.tree: ast.AST | None = ast.parse(source)
        except SyntaxError:
            self.tree = None
        self.nodes: list[ast.AST] = list(ast.walk(self.tree)) if self.tree is not None else []

    def at(self, line: int, col: int) -> list[ast.AST]:
        """Nodes whose span holds the position, outermost first."""
        found = [n for n in self.nodes if isinstance(n, (ast.expr, ast.stmt)) and
                 not isinstance(n, _COMPOUND) and within(n, line, col)]
        return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0),
                                            -(getattr(n, "end_lineno", 0) or 0),
                                            -(getattr(n, "end_col_offset", 0) or 0)))


def focus(nodes: Sequence[ast.AST], line: int, col: int) -> ast.AST | None:
    """The expression mypy points at: the largest one starting at the position, else the
    innermost one holding it."""
    exprs = [n for n in nodes if isinstance(n, ast.expr)]
    starting = [n for n in exprs if (n.lineno, n.col_offset) == (line, col)]
    if starting:
        return starting[0]
    return exprs[-1] if exprs else None
