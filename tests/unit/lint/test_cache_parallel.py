"""The result cache (.vime_lint_cache/rollout) and parallel linting of `vime-lint rollout`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vime_lint.static import _runner
from vime_lint.static._cache import CACHE_DIR, SCHEMA, ResultCache
from vime_lint.static._runner import Settings, run

pytestmark = pytest.mark.unit

BAD = ("def generate_rollout(args, rollout_id, data_source, evaluation):\n"
       "    return None\n")


def _settings(root: Path, **kw: object) -> Settings:
    return Settings(paths=[root], root=root, **kw)  # type: ignore[arg-type]


def _entries(root: Path) -> list[Path]:
    return [p for p in (root / CACHE_DIR / "rollout").rglob("*") if p.is_file()]


def test_unchanged_files_come_from_the_cache_and_edits_invalidate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "b.py").write_text("x = 1\n")
    first = run(_settings(tmp_path))
    assert len(_entries(tmp_path)) == 2
    assert (tmp_path / CACHE_DIR / "CACHEDIR.TAG").is_file()
    # The second run reads the entries back and gives the same findings.
    real = _runner._Job.run
    _no_lint(monkeypatch)
    second = run(_settings(tmp_path))
    assert [f.code for r in second.results for f in r.findings] == \
        [f.code for r in first.results for f in r.findings]
    monkeypatch.setattr(_runner._Job, "run", real)
    (tmp_path / "a.py").write_text(BAD.replace("evaluation)", "evaluation=False)"))
    third = run(_settings(tmp_path))
    assert all(f.code != "VIM001" for r in third.results for f in r.findings)
    assert len(_entries(tmp_path)) == 3  # a new key for the new content


def test_the_key_covers_configuration(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BAD)
    assert any(r.findings for r in run(_settings(tmp_path)).results)
    # Another selection must not reuse the entry made with every rule.
    out = run(_settings(tmp_path, ignore=("VIM001", "VIM002", "VIM003")))
    assert [f.code for r in out.results for f in r.findings] == []


def test_no_cache_writes_nothing_and_fix_runs_bypass_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BAD)
    run(_settings(tmp_path, cache=False))
    assert not (tmp_path / CACHE_DIR).exists()
    run(_settings(tmp_path, fix=True))
    assert not (tmp_path / CACHE_DIR).exists()
    assert "evaluation=False" in (tmp_path / "a.py").read_text()


def test_corrupt_entries_are_misses(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BAD)
    run(_settings(tmp_path))
    for p in _entries(tmp_path):
        p.write_bytes(b"not json")
    out = run(_settings(tmp_path))
    assert any(f.code == "VIM001" for r in out.results for f in r.findings)


class _Plant:
    """Unpickling this creates a marker file (what a hostile repository would plant)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (_touch, (self.marker, "x"))


def _touch(path: str, mode: str) -> None:
    Path(path).write_text(mode)


def test_a_planted_pickle_is_never_executed_and_the_result_is_right(tmp_path: Path) -> None:
    import pickle

    (tmp_path / "a.py").write_text(BAD)
    clean = run(_settings(tmp_path, cache=False))
    run(_settings(tmp_path))  # writes the entry, so its name is the real key
    marker = tmp_path / "pwned"
    (entry,) = _entries(tmp_path)
    assert pickle.loads(pickle.dumps(_Plant(str(marker)))) is None and marker.exists()
    marker.unlink()  # the payload works when unpickled ...
    entry.write_bytes(pickle.dumps(_Plant(str(marker))))
    out = run(_settings(tmp_path))  # ... and the linter never unpickles it
    assert not marker.exists()
    assert [(r.path, r.findings) for r in out.results] == \
        [(r.path, r.findings) for r in clean.results]
    assert b"pwned" not in entry.read_bytes()  # the entry was rewritten as JSON
    assert json.loads(entry.read_text())["schema"] == SCHEMA


