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


# ---- ResultCache and the entry format on exact values ------------------------------------------


def _finding(**kw: Any) -> Any:
    from vime_lint.static._model import Edit, Finding

    base = dict(code="VIM001", slug="rollout-function-signature", severity="error",
                message="m", path="a.py", line=1, col=2, end_line=3, end_col=4, fix_hint="h",
                fix_title="t", fix_safe=True, edits=(Edit("x", 1, 0, 1, 5),))
    return Finding(**{**base, **kw})


def _result(*findings: Any) -> Any:
    from vime_lint.static._model import LintResult

    return LintResult("a.py", tuple(findings), source="ignored")


def test_the_key_frames_each_part_with_its_length() -> None:
    """sha256 over (version, code fingerprint, configuration, reported name, bytes), each
    preceded by its length as 8 little-endian bytes: no two splits of the same text collide."""
    import hashlib

    from vime_lint.static import _cache

    h = hashlib.sha256()
    for part in (_cache.__version__.encode(), _cache.code_fingerprint().encode(), b"cfg",
                 b"a.py", b"x = 1\n"):
        h.update(len(part).to_bytes(8, "little") + part)
    assert ResultCache.key(b"x = 1\n", "a.py", "cfg") == h.hexdigest()
    assert ResultCache.key(b"", "a.pycfg", "") != ResultCache.key(b"", "a.py", "cfg")


