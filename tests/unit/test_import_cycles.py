"""No import cycles among vime's and vime_lint's modules, read statically from the source.

The graph has an edge ``a -> b`` for every ``import b`` / ``from b import x`` in module ``a``:
at the top of the module and inside functions (a function-local import that closes a cycle is
still a cycle: the two modules cannot be understood, tested or moved apart), but not inside
``if TYPE_CHECKING:`` (never run) nor ``if __name__ == "__main__":`` (a script's entry, not an
import). ``from pkg import name`` is an edge to the module ``pkg.name`` when that is a module,
else to ``pkg`` (its ``__init__``). The implicit import of a module's parent packages is not an
edge (a package's ``__init__`` importing its own submodules is not a cycle).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("vime", "vime_lint")


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``path:line`` (``local``: inside a function)."""

    source: str
    target: str
    path: str
    line: int
    local: bool


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _skipped_if(node: ast.If) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:`` / ``if __name__ == "__main__":``."""
    test = node.test
    if isinstance(test, ast.Name | ast.Attribute):
        return (test.id if isinstance(test, ast.Name) else test.attr) == "TYPE_CHECKING"
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _imports(name: str, path: Path, modules: dict[str, Path], root: Path) -> list[Edge]:
    def owner(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    rel = str(path.relative_to(root))
    edges: list[Edge] = []

    def add(target: str | None, node: ast.stmt, local: bool) -> None:
        if target and target != name:
            edges.append(Edge(name, target, rel, node.lineno, local))

    def visit(node: ast.AST, local: bool) -> None:
        if isinstance(node, ast.If) and _skipped_if(node):
            for child in node.orelse:
                visit(child, local)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(owner(alias.name), node, local)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in modules else owner(base), node, local)
        inner = local or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=rel), False)
    return edges


def import_cycles(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[list[Edge]]:
    """One cycle (its edges, in order) per strongly connected group of modules under ``root``."""
    modules = _modules(root, packages)
    graph: dict[str, dict[str, Edge]] = {m: {} for m in modules}
    for name, path in modules.items():
        for edge in _imports(name, path, modules, root):
            graph[name].setdefault(edge.target, edge)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    cycles = []
    for group in groups:
        # the shortest way back to the group's first module, through the group only
        first, members = group[0], set(group)
        paths: dict[str, list[Edge]] = {first: []}
        frontier = [first]
        cycle: list[Edge] | None = None
        while frontier and cycle is None:
            nxt = []
            for node in frontier:
                for target, edge in sorted(graph[node].items()):
                    if target == first:
                        cycle = [*paths[node], edge]
                        break
                    if target in members and target not in paths:
                        paths[target] = [*paths[node], edge]
                        nxt.append(target)
                if cycle is not None:
                    break
            frontier = nxt
        assert cycle is not None
        cycles.append(cycle)
    return cycles


def _describe(cycle: list[Edge]) -> str:
    steps = [f"{e.source} -> {e.target} ({e.path}:{e.line}"
             f"{', inside a function' if e.local else ''})" for e in cycle]
    return "\n    ".join(steps)


def test_no_import_cycles() -> None:
    cycles = import_cycles(ROOT)
    assert not cycles, (
        "import cycles (move the function or constant that one side needs to the module where "
        "it belongs, below both):\n  " + "\n  ".join(_describe(c) for c in cycles))


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_function_local_cycle_through_a_package_is_found(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "from pkg.a import f\n")
    _write(tmp_path, "pkg/a.py", "def f():\n    from pkg.b import g\n    return g\n")
    _write(tmp_path, "pkg/b.py", "from pkg import f as _f\n\ndef g():\n    return 1\n")
    (cycle,) = import_cycles(tmp_path, ("pkg",))
    assert [(e.source, e.target, e.local) for e in cycle] == [
        ("pkg", "pkg.a", False), ("pkg.a", "pkg.b", True), ("pkg.b", "pkg", False)]
    assert "pkg/a.py:2, inside a function" in _describe(cycle)


def test_type_checking_main_guard_and_relative_imports(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/a.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from pkg.b import g\nif __name__ == '__main__':\n"
                                 "    from pkg import b\n")
    _write(tmp_path, "pkg/b.py", "from . import a\n")
    assert import_cycles(tmp_path, ("pkg",)) == []
    _write(tmp_path, "pkg/a.py", "from .b import g\n")   # relative: pkg.b, which imports pkg.a
    (cycle,) = import_cycles(tmp_path, ("pkg",))
    assert {(e.source, e.target) for e in cycle} == {("pkg.a", "pkg.b"), ("pkg.b", "pkg.a")}