@pytest.mark.parametrize("mutate", [
    lambda d: {**d, "schema": "vime-lint-result/0"},
    lambda d: {**d, "key": "0" * 64},
    lambda d: {**d, "result": {"path": "a.py", "findings": [{"code": 1}]}},
    lambda d: {**d, "result": {"path": "a.py", "findings": "no"}},
    lambda d: [d],
])
def test_foreign_or_mistyped_entries_are_misses_and_rewritten(
        tmp_path: Path, mutate: Callable[[Any], Any]) -> None:
    (tmp_path / "a.py").write_text(BAD)
    run(_settings(tmp_path))
    (entry,) = _entries(tmp_path)
    good = json.loads(entry.read_text())
    forged = {**good, "result": {"path": "a.py", "findings": []}}  # a clean verdict, forged
    entry.write_text(json.dumps(mutate(forged)))
    cache = ResultCache(tmp_path / CACHE_DIR)
    assert cache.get(entry.name) is None and cache.misses == 1
    out = run(_settings(tmp_path))
    assert any(f.code == "VIM001" for r in out.results for f in r.findings)
    assert json.loads(entry.read_text()) == good


def _no_lint(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, linting a file fails the test: every result must come from the cache."""
    def refuse(job: _runner._Job) -> Any:
        raise AssertionError(f"{job} was linted again: its cache entry was not used")

    monkeypatch.setattr(_runner._Job, "run", refuse)


def test_entries_round_trip_every_finding_field(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    src = "def generate_rollout(args, rollout_id, data_buffer, evaluation=False):\n" \
          "    sample.status = 'truncated'\n    return []\n"
    (tmp_path / "a.py").write_text(src)
    (tmp_path / "c.py").write_text(BAD)
    first = run(_settings(tmp_path))
    assert any(f.edits for r in first.results for f in r.findings)  # fixes are cached too
    _no_lint(monkeypatch)
    second = run(_settings(tmp_path))
    assert [(r.path, r.findings, r.source) for r in second.results] == \
        [(r.path, r.findings, r.source) for r in first.results]
    assert [(r.path, r.findings, r.source) for r in second.results] == \
        [(r.path, r.findings, r.source) for r in first.results]


def test_parallel_workers_give_the_serial_results_in_order(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(_runner.PARALLEL_MIN_FILES + 8):
        (tmp_path / f"m{i:02d}.py").write_text(BAD if i % 3 == 0 else f"x = {i}\n")
    serial = run(_settings(tmp_path, cache=False, jobs=1))
    calls: list[int] = []
    real = _runner._lint_all

    def spy(jobs: list[_runner._Job], processes: int | None) -> list[object]:
        calls.append(len(jobs))
        return real(jobs, 2)  # type: ignore[return-value]

    monkeypatch.setattr(_runner, "_lint_all", spy)
    parallel = run(_settings(tmp_path, cache=False))
    assert calls == [len(serial.results)]
    assert [(r.path, r.findings) for r in parallel.results] == \
        [(r.path, r.findings) for r in serial.results]


def test_a_new_vime_lint_version_or_linter_code_is_a_miss(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Results made by another vime-lint (its version, or its rules' code) are never reused:
    a rule fixed in an upgrade must show on files whose bytes did not change."""
    from vime_lint.static import _cache

    (tmp_path / "a.py").write_text(BAD)
    run(_settings(tmp_path))
    first = {p.name for p in _entries(tmp_path)}
    key = ResultCache.key(BAD.encode(), "a.py", "config")
    monkeypatch.setattr(_cache, "_CODE", "another linter's code")   # the rules were edited
    assert ResultCache.key(BAD.encode(), "a.py", "config") != key
    run(_settings(tmp_path))
    second = {p.name for p in _entries(tmp_path)}
    assert len(second - first) == 1          # a new entry: the old one was not served
    monkeypatch.setattr(_cache, "__version__", "999.0")
    other_version = ResultCache.key(BAD.encode(), "a.py", "config")
    monkeypatch.setattr(_cache, "_CODE", None)
    assert other_version != key
    run(_settings(tmp_path))
    assert len({p.name for p in _entries(tmp_path)} - second) == 1


def test_hook_bindings_of_pyproject_are_part_of_the_key(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """A file linted before ``[tool.vime_lint] hooks`` bound one of its functions is linted
    again as that hook once bound (not served from the unbound entry)."""
    from vime_lint.cli import main

    monkeypatch.chdir(tmp_path)
    project = "[project]\nname = 'x'\n[tool.vime_lint.hooks]\n'--custom-rm-path' = 'rm.{}'\n"
    (tmp_path / "pyproject.toml").write_text(project.format("good"))   # the same flags twice
    (tmp_path / "rm.py").write_text("def score(args, sample, extra):\n    return 1.0\n\n\n"
                                    "async def good(args, sample, **kwargs):\n    return 1.0\n")
    assert main(["rollout", "rm.py"]) == 0
    capsys.readouterr()
    (tmp_path / "pyproject.toml").write_text(project.format("score"))
    code = main(["rollout", "rm.py"])
    out = capsys.readouterr().out
    assert code == 1 and "VIM004" in out, out   # the bound reward's signature is checked


def test_parallel_linting_runs_in_worker_processes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough files are linted in forked workers, not silently in this process."""
    import os

    for i in range(_runner.PARALLEL_MIN_FILES + 8):
        (tmp_path / f"m{i:02d}.py").write_text(f"x = {i}\n")
    pids = tmp_path / "pids"
    real = _runner._Job.run

    def recording(job: _runner._Job) -> Any:
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        return real(job)

    monkeypatch.setattr(_runner._Job, "run", recording)
    run(_settings(tmp_path, cache=False, jobs=2))
    seen = pids.read_text().split()
    assert len(seen) == _runner.PARALLEL_MIN_FILES + 8
    assert str(os.getpid()) not in seen, "linted in this process: the workers never ran"


def test_the_code_fingerprint_follows_every_python_file_of_the_linter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited rule (any .py file of vime_lint/static or vime/contract) changes the key."""
    import os

    import vime.contract
    import vime_lint.static
    from vime_lint.static import _cache

    static, contract = tmp_path / "static", tmp_path / "contract"
    for folder in (static, contract / "checks"):
        folder.mkdir(parents=True)
    (static / "rule.py").write_text("x = 1\n")
    (contract / "checks" / "deep.py").write_text("y = 1\n")
    monkeypatch.setattr(vime_lint.static, "__path__", [str(static)])
    monkeypatch.setattr(vime.contract, "__path__", [str(contract)])

    def fingerprint() -> str:
        monkeypatch.setattr(_cache, "_CODE", None)
        return _cache.code_fingerprint()

    first = fingerprint()
    assert fingerprint() == first
    (static / "notes.txt").write_text("not code")            # not a .py file: same code
    assert fingerprint() == first
    (contract / "checks" / "deep.py").write_text("y = 22\n")  # a nested module edited
    second = fingerprint()
    assert second != first
    stamp = (static / "rule.py").stat().st_mtime_ns + 10**9
    os.utime(static / "rule.py", ns=(stamp, stamp))          # touched (same size)
    assert fingerprint() != second


def test_the_cache_folder_is_ignored_by_git_and_counts_hits(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BAD)
    run(_settings(tmp_path))
    assert (tmp_path / CACHE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
    cache = ResultCache(tmp_path / CACHE_DIR)
    assert (cache.hits, cache.misses) == (0, 0)
    entry = _entries(tmp_path)[0]
    assert cache.get(entry.name) is not None and (cache.hits, cache.misses) == (1, 0)


def test_a_failed_worker_pool_is_said_and_the_results_stay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(_runner.PARALLEL_MIN_FILES + 8):
        (tmp_path / f"m{i:02d}.py").write_text(BAD if i % 3 == 0 else f"x = {i}\n")
    serial = run(_settings(tmp_path, cache=False, jobs=1))

    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise OSError("no semaphores here")

    monkeypatch.setattr(_runner, "ProcessPoolExecutor", NoPool)
    out = run(_settings(tmp_path, cache=False, jobs=2))
    assert [(r.path, r.findings) for r in out.results] == \
        [(r.path, r.findings) for r in serial.results]
    assert "parallel linting failed (OSError: no semaphores here)" in capsys.readouterr().err
