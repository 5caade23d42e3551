"""``vime-lint types PATH...``: the hooks of each file, annotated from the contract, run by mypy.

Steps: files and hooks are found as ``vime-lint rollout`` finds them (launch scripts and
configs, ``[tool.vime_lint] hooks``, Protocol annotations, conventional names;
``vime_lint.static._discovery`` and ``_rule.build_context``); each file with hooks is annotated
in memory (:mod:`vime_lint.typecheck.annotate`); one mypy run checks all copies
(:mod:`vime_lint.typecheck.run`); the messages become ``VIM2xx`` findings at the user's lines
(:mod:`vime_lint.typecheck.diagnostics`), filtered by ``# noqa``, ``--select``/``--ignore`` and
``per-file-ignores``, printed in any format of ``vime-lint rollout``. User files are only read.

This module imports the standard library only; LibCST and mypy are imported when the
command runs, so ``import vime_lint`` and ``vime-lint --help`` stay light.

Usage::

    vime-lint types examples/ --output-format json
    vime-lint types rm.py --select VIM200 --cache-dir /tmp/vime-types

Exit codes as ``vime-lint rollout``: 0 clean, 1 findings, 2 usage, configuration, parse or
mypy errors (and mypy not installed).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import TextIO

from vime_lint.options import FORMATS, codes

__all__ = ["CACHE_FOLDER", "add_parser", "mypy_cache_dir", "run_command", "user_cache_dir"]

#: The project's cache folder (at the project root); mypy's cache lives in its ``mypy/``.
CACHE_FOLDER = ".vime_lint_cache"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``types`` subcommand to ``vime-lint``'s subparsers."""
    p = sub.add_parser("types", help="type-check hooks with mypy, given the contract's types "
                                     "(needs mypy: pip install 'vime[types]')")
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                   help="files or directories (default: .)")
    p.add_argument("--select", type=codes, default=None, help="codes or prefixes to enable")
    p.add_argument("--extend-select", type=codes, default=[], help="more codes to enable")
    p.add_argument("--ignore", type=codes, default=[], help="codes or prefixes to disable")
    p.add_argument("--output-format", choices=FORMATS, default="concise")
    p.add_argument("--show-fixes", action=argparse.BooleanOptionalAction, default=True,
                   help="concise output: print each finding's fix on the line after it "
                        "(`help:`); --no-show-fixes prints one line per finding")
    p.add_argument("--statistics", action="store_true", help="counts per code")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    p.add_argument("--exclude", type=lambda s: [x for x in s.split(",") if x], default=None,
                   help="glob patterns replacing the default excludes")
    p.add_argument("--extend-exclude", type=lambda s: [x for x in s.split(",") if x],
                   default=[], help="more glob patterns to exclude")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply excludes to paths given explicitly (pre-commit)")
    p.add_argument("--config", type=Path, default=None,
                   help="a pyproject.toml or TOML file with [tool.vime_lint]")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help=f"mypy's incremental cache (default: <project root>/{CACHE_FOLDER}/mypy; "
                        "in a project folder that cannot be written, the user's cache folder "
                        "~/.cache/vime-lint/mypy/)")


def user_cache_dir(root: Path) -> Path:
    """mypy's cache for a project whose folder cannot be written: under the user's cache
    folder (``$XDG_CACHE_HOME``, else ``~/.cache``), one folder per project path."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return base / "vime-lint" / "mypy" / f"{root.resolve().name}-{digest}"


def mypy_cache_dir(root: Path, given: Path | None, err: TextIO) -> Path:
    """``--cache-dir``, else ``<root>/.vime_lint_cache/mypy``; when the project folder cannot
    be written (a read-only checkout), the user's cache folder (said on ``err``), and when
    that cannot be written either, no cache (``os.devnull``, mypy's own switch)."""
    if given is not None:
        return given
    folder = root / CACHE_FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():  # as Ruff and mypy do for their caches
            ignore.write_text("# Created by vime-lint types.\n*\n", encoding="utf-8")
        (folder / "mypy").mkdir(exist_ok=True)
        return folder / "mypy"
    except OSError as exc:
        why = exc.strerror or str(exc)
    elsewhere = user_cache_dir(root)
    try:
        elsewhere.mkdir(parents=True, exist_ok=True)
    except OSError:
        print(f"vime-lint types: note: cannot write {folder} ({why}) nor {elsewhere}; "
              "mypy runs without a cache (slower)", file=err)
        return Path(os.devnull)
    print(f"vime-lint types: note: cannot write {folder} ({why}); mypy's cache is in "
          f"{elsewhere}", file=err)
    return elsewhere


def run_command(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``vime-lint types`` with parsed arguments; return the exit code."""
    try:
        import mypy.api  # noqa: F401 - checked before any work
    except ImportError:
        print("vime-lint types: mypy is not installed; install it with "
              "`pip install 'vime[types]'` (or `pip install 'mypy>=1.10'`)", file=err)
        return 2
    from vime_lint.static._config import (
        ConfigError,
        find_project_root,
        resolve_config,
        selection,
    )
    from vime_lint.static._files import DEFAULT_EXCLUDE, is_excluded

    paths: list[Path] = ns.paths or [Path(".")]
    root = find_project_root(paths[0] if paths[0].exists() else Path("."))
    try:
        config, root = resolve_config(root, ns.config)
        select, ignore, exclude = selection(config, ns, DEFAULT_EXCLUDE)
    except ConfigError as exc:
        print(f"vime-lint: {exc}", file=err)
        return 2
    from vime_lint.typecheck.check import TypesSettings, UnknownSelector, check_paths

    settings = TypesSettings(paths=paths, root=root, config=config, select=select,
                             ignore=ignore, exclude=exclude, force_exclude=ns.force_exclude,
                             cache_dir=mypy_cache_dir(root, ns.cache_dir, err))
    try:
        outcome = check_paths(settings)
    except UnknownSelector as exc:
        print(f"vime-lint: {exc}", file=err)
        return 2
    if outcome.files == 0 and not outcome.problems and not (
            ns.force_exclude and any(is_excluded(p, root, exclude) for p in paths)):
        print(f"vime-lint: no Python files found under {', '.join(str(p) for p in paths)} "
              "(nothing was checked; check the path and --exclude)", file=err)
        return 2
    from vime_lint.static._output import render, statistics, summary
    from vime_lint.typecheck.codes import types_rules

    for p in outcome.problems:
        loc = f"{p.path}:{p.line}:{p.col}" if p.line else p.path
        print(f"{loc}: error: {p.message}", file=err)
    from vime_lint.static.rules.limits import FileNotLinted

    skipped = any(f.code == FileNotLinted.code() for r in outcome.results for f in r.findings)
    out.write(render(outcome.results, ns.output_format,
                     [*types_rules(), FileNotLinted] if skipped else types_rules(),
                     show_fixes=getattr(ns, "show_fixes", True)))
    if ns.statistics:
        out.write(statistics(outcome.results))
    if ns.output_format in ("concise", "full"):
        out.write(summary(outcome.results, fixed=0, unsafe_fixes=False,
                          problems=len(outcome.problems)))
    if outcome.problems:
        return 2
    if ns.exit_zero:
        return 0
    return 1 if any(r.findings for r in outcome.results) else 0


if __name__ == "__main__":  # pragma: no cover
    from vime_lint.cli import main

    sys.exit(main(["types", *sys.argv[1:]]))