def test_the_code_fingerprint_digests_path_size_and_mtime(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    import hashlib

    import vime.contract
    import vime_lint.static
    from vime_lint.static import _cache

    (tmp_path / "s").mkdir()
    (tmp_path / "c").mkdir()
    files = [tmp_path / "s" / "b.py", tmp_path / "c" / "a.py"]
    for f in files:
        f.write_text("x = 1\n")
    (tmp_path / "s" / "a.py").symlink_to(tmp_path / "gone.py")   # unreadable: left out
    monkeypatch.setattr(vime_lint.static, "__path__", [str(tmp_path / "s")])
    monkeypatch.setattr(vime.contract, "__path__", [str(tmp_path / "c")])
    monkeypatch.setattr(_cache, "_CODE", None)
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    assert _cache.code_fingerprint() == h.hexdigest()
    (tmp_path / "s" / "b.py").write_text("changed\n")
    assert _cache.code_fingerprint() == h.hexdigest()      # computed once per process


def test_entries_are_laid_out_by_version_and_key_prefix(tmp_path: Path) -> None:
    from vime_lint import __version__
    from vime_lint.static import _cache

    cache = ResultCache(tmp_path / CACHE_DIR)
    assert cache.base == tmp_path / CACHE_DIR
    assert cache.dir == tmp_path / CACHE_DIR / "rollout" / __version__
    one, two = "ab" + "1" * 62, "ab" + "2" * 62       # the same two-character folder
    cache.put(one, _result(_finding()))
    cache.put(two, _result())
    folder = tmp_path / CACHE_DIR / "rollout" / __version__ / "ab"
    assert sorted(p.name for p in folder.iterdir()) == [one, two]   # no temporary file left
    assert json.loads((folder / one).read_text()) == {
        "schema": SCHEMA, "key": one, "result": _cache.result_to_json(_result(_finding()))}
    assert (tmp_path / CACHE_DIR / "CACHEDIR.TAG").read_text() == (
        "Signature: 8a477f597d28d172789f06886806bc55\n# vime-lint's cache (CACHEDIR.TAG)\n")
    assert (tmp_path / CACHE_DIR / ".gitignore").read_text() == "# vime-lint's cache\n*\n"
    # files already there are left as they are
    (tmp_path / CACHE_DIR / ".gitignore").write_text("mine\n")
    ResultCache(tmp_path / CACHE_DIR).put("cd" + "3" * 62, _result())
    assert (tmp_path / CACHE_DIR / ".gitignore").read_text() == "mine\n"


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    (tmp_path / CACHE_DIR).write_text("a file where the folder would be")
    cache = ResultCache(tmp_path / CACHE_DIR)
    cache.put("ab" + "1" * 62, _result())          # no error
    assert cache.get("ab" + "1" * 62) is None and cache.misses == 1


def test_hits_and_misses_count_every_lookup_and_the_source_is_the_callers(tmp_path: Path
                                                                          ) -> None:
    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "ef" + "0" * 62
    assert cache.get(key) is None and cache.get(key) is None
    cache.put(key, _result(_finding()))
    first, second = cache.get(key, source="text now"), cache.get(key)
    assert (cache.hits, cache.misses) == (2, 2)
    assert first is not None and second is not None
    assert first.findings == (_finding(),) and first.path == "a.py"
    assert (first.source, second.source) == ("text now", "")


@pytest.mark.parametrize("content", [
    b"\xff\xfe not utf-8",                      # UnicodeDecodeError (a ValueError)
    b"[" * 100_000 + b"]" * 100_000,            # RecursionError while decoding
    b'{"schema": "vime-lint-result/1", "key": "KEY", "result": {"path": "a.py", '
    b'"findings": [{"edits": []}]}}',           # KeyError: a finding without fields
    b'{"schema": "vime-lint-result/1", "key": "KEY", "result": {"path": 1, "findings": []}}',
])
def test_unreadable_entries_are_misses_of_every_kind(tmp_path: Path, content: bytes) -> None:
    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "12" + "3" * 62
    (cache.dir / key[:2]).mkdir(parents=True)
    (cache.dir / key[:2] / key).write_bytes(content.replace(b"KEY", key.encode()))
    assert cache.get(key) is None and (cache.hits, cache.misses) == (0, 1)


def test_entries_over_the_size_limit_are_not_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from vime_lint.static import _cache

    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "45" + "6" * 62
    cache.put(key, _result())
    entry = cache.dir / key[:2] / key
    size = len(entry.read_bytes())
    monkeypatch.setattr(_cache, "_MAX_ENTRY", size)
    assert cache.get(key) is not None                       # exactly the limit: read
    entry.write_bytes(b" " + entry.read_bytes())            # one byte over (still valid JSON)
    assert cache.get(key) is None
    assert json.loads(entry.read_bytes())["key"] == key


def test_a_planted_huge_entry_is_read_no_further_than_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``get`` reads at most ``_MAX_ENTRY + 1`` bytes of an entry, whatever its size (a
    planted file of gigabytes is not read into memory to be cut afterwards)."""
    from vime_lint.static import _cache

    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "78" + "9" * 62
    (cache.dir / key[:2]).mkdir(parents=True)
    (cache.dir / key[:2] / key).write_bytes(b" " * 1000)
    monkeypatch.setattr(_cache, "_MAX_ENTRY", 64)
    read: list[int] = []
    real_open = open

    class Counted:
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> Counted:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def read(self, n: int | None = -1) -> bytes:
            data = self.fh.read(n)
            read.append(len(data))
            return bytes(data)

    monkeypatch.setattr(_cache, "open", lambda *a, **kw: Counted(real_open(*a, **kw)),
                        raising=False)
    assert cache.get(key) is None and (cache.hits, cache.misses) == (0, 1)
    assert read and sum(read) <= 64 + 1


def test_the_cache_folder_is_made_with_its_parents_once_per_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "not" / "made" / "yet" / CACHE_DIR
    cache = ResultCache(root)
    looked: list[Path] = []
    real_exists = Path.exists

    def exists(self: Path, *args: Any, **kwargs: Any) -> bool:
        looked.append(self)
        return real_exists(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", exists)
    keys = ["ab" + "1" * 62, "ab" + "2" * 62, "cd" + "3" * 62]
    for key in keys:
        cache.put(key, _result())
    assert looked.count(root / "CACHEDIR.TAG") == 1     # set up once, not once per file
    assert (root / "CACHEDIR.TAG").is_file() and (root / ".gitignore").is_file()
    assert all(cache.get(key) is not None for key in keys)


def test_entries_are_written_beside_their_name_not_in_the_system_temp_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file is made in the entry's folder: ``os.replace`` from the system's
    temp folder fails where that is another file system (a tmpfs ``/tmp``)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "ab" + "4" * 62
    cache.put(key, _result(_finding()))
    got = cache.get(key)
    assert got is not None and got.findings == (_finding(),)
    assert not (tmp_path / "no-such-folder").exists()


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    cache = ResultCache(tmp_path / CACHE_DIR)
    key = "ab" + "5" * 62
    monkeypatch.setattr(os, "replace", full)
    cache.put(key, _result())                       # skipped, no error
    monkeypatch.undo()
    assert list((cache.dir / key[:2]).iterdir()) == []
    assert cache.get(key) is None
    cache.put(key, _result())                       # the next run writes it
    assert cache.get(key) is not None


def test_result_from_json_checks_every_field() -> None:
    from vime_lint.static._cache import result_from_json, result_to_json
    from vime_lint.static._model import LintResult

    good = result_to_json(_result(_finding()))
    assert good == {"path": "a.py", "findings": [{
        "code": "VIM001", "slug": "rollout-function-signature", "severity": "error",
        "message": "m", "path": "a.py", "fix_hint": "h", "fix_title": "t", "line": 1,
        "col": 2, "end_line": 3, "end_col": 4, "fix_safe": True,
        "edits": [{"content": "x", "line": 1, "col": 0, "end_line": 1, "end_col": 5}]}]}
    back = result_from_json(json.loads(json.dumps(good)), "src")
    assert back == LintResult("a.py", (_finding(),), source="src")
    assert result_from_json(good).source == ""
    warning = {**good, "findings": [{**good["findings"][0], "severity": "warning"}]}
    assert result_from_json(warning).findings[0].severity == "warning"

    def broken(**change: Any) -> dict[str, Any]:
        return {**good, "findings": [{**good["findings"][0], **change}]}

    edit = good["findings"][0]["edits"][0]
    cases = [
        ([], TypeError, "not a result"), ({"findings": None}, TypeError, "not a result"),
        ({"path": "a.py", "findings": [3]}, TypeError, "not a finding"),
        (broken(edits=None), TypeError, "not a finding"),
        (broken(severity="info"), ValueError, "severity 'info'"),
        (broken(line=True), TypeError, "line: bool, expected int"),
        (broken(message=None), TypeError, "message: NoneType, expected str"),
        (broken(fix_safe=1), TypeError, "fix_safe: int, expected bool"),
        (broken(edits=["x"]), TypeError, "not an edit"),
        (broken(edits=[{**edit, "end_col": 1.0}]), TypeError, "end_col: float, expected int"),
        (broken(edits=[{**edit, "content": 0}]), TypeError, "content: int, expected str"),
        ({**good, "path": None}, TypeError, "path: NoneType, expected str"),
    ]
    for data, error, message in cases:
        with pytest.raises(error) as info:
            result_from_json(data)
        assert str(info.value) == message, data


# ---- _runner on exact values: worker counts, selectors, per-file ignores, the cache key ---------


class _Pool:
    """Records how ``_lint_all`` starts its pool; ``map`` runs the work here, in order."""

    made: list[dict[str, Any]] = []

    def __init__(self, max_workers: int | None = None, mp_context: Any = None) -> None:
        self.made.append({"max_workers": max_workers, "mp_context": mp_context})

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[int], Any], items: Any, chunksize: int = 1) -> list[Any]:
        self.made[-1]["chunksize"] = chunksize
        return [fn(i) for i in items]


class _Numbered:
    """A stand-in job whose result is its number."""

    def __init__(self, i: int) -> None:
        self.i = i

    def run(self) -> int:
        return self.i


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(_Pool, "made", made)
    monkeypatch.setattr(_runner, "ProcessPoolExecutor", _Pool)
    return made


@pytest.mark.parametrize("files,jobs,cpus,workers,chunk", [
    (64, None, 4, 4, 4),     # one worker per core; chunks of files // (workers * 4)
    (64, 2, 8, 2, 8),        # --jobs wins over the core count
    (64, 16, 16, 8, 2),      # at most one worker per 8 files
    (30, None, 16, 3, 2),    # 30 // 8: a whole number of workers
    (24, 3, 3, 3, 2),        # PARALLEL_MIN_FILES files are enough for workers
])
def test_parallel_linting_starts_one_forked_worker_per_core_and_8_files(
        monkeypatch: pytest.MonkeyPatch, pool: list[dict[str, Any]], files: int,
        jobs: int | None, cpus: int, workers: int, chunk: int) -> None:
    monkeypatch.setattr(_runner.os, "cpu_count", lambda: cpus)
    out = _runner._lint_all([_Numbered(i) for i in range(files)], jobs)  # type: ignore[list-item]
    assert out == list(range(files))            # every result, in the jobs' order
    assert len(pool) == 1
    assert pool[0]["max_workers"] == workers and type(pool[0]["max_workers"]) is int
    assert pool[0]["chunksize"] == chunk
    assert pool[0]["mp_context"].get_start_method() == "fork"
    assert _runner._WORK == []                  # the jobs (file bytes) are not kept


@pytest.mark.parametrize("files,jobs,cpus,start_methods", [
    (23, 3, 3, ["fork", "spawn"]),    # fewer than PARALLEL_MIN_FILES
    (20, 4, 4, ["fork", "spawn"]),    # 20 // 8 = 2 workers would do, but the files are few
    (64, 1, 8, ["fork", "spawn"]),    # --jobs 1
    (64, None, None, ["fork", "spawn"]),  # os.cpu_count() unknown: one process
    (64, 4, 4, ["spawn"]),            # no fork on this platform
])
def test_few_files_one_job_or_no_fork_lint_in_this_process(
        monkeypatch: pytest.MonkeyPatch, pool: list[dict[str, Any]], files: int,
        jobs: int | None, cpus: int | None, start_methods: list[str]) -> None:
    monkeypatch.setattr(_runner.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(_runner.mp, "get_all_start_methods", lambda: start_methods)
    out = _runner._lint_all([_Numbered(i) for i in range(files)], jobs)  # type: ignore[list-item]
    assert out == list(range(files)) and pool == []


def test_an_unknown_selector_names_itself_and_where_the_codes_are() -> None:
    _runner.check_selectors(["VIM", "VIM00", "VIM001"])  # a prefix or a code: known
    with pytest.raises(_runner.UnknownSelector) as info:
        _runner.check_selectors(["VIM001", "VIMX"])
    assert str(info.value) == ("unknown rule selector `VIMX`: no rule code starts with it "
                               "(see `vime-lint rules`)")


def test_every_per_file_ignore_that_matches_a_file_applies(tmp_path: Path) -> None:
    from vime_lint.static._config import Config

    (tmp_path / "a.py").write_text(BAD)        # VIM001, VIM002 and VIM003
    (tmp_path / "b.py").write_text(BAD)
    config = Config(per_file_ignores={"*.py": ("VIM001",), "a.py": ("VIM002", "VIM003")})
    out = run(_settings(tmp_path, cache=False, config=config))
    codes = {Path(r.path).name: sorted(f.code for f in r.findings) for r in out.results}
    assert codes == {"a.py": [], "b.py": ["VIM002", "VIM003"]}


def test_undecodable_bytes_have_no_source_text() -> None:
    assert _runner._source_text("x = 'é'\n".encode()) == "x = 'é'\n"
    assert _runner._source_text(b"x = '\xff'\n") == ""                      # not UTF-8
    assert _runner._source_text(b"# -*- coding: no-such-codec -*-\nx = 1\n") == ""


def test_the_cache_key_covers_the_launch_files_that_name_a_hook() -> None:
    from vime_lint.static._model import LintOptions

    def fingerprint(files: dict[str, frozenset[str]]) -> str:
        options = LintOptions(launch_found=True, launch_files=files)
        return _runner._Job(b"", "a.py", options, [], False, False).fingerprint()

    one = fingerprint({"run.sh": frozenset({"--use-tis"})})
    assert fingerprint({"run.sh": frozenset({"--use-tis"})}) == one
    assert fingerprint({"run.sh": frozenset({"--use-tis", "--tis-clip"})}) != one
    assert fingerprint({"other.sh": frozenset({"--use-tis"})}) != one


def test_configured_hooks_that_match_no_file_name_their_configuration_file(
        tmp_path: Path) -> None:
    from vime_lint.static._config import Config

    (tmp_path / "a.py").write_text("x = 1\n")
    hooks = {"custom_rm_path": ("nowhere.score",)}
    out = run(_settings(tmp_path, cache=False, config=Config(hooks=hooks)))
    assert [(t.dotted, t.source) for t in out.missing] == \
        [("nowhere.score", "pyproject.toml [tool.vime_lint] hooks")]
    named = Config(path=tmp_path / "vime_lint.toml", hooks=hooks)
    out = run(_settings(tmp_path, cache=False, config=named))
    assert [t.source for t in out.missing] == ["vime_lint.toml [tool.vime_lint] hooks"]


def _codes_of(out: Any) -> dict[str, list[str]]:
    return {r.path: sorted(f.code for f in r.findings) for r in out.results}


def test_per_file_ignores_match_the_path_below_the_project_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a subfolder, a file is reported relative to the working directory but matched
    against the globs by its path below the project root."""
    from vime_lint.static._config import Config

    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "a.py").write_text(BAD)
    monkeypatch.chdir(tmp_path / "legacy")
    config = Config(per_file_ignores={"legacy/*": ("VIM001",)})
    out = run(Settings(paths=[tmp_path / "legacy"], root=tmp_path, config=config, cache=False))
    assert _codes_of(out) == {"a.py": ["VIM002", "VIM003"]}


