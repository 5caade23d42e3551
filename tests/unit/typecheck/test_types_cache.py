"""The result cache of ``vime-lint types``: a run with nothing changed prints what the uncached
run printed, with its exit status, without running mypy (nor importing mypy or LibCST); every
part of the key invalidates it; ``--no-cache`` bypasses it; a folder that cannot be written
turns it off or moves it, with no error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import vime_lint.typecheck.run as run_module
from vime_lint.cli import main
from vime_lint.typecheck import result_cache

pytestmark = pytest.mark.unit
pytest.importorskip("mypy")

BAD = (
    "from helpers import bonus\n\n\n"
    "async def reward_func(args, sample):\n"
    "    text = sample.prompt.lower()\n"
    "    return bonus()\n"
)
HELPER = "def bonus() -> float:\n    return 1.0\n"


@pytest.fixture
def mypy_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the mypy runs (``run_mypy`` calls) of the commands run in the test."""
    calls: list[int] = []
    real = run_module.run_mypy

    def counting(*args: object, **kwargs: object) -> run_module.MypyResult:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(run_module, "run_mypy", counting)
    yield calls


def _types(capsys: pytest.CaptureFixture[str], cache: Path | None, *argv: str
           ) -> tuple[int, str, str]:
    extra = ["--cache-dir", str(cache)] if cache is not None else []
    code = main(["types", *argv, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _project(repo: Path) -> None:
    (repo / "rm.py").write_text(BAD)
    (repo / "helpers.py").write_text(HELPER)


def test_a_hit_prints_the_same_output_and_status_without_mypy(
        repo: Path, types_cache: Path, mypy_runs: list[int],
        capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    for argv in (["rm.py"], ["rm.py", "--output-format", "json"], ["rm.py", "--exit-zero"],
                 ["rm.py", "--statistics", "--no-show-fixes"]):
        first = _types(capsys, types_cache, *argv)
        runs = len(mypy_runs)
        assert runs >= 1
        second = _types(capsys, types_cache, *argv)
        assert second == first and len(mypy_runs) == runs, argv  # answered from the cache
    assert first[0] == 1 and "VIM201" in first[1]
    code, out, _ = _types(capsys, types_cache, "rm.py", "--exit-zero")
    assert code == 0 and "VIM201" in out


def test_each_part_of_the_key_invalidates(repo: Path, types_cache: Path, mypy_runs: list[int],
                                          capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch,
                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    _project(repo)
    hook_api = tmp_path_factory.mktemp("api") / "types.py"
    hook_api.write_text("x = 1\n")
    real_api = result_cache.hook_api_files
    monkeypatch.setattr(result_cache, "hook_api_files", lambda: [*real_api(), hook_api])

    def ran(change: str) -> tuple[int, str, str]:
        before = len(mypy_runs)
        result = _types(capsys, types_cache, "rm.py", "--output-format", "json")
        after = len(mypy_runs)
        assert after > before, f"{change}: answered from the cache"
        again = _types(capsys, types_cache, "rm.py", "--output-format", "json")
        assert again == result and len(mypy_runs) == after, f"{change}: not stored"
        return result

    ran("first run")
    (repo / "rm.py").write_text(BAD.replace("lower()", "upper()"))
    ran("the checked file")
    (repo / "helpers.py").write_text(HELPER.replace("-> float", "-> str").replace("1.0", "'x'"))
    code, out, _ = ran("an imported helper")
    assert ("VIM200", 6) in {(d["code"], d["location"]["row"]) for d in json.loads(out)}
    (repo / "helpers.py").unlink()
    (repo / "helpers").mkdir()
    (repo / "helpers" / "__init__.py").write_text(HELPER)
    ran("a module an import now finds")
    (repo / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.vime_lint]\nignore = ['VIM201']\n")
    code, out, _ = ran("the configuration")
    assert "VIM201" not in out
    (repo / "run.sh").write_text("vime train --custom-rm-path rm.reward_func "
                                 "--apply-chat-template\n")
    ran("a launch script")
    monkeypatch.setattr(result_cache, "mypy_version", lambda: '__version__ = "0.0.1"\n')
    ran("mypy's version")
    import vime

    monkeypatch.setattr(vime, "__version__", "9.9.9")
    ran("vime's version")
    monkeypatch.setattr(result_cache, "_CODE", "another linter")
    ran("the linter's code")
    hook_api.write_text("x = 2\n")
    ran("a file of vime's hook API")


def test_no_cache_bypasses_it(repo: Path, types_cache: Path, mypy_runs: list[int],
                              capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    (repo / "rm.py").write_text(BAD + "# only in this test\n")
    entries = set((types_cache / "vime-lint-results").rglob("*.json"))
    first = _types(capsys, types_cache, "rm.py", "--no-cache")
    second = _types(capsys, types_cache, "rm.py", "--no-cache")
    assert first == second and first[0] == 1 and len(mypy_runs) == 2
    assert set((types_cache / "vime-lint-results").rglob("*.json")) == entries  # none written
    _types(capsys, types_cache, "rm.py")
    assert _types(capsys, types_cache, "rm.py", "--no-cache") == first and len(mypy_runs) == 4


def test_a_project_folder_that_cannot_be_written(
        repo: Path, mypy_runs: list[int], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The project's cache folder cannot be created (a file in its place, as a read-only
    checkout refuses it, whoever runs the test): the caches go to the user's cache folder;
    when that cannot be written either, mypy runs without a cache and the result cache is off,
    with no error."""
    _project(repo)
    (repo / ".vime_lint_cache").write_text("not a folder")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    first = _types(capsys, None, "rm.py")
    assert first[0] == 1 and "mypy's cache is in" in first[2]
    assert _types(capsys, None, "rm.py") == first and len(mypy_runs) == 1
    assert list(home.rglob("vime-lint-results/*/*.json"))
    blocked = home / "file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    code, out, err = _types(capsys, None, "rm.py")
    assert (code, out) == first[:2] and "mypy runs without a cache" in err
    assert _types(capsys, None, "rm.py")[:2] == first[:2] and len(mypy_runs) == 3


def test_a_result_folder_that_cannot_be_written_is_skipped(
        repo: Path, tmp_path_factory: pytest.TempPathFactory, mypy_runs: list[int],
        capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    cache = tmp_path_factory.mktemp("mypy-cache")
    (cache / "vime-lint-results").write_text("not a folder")
    first = _types(capsys, cache, "rm.py")
    assert first[0] == 1 and first[2] == ""
    assert _types(capsys, cache, "rm.py") == first and len(mypy_runs) == 2


def test_corrupt_or_foreign_entries_are_misses(repo: Path, types_cache: Path,
                                               mypy_runs: list[int],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _project(repo)
    first = _types(capsys, types_cache, "rm.py")
    newest = max((types_cache / "vime-lint-results").rglob("*.json"),
                 key=lambda p: p.stat().st_mtime_ns)
    entry = json.loads(newest.read_text())
    for bad in ("{", json.dumps({**entry, "key": "0" * 64}),
                json.dumps({**entry, "status": 2}), json.dumps({**entry, "stdout": 3})):
        newest.write_text(bad)
        runs = len(mypy_runs)
        assert _types(capsys, types_cache, "rm.py") == first and len(mypy_runs) == runs + 1


def test_hook_api_files_are_vimes_hook_facing_modules() -> None:
    import vime

    files = {p for p in result_cache.hook_api_files() if p.is_file()}
    base = Path(vime.__file__).resolve().parent
    assert base / "utils" / "types.py" in {p.resolve() for p in files}
    assert any(p.resolve().is_relative_to(base / "rollout" / "vllm_rollout") or
               p.resolve() == base / "rollout" / "vllm_rollout.py" for p in files)
    assert any(p.suffix == ".pyi" and p.parent.name == "torch" for p in files)


def test_user_dependencies_follow_imports_through_the_project(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from . import b\nimport numpy\nimport vime.utils\n")
    (tmp_path / "pkg" / "b.py").write_text("from .c import x\n")
    (tmp_path / "pkg" / "c.py").write_text("x = 1\n")
    deps = result_cache.user_dependencies([tmp_path / "pkg" / "a.py"], [tmp_path],
                                          skipped=("numpy",))
    present = {Path(p).name for p, d in deps.items() if d is not None}
    assert present == {"__init__.py", "b.py", "c.py"}
    assert str(tmp_path / "pkg" / "c.pyi") in deps  # a stub added later is seen
    assert not any("numpy" in p or "vime" in p for p in deps)


def test_a_warm_run_imports_neither_mypy_nor_libcst(repo: Path, types_cache: Path) -> None:
    _project(repo)
    code = ("import sys\nfrom vime_lint.cli import main\n"
            f"rc = main(['types', 'rm.py', '--cache-dir', {str(types_cache)!r}])\n"
            "print('LOADED', rc, sorted(m for m in ('mypy', 'libcst') if m in sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[3]), os.environ.get("PYTHONPATH", "")])}

    def once() -> tuple[str, str]:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=repo, env=env, check=True)
        lines = done.stdout.splitlines()
        return "\n".join(lines[:-1]), lines[-1]

    cold_out, cold = once()
    warm_out, warm = once()
    assert cold == "LOADED 1 ['libcst', 'mypy']"
    assert warm == "LOADED 1 []" and warm_out == cold_out


def test_a_failed_store_leaves_no_temporary_file(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    cache = result_cache.TypesCache(tmp_path)
    run = result_cache.StoredRun(stdout="ok\n", stderr="", status=0)
    key = "c" * 64
    monkeypatch.setattr(os, "replace", full)
    cache.put(key, run, {})                     # skipped, no error
    monkeypatch.undo()
    assert list(cache.dir.iterdir()) == [] and cache.stores == 0
    cache.put(key, run, {})                     # the next run stores it
    assert cache.stores == 1 and [p.name for p in cache.dir.iterdir()] == [f"{key}.json"]
