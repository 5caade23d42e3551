"""``vime-lint types PATH...``: the hooks of each file, annotated from the contract, run by mypy.

Steps: files and hooks are found as ``vime-lint rollout`` finds them (launch scripts and
configs, ``[tool.vime_lint] hooks``, Protocol annotations, conventional names;
``vime_lint.static._discovery`` and ``_rule.build_context``); each file with hooks is annotated
in memory (:mod:`vime_lint.typecheck.annotate`); one mypy run checks all copies
(:mod:`vime_lint.typecheck.run`); the messages become ``VIM2xx`` findings at the user's lines
(:mod:`vime_lint.typecheck.diagnostics`), filtered by ``# noqa``, ``--select``/``--ignore`` and
``per-file-ignores``, printed in any format of ``vime-lint rollout``. User files are only read.

This module imports the standard library only; LibCST and mypy are imported when the
command runs and its result cache (:mod:`vime_lint.typecheck.result_cache`) has no answer, so
``import vime_lint``, ``vime-lint --help`` and a run with nothing changed stay light.

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
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from vime_lint.static._config import Config

from vime_lint.options import FORMATS, codes

__all__ = ["CACHE_FOLDER", "add_parser", "mypy_cache_dir", "run_command", "user_cache_dir"]

#: The project's cache folder (at the project root); mypy's cache lives in its ``mypy/``.
CACHE_FOLDER = ".vime_lint_cache"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``types`` subcommand to ``vime-lint``'s subparsers."""
    p = sub.add_parser("types", help="type-check hooks with mypy, given the contract's types "
                                     "(needs mypy: pip install 'vime[types]')",
                       epilog="exit status: 0 no findings (or --exit-zero); 1 findings; 2 bad "
                              "arguments, a configuration error, an unknown --select code, no "
                              "Python file under the paths, or mypy not installed.")
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
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the result cache (a run with nothing changed "
                        "answers from it without starting mypy); mypy's own incremental "
                        "cache is still used")


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
    """Run ``vime-lint types`` with parsed arguments; return the exit code.

    Without ``--no-cache``, a run whose key (:mod:`vime_lint.typecheck.result_cache`) was
    stored answers with the stored output and exit status, importing neither mypy nor LibCST.
    """
    from vime_lint.typecheck.result_cache import mypy_version

    version = mypy_version()
    if version is None:
        print(MYPY_MISSING, file=err)
        return 2
    from vime_lint.static._config import (
        ConfigError,
        find_project_root,
        resolve_config,
        selection,
    )
    from vime_lint.static._files import DEFAULT_EXCLUDE

    paths: list[Path] = ns.paths or [Path(".")]
    root = find_project_root(paths[0] if paths[0].exists() else Path("."))
    try:
        config, root = resolve_config(root, ns.config)
        select, ignore, exclude = selection(config, ns, DEFAULT_EXCLUDE)
    except ConfigError as exc:
        print(f"vime-lint: {exc}", file=err)
        return 2
    cache_dir = mypy_cache_dir(root, ns.cache_dir, err)
    if getattr(ns, "no_cache", False) or str(cache_dir) == os.devnull:
        return _run_uncached(ns, paths, root, config, select, ignore, exclude, cache_dir,
                             out, err)
    from vime_lint.typecheck.result_cache import StoredRun, TypesCache, user_dependencies

    cache = TypesCache(cache_dir)
    files, key = _run_key(ns, paths, root, config, select, ignore, exclude, version)
    stored = cache.get(key)
    if stored is not None:
        out.write(stored.stdout)
        err.write(stored.stderr)
        return stored.status
    import io

    buf_out, buf_err = io.StringIO(), io.StringIO()
    status = _run_uncached(ns, paths, root, config, select, ignore, exclude, cache_dir,
                           buf_out, buf_err)
    out.write(buf_out.getvalue())
    err.write(buf_err.getvalue())
    if status in (0, 1):
        from vime_lint.typecheck.run import SKIPPED, STDLIB_SKIPPED

        folders = [root, root / "src", *dict.fromkeys(f.parent for f in files)]
        cache.put(key, StoredRun(buf_out.getvalue(), buf_err.getvalue(), status),
                  user_dependencies(files, folders, (*SKIPPED, *STDLIB_SKIPPED)))
    return status


