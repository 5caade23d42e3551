"""Linting a set of paths with a configuration: discovery, selection, files, fixes.

Usage::

    settings = Settings(paths=[Path("src")], select=("VIM",))
    outcome = run(settings)          # RunOutcome(results, problems, hooks, missing)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vime_lint.static._config import Config
from vime_lint.static._discovery import (
    LaunchConfig,
    Target,
    bind_targets,
    config_targets,
    scan_launch_files,
)
from vime_lint.static._engine import lint_source, select_rules
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


def _rules_for_file(rules: list[type[Rule]], rel: str, config: Config) -> list[type[Rule]]:
    ignored: list[str] = []
    for glob, codes in config.per_file_ignores.items():
        if fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(Path(rel).name, glob):
            ignored += codes
    if not ignored:
        return rules
    return [r for r in rules if not any(r.code().startswith(c) for c in ignored)]


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

    def lint_one(data: bytes, display: str, resolved: Path | None) -> LintResult:
        hooks = bindings.get(resolved, ()) if resolved is not None else ()
        options = LintOptions(hooks=hooks, launch_flags=base.launch_flags,
                              launch_found=base.launch_found, launch_files=base.launch_files)
        try:
            rel = resolved.relative_to(settings.root).as_posix() if resolved else display
        except ValueError:
            rel = display
        return lint_source(data, display, options,
                           rules=_rules_for_file(rules, rel, settings.config),
                           fix=settings.fix, unsafe_fixes=settings.unsafe_fixes)

    if settings.stdin is not None:
        name = settings.stdin_filename or "-"
        resolved = safe_resolve(Path(name)) if settings.stdin_filename else None
        results.append(lint_one(settings.stdin, name, resolved))
    files, file_problems = collect_files([p for p in settings.paths if str(p) != "-"],
                                         settings.root, exclude=settings.exclude,
                                         force_exclude=settings.force_exclude)
    for p, msg in file_problems:
        problems.append(ParseFailure(_display(p), 0, 0, msg))
    for p in files:
        display = _display(p)
        try:
            data = p.read_bytes()
        except OSError as exc:
            problems.append(ParseFailure(display, 0, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        result = lint_one(data, display, safe_resolve(p))
        results.append(result)
        if result.fixed_source is not None and settings.write and settings.fix:
            try:
                p.write_text(result.fixed_source, encoding="utf-8")
            except OSError as exc:
                problems.append(ParseFailure(display, 0, 0,
                                             f"cannot write fixes: {exc.strerror or exc}"))
    problems += [r.failure for r in results if r.failure is not None]
    return RunOutcome(results, problems, bindings, missing, launch, rules)
