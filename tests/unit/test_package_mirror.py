"""tests/unit/ mirrors the packages, so a module's tests are found at once.

Every package of vime/ and vime_lint/ (a folder with an ``__init__.py``) has the folder of the
same path under tests/unit/ (``vime/contract/checks/`` -> ``contract/checks/``), holding a test
module that names the package; every top-level module has the folder of its group
(:data:`MODULE_FOLDERS`); every folder of tests is a row of tests/README.md's table. The two
package roots have no package names in common, so the folders need no ``vime``/``vime_lint``
level.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
PACKAGE_ROOTS = ("vime", "vime_lint")

# Packages without a folder of their own, and where their tests are.
ELSEWHERE = {
    "vime/rollout/filter_hub": "tested with the reward models in rollout/rm_hub/test_rm_hub.py "
                               "and probed by vime-lint check in check/test_filter_probes.py",
}

# Top-level modules -> the folder of their group.
MODULE_FOLDERS = {
    "vime/__main__.py": "cli",
    "vime/cli.py": "cli",
    "vime/train.py": "train",
    # run by vime.cli for `vime train`; tested end to end (tests/e2e/test_train_cli.py,
    # tests/e2e/test_engine_lifetime.py)
    "vime/supervisor.py": "train",
    "vime_lint/__main__.py": "cli",
    "vime_lint/cli.py": "lint",
    "vime_lint/options.py": "lint",
    "vime_lint/rules_page.py": "lint",
    "vime_lint/template.py": "lint",
    "vime_lint/rescore.py": "report",  # scores the rollout dumps of vime.report again
}


def packages(root: Path) -> dict[str, str]:
    """``vime/contract/checks`` -> ``contract/checks`` for every package under the roots."""
    found = {}
    for top in PACKAGE_ROOTS:
        for init in sorted((root / top).rglob("__init__.py")):
            rel = init.parent.relative_to(root / top).as_posix()
            if rel != ".":
                found[f"{top}/{rel}"] = rel
    return found


def missing_folders(root: Path, elsewhere: dict[str, str]) -> list[str]:
    """The packages with no tests/unit/ folder whose own test modules name them."""
    problems = []
    for package, folder in packages(root).items():
        if package in elsewhere:
            continue
        tests = sorted((root / "tests" / "unit" / folder).glob("test_*.py"))
        dotted = package.replace("/", ".")
        named = re.compile(rf"\b{re.escape(dotted)}\b")
        if not tests:
            problems.append(f"{package}: no tests/unit/{folder}/test_*.py; put the package's "
                            f"tests there (or name it in ELSEWHERE with the reason)")
        elif not any(named.search(t.read_text(encoding="utf-8")) for t in tests):
            problems.append(f"{package}: no test module of tests/unit/{folder}/ names "
                            f"{dotted}; its tests belong there")
    return problems


def test_every_package_has_its_folder() -> None:
    assert missing_folders(ROOT, ELSEWHERE) == []


def test_the_allow_list_names_only_packages_without_a_folder() -> None:
    for package in ELSEWHERE:
        assert package in packages(ROOT), f"{package} is no package any more; drop it"
        folder = UNIT / packages(ROOT)[package]
        assert not list(folder.glob("test_*.py")), f"{package} has {folder}; drop it"


def test_every_top_level_module_has_the_folder_of_its_group() -> None:
    modules = {p.relative_to(ROOT).as_posix()
               for top in PACKAGE_ROOTS for p in (ROOT / top).glob("*.py")
               if p.name != "__init__.py"}
    assert sorted(modules - MODULE_FOLDERS.keys()) == [], "name their folder in MODULE_FOLDERS"
    assert sorted(MODULE_FOLDERS.keys() - modules) == [], "stale entries in MODULE_FOLDERS"
    for module, folder in MODULE_FOLDERS.items():
        assert list((UNIT / folder).glob("test_*.py")), f"{module}: tests/unit/{folder}/ is empty"


def test_every_folder_of_tests_is_in_the_readme_table() -> None:
    readme = (ROOT / "tests" / "README.md").read_text(encoding="utf-8")
    section = readme.split("### `tests/unit/`", 1)[1].split("\n### ", 1)[0]
    rows = {name for line in section.splitlines() if line.startswith("| `")
            for name in re.findall(r"`([\w/]+)/`", line.split("|")[1])}
    folders = {p.parent.relative_to(UNIT).as_posix() for p in UNIT.rglob("test_*.py")
               if p.parent != UNIT}
    assert sorted(folders - rows) == [], "add a row to tests/README.md's tests/unit/ table"
    assert sorted(rows - folders) == [], "tests/README.md names folders that hold no tests"


def test_a_package_without_its_folder_is_found(tmp_path: Path) -> None:
    """The check on a made-up tree: a package with no folder, one whose folder's tests name
    another package, one in place, and one allowed elsewhere."""
    for pkg in ("vime/alpha", "vime/beta", "vime_lint/gamma", "vime_lint/gamma/delta"):
        (tmp_path / pkg).mkdir(parents=True)
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "tests/unit/beta").mkdir(parents=True)
    (tmp_path / "tests/unit/beta/test_b.py").write_text("from vime.alpha import x\n")
    (tmp_path / "tests/unit/gamma").mkdir(parents=True)
    (tmp_path / "tests/unit/gamma/test_g.py").write_text("from vime_lint.gamma.x import y\n")
    problems = missing_folders(tmp_path, {"vime_lint/gamma/delta": "tested in gamma/"})
    assert [p.split(":")[0] for p in problems] == ["vime/alpha", "vime/beta"]
    assert "no tests/unit/alpha/test_*.py" in problems[0]
    assert "names vime.beta" in problems[1]
    unlisted = missing_folders(tmp_path, {})
    assert unlisted[-1].startswith("vime_lint/gamma/delta: no tests/unit/gamma/delta/")
