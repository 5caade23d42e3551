"""``vime-lint types`` from an installed vime-lint (a pre-commit hook's environment: the stubs
live in site-packages, which mypy refuses on its path), and a mypy that refuses to start is a
failure, never "All checks passed!"."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest

import vime_lint.typecheck.run as run_module
from vime_lint.cli import main

pytestmark = pytest.mark.unit
pytest.importorskip("mypy")

STRING_REWARD = "async def reward_func(args, sample):\n    return str(len(sample.response))\n"


@pytest.fixture
def installed_stubs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """vime-lint's stubs as a non-editable install has them: under a site-packages folder."""
    stubs = tmp_path / "env" / "lib" / "site-packages" / "vime_lint" / "typecheck" / "stubs"
    shutil.copytree(run_module.STUBS, stubs)
    monkeypatch.setattr(run_module, "STUBS", stubs)
    return stubs


def _project(repo: Path) -> None:
    (repo / "pyproject.toml").write_text(
        '[tool.vime_lint]\nhooks = {custom_rm_path = "rm.reward_func"}\n')
    (repo / "rm.py").write_text(STRING_REWARD)


def test_installed_stubs_are_copied_out_of_site_packages_and_the_check_runs(
        repo: Path, types_cache: Path, installed_stubs: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    code = main(["types", "--no-cache", "--cache-dir", str(types_cache), "rm.py"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "rm.py:2:12: VIM200" in out, out + err
    copies = list(types_cache.rglob("stubs/torch/__init__.pyi"))
    assert len(copies) == 1 and "site-packages" not in str(copies[0])
    assert copies[0].read_bytes() == (installed_stubs / "torch" / "__init__.pyi").read_bytes()
    before = copies[0].stat().st_mtime_ns
    assert main(["types", "--no-cache", "--cache-dir", str(types_cache), "rm.py"]) == 1
    assert copies[0].stat().st_mtime_ns == before  # unchanged: not rewritten, mypy's cache holds
    capsys.readouterr()


def test_a_mypy_that_refuses_to_start_fails_the_command(
        repo: Path, types_cache: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A stubs folder inside this interpreter's site-packages on mypy_path (what the installed
    hook did before the copy): mypy exits 1 with no message about the file and its reason on
    stderr; the command says so and fails."""
    _project(repo)
    inside = Path(sysconfig.get_paths()["purelib"]) / "vime_lint" / "typecheck" / "stubs"
    monkeypatch.setattr(run_module, "stubs_folder", lambda cache_dir, scratch: inside)
    code = main(["types", "--no-cache", "--cache-dir", str(types_cache), "rm.py"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "All checks passed" not in out + err
    assert "mypy failed" in out + err and "is in the MYPYPATH" in out + err, out + err


@pytest.mark.parametrize(("status", "messages", "other", "stderr", "failed"), [
    (0, (), (), "", False),
    (1, ("error",), (), "", False),
    (1, (), (), "x is in the MYPYPATH. Please remove it.", True),   # refused to start
    (1, ("note",), (), "", True),                                   # exit 1, no error
    (2, (), ("crash",), "", True),
    (0, (), ("a line about no copy",), "", True),
])
def test_failure_is_set_whenever_mypy_did_not_check(
        status: int, messages: tuple[str, ...], other: tuple[str, ...], stderr: str,
        failed: bool) -> None:
    result = run_module.MypyResult(
        tuple(run_module.MypyMessage("rm.py", 1, 0, 1, 1, s, "m", "") for s in messages),
        status, stderr, 0.0, other)
    assert (result.failure is not None) is failed
    if failed:
        assert result.failure == (" | ".join(other) or stderr or f"mypy exited {status}")
