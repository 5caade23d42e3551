"""The parameters of one of vime's functions, methods or contract dataclasses, read from its source (nothing imported)."""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["Param", "Signature", "class_attributes", "vime_signature"]


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    default: str | None      # its text, None when required
    keyword_only: bool


@dataclass(frozen=True, slots=True)
class Signature:
    #: ``module.name`` as vime spells it, and the parameters after ``self``.
    qualified: str
    params: tuple[Param, ...]
    star_args: bool
    star_kwargs: bool

    def text(self) -> str:
        name = self.qualified.rpartition(".")[2]
        parts: list[str] = []
        star = False
        for p in self.params:
            if p.keyword_only and not star:
                parts.append("*")
                star = True
            parts.append(p.name if p.default is None else f"{p.name}={p.default}")
        return f"{name}({', '.join(parts)})"


def _default_text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 12 else "..."


def _signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef, qualified: str,
                  method: bool) -> Signature:
    a = node.args
    positional = [*a.posonlyargs, *a.args][1 if method else 0:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + [
        *a.defaults][-len(positional):] if positional else []
    params = [Param(p.arg, None if d is None else _default_text(d), False)
              for p, d in zip(positional, defaults, strict=True)]
    params += [Param(p.arg, None if d is None else _default_text(d), True)
               for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    return Signature(qualified, tuple(params), a.vararg is not None, a.kwarg is not None)


@cache
def _module_tree(module: str) -> ast.Module | None:
    """The parsed source of one of vime's modules (found, not imported), else None."""
    if not module.startswith("vime"):
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


@cache
def vime_signature(module: str, name: str, owner: str | None, depth: int = 0
                    ) -> Signature | None:
    """The parameters of ``module.name`` (a method of class ``owner`` when given; a
    dataclass's fields for a contract dataclass), following one of vime's re-exports."""
    tree = _module_tree(module)
    if tree is None or depth > 3:
        return None
    # the last `def` of a name is the implementation of its `@overload`s
    for node in reversed(tree.body):
        if owner is not None and isinstance(node, ast.ClassDef) and node.name == owner:
            for sub in reversed(node.body):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == name:
                    return _signature_of(sub, f"{module}.{owner}.{name}", True)
            return None
        if owner is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == name:
            return _signature_of(node, f"{module}.{name}", False)
        if owner is None and isinstance(node, ast.ClassDef) and node.name == name:
            return _dataclass_signature(node, f"{module}.{name}")
        if isinstance(node, ast.ImportFrom) and node.module and owner is None:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = node.module if node.level == 0 else ".".join(
                        [*module.split(".")[:-node.level], node.module])
                    return vime_signature(base, alias.name, None, depth + 1)
    return None


def _dataclass_signature(node: ast.ClassDef, qualified: str) -> Signature | None:
    """The ``__init__`` parameters of a dataclass: its annotated fields in order (a value is a
    default; ``field(init=False)`` and ``ClassVar`` are left out); None for another class."""
    if not any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return None
    params: list[Param] = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
            kw = {k.arg: k.value for k in value.keywords}
            init = kw.get("init")
            if isinstance(init, ast.Constant) and init.value is False:
                continue
            default = kw.get("default")
            text = _default_text(default) if default is not None else (
                "..." if "default_factory" in kw else None)
        else:
            text = _default_text(value) if value is not None else None
        params.append(Param(stmt.target.id, text, False))
    return Signature(qualified, tuple(params), False, False)


@cache
def class_attributes(module: str, cls: str, depth: int = 0) -> frozenset[str]:
    """The methods and class-level names of one of vime's classes, with those of its bases
    defined in the same module, read from source (empty when not found)."""
    tree = _module_tree(module)
    if tree is None or depth > 5:
        return frozenset()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names = {sub.name for sub in node.body
                     if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef))}
            names |= {t.id for sub in node.body if isinstance(sub, ast.Assign)
                      for t in sub.targets if isinstance(t, ast.Name)}
            names |= {sub.target.id for sub in node.body
                      if isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name)}
            for base in node.bases:
                if isinstance(base, ast.Name):
                    names |= class_attributes(module, base.id, depth + 1)
            return frozenset(names)
    return frozenset()
