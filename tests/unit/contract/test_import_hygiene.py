"""The light modules import no heavy package (a pre-commit hook must start in seconds)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

LIGHT = ["vime", "vime.contract", "vime.contract.checks", "vime.utils.types",
         "vime.rollout.base_types", "vime_lint", "vime_lint.runtime", "vime_lint.check.dry_run",
         "vime.utils.misc", "vime.cli"]
HEAVY = ["torch", "ray", "vllm", "transformers", "httpx", "aiohttp"]


@pytest.mark.parametrize("module", LIGHT)
def test_light_module_imports_no_heavy_package(module: str) -> None:
    code = (f"import sys, {module}; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import {module} pulled in {out.stdout.strip()}"


def test_contract_uses_standard_library_only() -> None:
    code = ("import sys; before = set(sys.modules); import vime.contract; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "import sys as s; std = s.stdlib_module_names; "
            "print(','.join(sorted(m for m in new if m not in std and m != 'vime')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _imported_modules(path: Path) -> set[str]:
    """Every module an ``import`` / ``from ... import`` in ``path`` names, at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_runtime_never_imports_vime_lint() -> None:
    """Dependencies point one way: vime_lint imports vime.contract; vime never imports vime_lint
    (not even inside a function), so there is no package cycle."""
    root = Path(__file__).resolve().parents[3] / "vime"
    offenders = [f"{p.relative_to(root.parent)} imports {m}"
                 for p in sorted(root.rglob("*.py"))
                 for m in sorted(_imported_modules(p))
                 if m == "vime_lint" or m.startswith("vime_lint.")]
    assert offenders == []


def test_cycle_check_sees_a_planted_import(tmp_path: Path) -> None:
    planted = tmp_path / "m.py"
    planted.write_text("def f():\n    from vime_lint.runtime import run_checks\n")
    assert "vime_lint.runtime" in _imported_modules(planted)


def test_checks_use_standard_library_and_typeguard_only() -> None:
    code = ("import sys; before = set(sys.modules); import vime.contract.checks; "
            "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
            "std = sys.stdlib_module_names; "
            "print(','.join(sorted(m for m in new if m not in std and m not in "
            "('vime', 'typeguard', 'typing_extensions'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