#: The message when mypy cannot be imported.
MYPY_MISSING = ("vime-lint types: mypy is not installed; install it with "
                "`pip install 'vime[types]'` (or `pip install 'mypy>=1.10'`)")


def _run_key(ns: argparse.Namespace, paths: list[Path], root: Path, config: Config,
             select: list[str], ignore: list[str], exclude: list[str],
             mypy_version: str) -> tuple[list[Path], str]:
    """The files a run collects (resolved) and the run's result-cache key: their names and
    contents, vime's hook API files, the configuration, the launch facts, the output options
    and mypy's version (:meth:`TypesCache.key` adds the rest)."""
    from vime_lint.static._discovery import bind_targets, config_targets, scan_launch_files
    from vime_lint.static._files import collect_files, safe_resolve
    from vime_lint.typecheck.result_cache import TypesCache, file_digest, hook_api_files

    files, file_problems = collect_files(paths, root, exclude=exclude,
                                         force_exclude=ns.force_exclude)
    resolved = [safe_resolve(p) for p in files]
    launch = scan_launch_files(root, exclude)
    targets = list(launch.targets)
    if config.hooks:
        targets += config_targets(config.hooks, "[tool.vime_lint] hooks")
    bindings, _missing = bind_targets(root, targets)
    facts = [
        mypy_version, str(Path.cwd().resolve()), str(root), repr(config),
        [str(p) for p in paths], select, ignore, exclude, ns.force_exclude,
        ns.output_format, getattr(ns, "show_fixes", True), ns.statistics, ns.exit_zero,
        [[str(p), str(r), file_digest(r)] for p, r in zip(files, resolved, strict=True)],
        [[str(p), m] for p, m in file_problems],
        [[str(p), file_digest(p)] for p in hook_api_files()],
        [[t.dotted, t.spec.dest, list(t.spec.params), t.source, t.launch] for t in targets],
        sorted([rel, sorted(flags), file_digest(root / rel)]
               for rel, flags in launch.files.items()),
        sorted(_data_stat(root, rel) for rel in launch.files),
        sorted([str(f), [[b.function, b.spec.dest, list(b.spec.params), b.source,
                          list(b.launches)] for b in bs]] for f, bs in bindings.items()),
    ]
    return resolved, TypesCache.key(facts)


def _data_stat(root: Path, rel: str) -> list[str | int]:
    """The ``--prompt-data`` file a launch names, with its size and mtime (a dataset that
    changes can change the prompts' type; it is not hashed, it may be large)."""
    from vime_lint.typecheck.launch_data import prompt_data_file

    file = prompt_data_file(root, rel)
    if file is None:
        return [rel, "", -1, -1]
    try:
        st = file.stat()
    except OSError:
        return [rel, str(file), -1, -1]
    return [rel, str(file), st.st_size, st.st_mtime_ns]


def _run_uncached(ns: argparse.Namespace, paths: list[Path], root: Path, config: Config,
                  select: list[str], ignore: list[str], exclude: list[str], cache_dir: Path,
                  out: TextIO, err: TextIO) -> int:
    """The run itself: discovery, annotation, mypy, findings printed; the exit code."""
    try:
        import mypy.api  # noqa: F401 - checked before any work
    except ImportError:
        print(MYPY_MISSING, file=err)
        return 2
    from vime_lint.static._files import is_excluded
    from vime_lint.typecheck.check import TypesSettings, UnknownSelector, check_paths

    settings = TypesSettings(paths=paths, root=root, config=config, select=select,
                             ignore=ignore, exclude=exclude, force_exclude=ns.force_exclude,
                             cache_dir=cache_dir)
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
    from vime_lint.static.rules.file_not_linted import FileNotLinted

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
