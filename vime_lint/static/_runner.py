"""Linting a set of paths with a configuration: discovery, selection, files, fixes.

Usage::

    settings = Settings(paths=[Path("src")], select=("VIM",))
    outcome = run(settings)          # RunOutcome(results, problems, hooks, missing)
"""

from __future__ import annotations

import fnmatch
import multiprocessing as mp
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from vime_lint.static._cache import CACHE_DIR, ResultCache
from vime_lint.static._config import Config
from vime_lint.static._discovery import (
    LaunchConfig,
    Target,
    bind_targets,
    config_targets,
    scan_launch_files,
)
from vime_lint.static._engine import decode_source, lint_source, select_rules
from vime_lint.static._files import DEFAULT_EXCLUDE, collect_files, safe_resolve
from vime_lint.static._model import HookBinding, LintOptions, LintResult, ParseFailure
from vime_lint.static._rule import Rule
from vime_lint.static.rules import ALL_RULES

__all__ = ["RunOutcome", "Settings", "UnknownSelector", "check_selectors", "run"]


class UnknownSelector(ValueError):
    """Raised for a ``--select``/``--ignore`` code or prefix that matches no rule."""


@dataclass
class Settings:
    """Everything a lint run needs (command line merged with the configuration file)."""

    paths: list[Path]
    root: Path
    config: Config = field(default_factory=Config)
    select: Sequence[str] = ("VIM",)
    ignore: Sequence[str] = ()
    fix: bool = False
    unsafe_fixes: bool = False
    write: bool = True
    force_exclude: bool = False
    exclude: Sequence[str] = DEFAULT_EXCLUDE
    #: Bytes read from stdin when the path is ``-``, and the name to report.
    stdin: bytes | None = None
    stdin_filename: str | None = None
    #: Reuse results of unchanged files from ``.vime_lint_cache/`` (``--no-cache``: False).
    cache: bool = True
    #: Processes for linting files (None: every core; 1: in this process).
    jobs: int | None = None


@dataclass
class RunOutcome:
    """Results per file, problems finding files, and the hooks discovered."""

    results: list[LintResult]
    problems: list[ParseFailure]
    bindings: dict[Path, tuple[HookBinding, ...]]
    missing: list[Target]
    launch: LaunchConfig
    rules: list[type[Rule]]


def check_selectors(selectors: Sequence[str]) -> None:
    """Raise :class:`UnknownSelector` for a selector that is no rule code or prefix."""
    for s in selectors:
        if not any(c.startswith(s) for r in ALL_RULES for c in r.codes()):
            raise UnknownSelector(f"unknown rule selector `{s}`: no rule code starts with it "
                                  "(see `vime-lint rules`)")


def _display(path: Path) -> str:
    try:
        return safe_resolve(path).relative_to(safe_resolve(Path.cwd())).as_posix()
    except ValueError:
        return path.as_posix()


def _source_text(data: bytes) -> str:
    """The text of a file's bytes for a cached result ("" when it cannot be decoded)."""
    try:
        return decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        return ""


def _rules_for_file(rules: list[type[Rule]], rel: str, config: Config) -> list[type[Rule]]:
    ignored: list[str] = []
    for glob, codes in config.per_file_ignores.items():
        if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(Path(rel).name, glob):
            ignored += codes
    if not ignored:
        return rules
    return [r for r in rules if not any(r.code().startswith(c) for c in ignored)]


#: Fewer files than this are linted in this process (starting workers costs more).
PARALLEL_MIN_FILES = 24


@dataclass
class _Job:
    """One file to lint and everything that decides its findings."""

    data: bytes
    display: str
    options: LintOptions
    rules: list[type[Rule]]
    fix: bool
    unsafe_fixes: bool

    def run(self) -> LintResult:
        return lint_source(self.data, self.display, self.options, rules=self.rules,
                           fix=self.fix, unsafe_fixes=self.unsafe_fixes)

    def fingerprint(self) -> str:
        """The configuration part of the cache key: rules, hook bindings, launch facts."""
        o = self.options
        hooks = sorted((b.function, b.spec.dest, b.spec.params, b.source, b.explicit,
                        b.launches) for b in o.hooks)
        launch = sorted((k, sorted(v)) for k, v in o.launch_files.items())
        return repr((sorted(f"{r.__module__}.{r.__qualname__}" for r in self.rules), hooks,
                     sorted(o.launch_flags), o.launch_found, launch, self.fix,
                     self.unsafe_fixes))


#: The jobs a forked worker reads (inherited from the parent, never pickled).
_WORK: list[_Job] = []


def _run_job(i: int) -> LintResult:
    return _WORK[i].run()


