"""docs/contract.md is generated from the contract and keeps its section numbers."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "contract.md"

#: The section headings other files cite as ``docs/contract.md §N``, in order.
SECTIONS = (
    "## 0. Compatibility policy",
    "## 1. Module map",
    "## 2. Sample",
    "## 3. Rollout outputs and shapes",
    "## 4. The rollout function",
    "## 5. Other hooks",
    "## 6. Invariants",
    "### 6a. Static",
    "### 6b. Runtime",
    "### 6d. Reward probes",
    "### 6e. Chat templates",
    "## 7. Data source and dataset format",
    "## 8. The default vLLM rollout",
    "## 9. SFT rollout",
    "## 10. Conversion to training data and reward normalisation",
    "## 11. Arguments",
    "## 12. Reference modules",
)


def test_contract_page_is_generated_from_the_code() -> None:
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "document_contract.py"),
                          "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_contract_page_keeps_its_section_numbers() -> None:
    headings = [line for line in PAGE.read_text(encoding="utf-8").splitlines()
                if line.startswith("## ") or line.startswith("### ")]
    assert tuple(headings) == SECTIONS


def test_contract_page_lists_every_invariant_hook_and_field() -> None:
    from vime.contract import HOOKS, INVARIANTS, SAMPLE_FIELDS

    page = PAGE.read_text(encoding="utf-8")
    for inv_id in INVARIANTS:
        assert f"| `{inv_id}` |" in page, inv_id
    for spec in HOOKS.values():
        assert f"`{spec.arg}`" in page, spec.arg
    for field in SAMPLE_FIELDS:
        assert f"| `{field.name}` |" in page, field.name


def test_runtime_invariants_say_always_or_policy() -> None:
    from vime.contract import INVARIANTS

    page = PAGE.read_text(encoding="utf-8")
    for inv in INVARIANTS.values():
        if inv.scope in ("static", "probe", "template"):
            continue
        row = next(line for line in page.splitlines() if line.startswith(f"| `{inv.id}` |"))
        assert f"| {inv.enforcement} |" in row, row


def _defined_names(module: str) -> set[str]:
    """Top-level names a module defines or imports, read from its source (nothing imported)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, f"module {module} not found"
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module and \
                [a.name for a in node.names] == ["*"]:
            names |= _defined_names(node.module)  # a facade: what the source module defines
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    if "__getattr__" in names and "__all__" in names:  # PEP 562: public names imported lazily
        for node in tree.body:
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "__all__"):
                names.update(ast.literal_eval(node.value))
    return names


def test_module_map_names_exist_in_their_modules() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from document_contract import MODULE_MAP
    finally:
        sys.path.remove(str(REPO / "scripts"))
    missing = []
    for names, module in MODULE_MAP:
        defined = _defined_names(module)
        for name in names.split(","):
            name = re.sub(r"\s*\(.*\)", "", name).strip()
            if name not in defined:
                missing.append(f"{module}.{name}")
    assert not missing, f"docs/contract.md §1 names what its module does not define: {missing}"


def test_module_map_paths_import_their_names() -> None:
    """Every public path of the module map imports (a path upstream code uses stays working)."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from document_contract import MODULE_MAP
    finally:
        sys.path.remove(str(REPO / "scripts"))
    broken = []
    for names, module in MODULE_MAP:
        if not module.startswith("vime."):
            continue
        imported = importlib.import_module(module)
        for name in names.split(","):
            name = re.sub(r"\s*\(.*\)", "", name).strip()
            if not hasattr(imported, name):
                broken.append(f"{module}.{name}")
    assert not broken, f"docs/contract.md §1 paths that do not import: {broken}"


def test_eval_config_upstream_path_is_the_same_object() -> None:
    from vime.config.eval_config import EvalDatasetConfig as defined
    from vime.utils.eval_config import EvalDatasetConfig as upstream_path

    assert upstream_path is defined


def test_rules_page_has_a_section_for_every_static_probe_and_template_id() -> None:
    """docs/rules.md explains every id a vime-lint command reports (static, probe, template):
    a section of its own, or a line of the static ids without a rule yet."""
    from vime.contract import INVARIANTS

    page = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,3} (VIM\d{3}) ", page, re.MULTILINE))
    pending = set(re.findall(r"^- (VIM\d{3}) ", page, re.MULTILINE))
    missing = [i.id for i in INVARIANTS.values()
               if i.scope in ("static", "probe", "template") and i.status != "removed"
               and i.id not in headings | pending]
    assert not missing, f"docs/rules.md has no section for {missing}: run scripts/document_rules.py"
