"""The result cache (.vime_lint_cache/rollout) and parallel linting of `vime-lint rollout`."""

from __future__ import annotations

from pathlib import Path

import pytest

from vime_lint.static import _runner
from vime_lint.static._cache import CACHE_DIR
from vime_lint.static._runner import Settings, run

pytestmark = pytest.mark.unit

BAD = ("def generate_rollout(args, rollout_id, data_source, evaluation):\n"
       "    return None\n")


def _settings(root: Path, **kw: object) -> Settings:
    return Settings(paths=[root], root=root, **kw)  # type: ignore[arg-type]


def _entries(root: Path) -> list[Path]:
    return [p for p in (root / CACHE_DIR / "rollout").rglob("*") if p.is_file()]


def test_unchanged_files_come_from_the_cache_and_edits_invalidate(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "b.py").write_text("x = 1\n")
    first = run(_settings(tmp_path))
    assert len(_entries(tmp_path)) == 2
    assert (tmp_path / CACHE_DIR / "CACHEDIR.TAG").is_file()
    # The second run reads the entries back and gives the same findings.
    second = run(_settings(tmp_path))
    assert [f.code for r in second.results for f in r.findings] == \
        [f.code for r in first.results for f in r.findings]
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
        p.write_bytes(b"not a pickle")
    out = run(_settings(tmp_path))
    assert any(f.code == "VIM001" for r in out.results for f in r.findings)


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