def _lint_all(jobs: list[_Job], processes: int | None) -> list[LintResult]:
    """Lint ``jobs`` in order: in parallel worker processes (fork, one per core) when there
    are enough of them and the platform forks, else in this process (when the workers cannot
    start or die, in this process too, with a note on stderr)."""
    n = processes if processes is not None else (os.cpu_count() or 1)
    n = min(n, max(1, len(jobs) // 8))
    if n <= 1 or len(jobs) < PARALLEL_MIN_FILES or "fork" not in mp.get_all_start_methods():
        return [j.run() for j in jobs]
    global _WORK
    _WORK = jobs
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("fork")) as pool:
            return list(pool.map(_run_job, range(len(jobs)),
                                 chunksize=max(1, len(jobs) // (n * 4))))
    except (OSError, BrokenProcessPool) as exc:
        # said, not silent: the results are the same, only slower
        print(f"vime-lint: note: parallel linting failed ({type(exc).__name__}: {exc}); "
              f"linting the {len(jobs)} files in this process", file=sys.stderr)
        return [j.run() for j in jobs]
    finally:
        _WORK = []


def run(settings: Settings) -> RunOutcome:
    """Lint ``settings.paths``; write fixes back when ``fix`` and ``write`` are set.

    Raises:
        UnknownSelector: a select/ignore entry matches no rule.
    """
    check_selectors([*settings.select, *settings.ignore])
    rules = select_rules(ALL_RULES, settings.select, settings.ignore)
    launch = scan_launch_files(settings.root, settings.exclude)
    targets = list(launch.targets)
    if settings.config.hooks:
        src = f"{settings.config.path.name if settings.config.path else 'pyproject.toml'} " \
              "[tool.vime_lint] hooks"
        targets += config_targets(settings.config.hooks, src)
    bindings, missing = bind_targets(settings.root, targets)
    base = LintOptions(launch_flags=launch.flags, launch_found=launch.scanned > 0,
                       launch_files=launch.files)
    results: list[LintResult] = []
    problems: list[ParseFailure] = []

    def job_for(data: bytes, display: str, resolved: Path | None) -> _Job:
        hooks = bindings.get(resolved, ()) if resolved is not None else ()
        options = LintOptions(hooks=hooks, launch_flags=base.launch_flags,
                              launch_found=base.launch_found, launch_files=base.launch_files)
        try:
            rel = resolved.relative_to(settings.root).as_posix() if resolved else display
        except ValueError:
            rel = display
        return _Job(data, display, options, _rules_for_file(rules, rel, settings.config),
                    settings.fix, settings.unsafe_fixes)

    if settings.stdin is not None:
        name = settings.stdin_filename or "-"
        resolved = safe_resolve(Path(name)) if settings.stdin_filename else None
        results.append(job_for(settings.stdin, name, resolved).run())
    files, file_problems = collect_files([p for p in settings.paths if str(p) != "-"],
                                         settings.root, exclude=settings.exclude,
                                         force_exclude=settings.force_exclude)
    for p, msg in file_problems:
        problems.append(ParseFailure(_display(p), 0, 0, msg))
    cache = ResultCache(settings.root / CACHE_DIR) if settings.cache and not settings.fix \
        else None
    read: list[tuple[Path, _Job, str]] = []
    for p in files:
        display = _display(p)
        try:
            data = p.read_bytes()
        except OSError as exc:
            problems.append(ParseFailure(display, 0, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        job = job_for(data, display, safe_resolve(p))
        read.append((p, job, cache.key(data, display, job.fingerprint()) if cache else ""))
    done: dict[int, LintResult] = {}
    if cache is not None:
        for i, (_, job, key) in enumerate(read):
            hit = cache.get(key, source=_source_text(job.data))
            if hit is not None:
                done[i] = hit
    todo = [i for i in range(len(read)) if i not in done]
    for i, result in zip(todo, _lint_all([read[i][1] for i in todo], settings.jobs),
                         strict=True):
        done[i] = result
        if cache is not None and result.failure is None and not any(
                f.code == "VIM092" for f in result.findings):  # "too slow" depends on the day
            cache.put(read[i][2], result)
    for i, (p, _, _) in enumerate(read):
        result = done[i]
        results.append(result)
        if result.fixed_source is not None and settings.write and settings.fix:
            try:
                p.write_text(result.fixed_source, encoding="utf-8")
            except OSError as exc:
                problems.append(ParseFailure(result.path, 0, 0,
                                             f"cannot write fixes: {exc.strerror or exc}"))
    problems += [r.failure for r in results if r.failure is not None]
    return RunOutcome(results, problems, bindings, missing, launch, rules)