def test_stdin_is_matched_by_its_name_with_or_without_a_filename(tmp_path: Path) -> None:
    from vime_lint.static._config import Config

    root = tmp_path / "project"
    root.mkdir()
    config = Config(per_file_ignores={"-": ("VIM003",), "a.py": ("VIM001",)})

    def lint(filename: str | None) -> dict[str, list[str]]:
        return _codes_of(run(Settings(paths=[Path("-")], root=root, config=config, cache=False,
                                      stdin=BAD.encode(), stdin_filename=filename)))

    assert lint(None) == {"-": ["VIM001", "VIM002"]}
    outside = str(tmp_path / "elsewhere" / "a.py")       # not below the root: by its name
    assert lint(outside) == {outside: ["VIM002", "VIM003"]}


def test_stdin_without_a_filename_is_no_file_of_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vime_lint.static._config import Config

    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    config = Config(per_file_ignores={"sub/*": ("VIM001",)})
    out = run(Settings(paths=[Path("-")], root=tmp_path, config=config, cache=False,
                       stdin=BAD.encode()))
    assert _codes_of(out) == {"-": ["VIM001", "VIM002", "VIM003"]}


def test_stdin_with_a_filename_below_the_root_is_that_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--stdin-filename`` names the file the text stands for: its root-relative path meets
    the per-file ignores even when the run starts outside the root."""
    from vime_lint.static._config import Config

    root = tmp_path / "project"
    (root / "legacy").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    name = str(root / "legacy" / "a.py")
    config = Config(per_file_ignores={"legacy/*": ("VIM001",)})
    out = run(Settings(paths=[Path("-")], root=root, config=config, cache=False,
                       stdin=BAD.encode(), stdin_filename=name))
    assert _codes_of(out) == {name: ["VIM002", "VIM003"]}


def test_paths_that_cannot_be_found_or_read_are_problems_at_line_0(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vime_lint.static._model import ParseFailure

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "locked.py").write_text(BAD)
    (tmp_path / "z.py").write_text(BAD)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "locked.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    out = run(Settings(paths=[tmp_path, tmp_path / "gone.py"], root=tmp_path, cache=False))
    assert [r.path for r in out.results] == ["a.py", "z.py"]   # the files after it too
    assert sorted(out.problems, key=lambda p: p.path) == [
        ParseFailure("gone.py", 0, 0, "No such file or directory"),
        ParseFailure("locked.py", 0, 0, "cannot read: Permission denied"),
    ]


def test_the_jobs_setting_reaches_the_parallel_linting(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.py").write_text(BAD)
    seen: list[int | None] = []
    real = _runner._lint_all

    def spy(jobs: list[_runner._Job], processes: int | None) -> list[Any]:
        seen.append(processes)
        return real(jobs, processes)

    monkeypatch.setattr(_runner, "_lint_all", spy)
    run(_settings(tmp_path, cache=False, jobs=3))
    run(_settings(tmp_path, cache=False))
    assert seen == [3, None]


def test_fixes_that_cannot_be_written_are_problems_and_the_others_are_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vime_lint.static._model import ParseFailure

    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "locked.py"):
        (tmp_path / name).write_text(BAD)
    real = Path.write_text

    def write_text(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name == "locked.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    out = run(Settings(paths=[tmp_path], root=tmp_path, fix=True))
    assert "evaluation=False" in (tmp_path / "a.py").read_text()
    assert (tmp_path / "locked.py").read_text() == BAD
    assert out.problems == [ParseFailure("locked.py", 0, 0,
                                         "cannot write fixes: Permission denied")]


def test_a_too_slow_result_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """VIM092 (a file that took too long) depends on the machine and the day: never reused."""
    from vime_lint.static._model import LintResult

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "slow.py").write_text("y = 2\n")

    def lint(jobs: list[_runner._Job], processes: int | None) -> list[LintResult]:
        return [LintResult(j.display, (_finding(code="VIM092", path=j.display),)
                           if j.display == "slow.py" else ()) for j in jobs]

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_runner, "_lint_all", lint)
    run(_settings(tmp_path))
    assert len(_entries(tmp_path)) == 1               # a.py's result only
    linted: list[str] = []

    def again(jobs: list[_runner._Job], processes: int | None) -> list[LintResult]:
        linted.extend(j.display for j in jobs)
        return lint(jobs, processes)

    monkeypatch.setattr(_runner, "_lint_all", again)
    run(_settings(tmp_path))
    assert linted == ["slow.py"]


def test_the_outcome_carries_what_the_launch_scripts_say(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "run.sh").write_text("vime train --use-tis --tis-clip 2\n")
    out = run(_settings(tmp_path, cache=False))
    assert out.launch.scanned == 1
    assert {"--use-tis", "--tis-clip"} <= out.launch.flags


def test_every_file_is_linted_with_the_launch_facts_of_the_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file's options carry the launch flags, the launch files and whether any launch
    script was found at all (config-aware rules stay quiet without one)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "rm.py").write_text("async def reward_func(args, sample, **kw):\n"
                                            "    return 1.0\n")
    seen: list[Any] = []
    real = _runner._lint_all

    def spy(jobs: list[_runner._Job], processes: int | None) -> list[Any]:
        seen.extend(j.options for j in jobs)
        return real(jobs, processes)

    monkeypatch.setattr(_runner, "_lint_all", spy)
    run(_settings(tmp_path, cache=False))
    assert len(seen) == 2 and all(o.launch_found is False and not o.launch_flags
                                  and dict(o.launch_files) == {} for o in seen)
    seen.clear()
    (tmp_path / "run.sh").write_text("vime train --custom-rm-path pkg.rm.reward_func --use-tis\n")
    out = run(_settings(tmp_path, cache=False))
    assert out.launch.scanned == 1 and "run.sh" in out.launch.files
    assert len(seen) == 2
    for options in seen:
        assert options.launch_found is True
        assert options.launch_flags == out.launch.flags and "--use-tis" in options.launch_flags
        assert dict(options.launch_files) == dict(out.launch.files)
