"""The options a hook module declares and reads: what its ``add_arguments(parser)`` declares
(``vime/config/hook_options.py``; :meth:`Semantic.declared_options`) and which ``args``
attributes it reads (:meth:`Semantic.args_reads`). Read by VIM038 and VIM039.
"""

from __future__ import annotations

import libcst as cst

from vime_lint.static._cst import string_value

__all__ = ["DECLARE", "ArgsReads", "Declared", "declaration_of"]


DECLARE = "add_arguments"


class Declared(cst.CSTVisitor):
    """``parser.add_argument("--flag", ..., dest=...)`` calls of ``add_arguments``: dest ->
    (flag, call); ``open`` when some option is declared where the source does not say its
    name (a flag that is not a string literal, ``**kwargs``, the parser handed to a helper)."""

    def __init__(self, parser: str | None) -> None:
        self.parser = parser
        self.found: dict[str, tuple[str, cst.Call]] = {}
        self.open = False

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_argument"):
            # add_arguments(parser) -> helper(parser): what the helper declares is not seen here
            if self.parser is not None and any(
                    isinstance(a.value, cst.Name) and a.value.value == self.parser
                    for a in node.args):
                self.open = True
            return
        if any(a.star for a in node.args):
            self.open = True
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        names = [string_value(v) for v in positional]
        flags = [v for v in names if v is not None and v.startswith("-")]
        if not flags:
            self.open = self.open or any(v is None for v in names)
            return
        if any(v is None for v in names):
            self.open = True
        dest_arg = next((a.value for a in node.args
                         if a.keyword is not None and a.keyword.value == "dest"), None)
        dest = string_value(dest_arg) if dest_arg is not None else None
        if dest_arg is not None and dest is None:
            self.open = True
        flag = next((f for f in flags if f.startswith("--")), flags[0])
        self.found[dest or flag.lstrip("-").replace("-", "_")] = (flag, node)


def declaration_of(module: cst.Module) -> Declared | None:
    """The options of the module's ``add_arguments`` (None without one)."""
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == DECLARE:
            params = [*stmt.params.posonly_params, *stmt.params.params]
            visitor = Declared(params[0].name.value if params else None)
            stmt.visit(visitor)
            return visitor
    return None


class ArgsReads(cst.CSTVisitor):
    """Every ``args.NAME`` read and ``getattr``/``hasattr(args, "NAME"...)`` of a module."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.guarded: set[str] = set()
        #: ``getattr(args, name)`` with a name the source does not spell (``for k in ...``).
        self.dynamic = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == "args":
            self.names.add(node.attr.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[0].value, cst.Name) \
                and node.args[0].value.value == "args":
            name = string_value(node.args[1].value)
            if name is None:
                self.dynamic = True
            if name:
                self.names.add(name)
                if node.func.value == "hasattr" or len(node.args) >= 3:
                    self.guarded.add(name)
