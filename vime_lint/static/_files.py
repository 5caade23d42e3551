"""Finding the Python files to lint: directories walked, excludes applied, loops survived.

Usage::

    files, problems = collect_files([Path("src")], root, exclude=DEFAULT_EXCLUDE)

The default excludes and ``--force-exclude`` follow Ruff.
"""

from __future__ import annotations

import fnmatch
import io
import os
import tokenize
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DEFAULT_EXCLUDE", "collect_files", "decode_source", "is_excluded", "safe_resolve"]


def safe_resolve(path: Path) -> Path:
    """``path.resolve()``, or the absolute path when resolving fails (a symlink loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pants.d", ".pytype",
    ".pytest_cache", ".ruff_cache", ".svn", ".tox", ".venv", "__pycache__", "__pypackages__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)


def is_excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    """True when a component of ``path`` or its root-relative path matches a glob pattern."""
    if not patterns:
        return False
    try:
        rel = safe_resolve(path).relative_to(safe_resolve(root)).as_posix() if path.is_absolute() \
            else path.as_posix()
    except ValueError:
        rel = path.as_posix()
    rel = rel.removeprefix("./")
    parts = rel.split("/")
    for pat in patterns:
        p = pat.rstrip("/").removeprefix("./")
        if "/" in p:
            if fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p + "/*"):
                return True
        elif any(fnmatch.fnmatch(part, p) for part in parts):
            return True
    return False


def collect_files(
    paths: Sequence[Path], root: Path, *, exclude: Sequence[str], force_exclude: bool = False,
) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Python files under ``paths`` (directories walked, symlinked directories once).

    A path given explicitly (a file, or a directory and what is below it) is linted even if
    excluded, unless ``force_exclude``; other exclude patterns still apply inside a given
    directory.

    Returns:
        ``(files, problems)``: files in a stable order without duplicates; ``problems`` are
        ``(path, message)`` for paths that do not exist, cannot be read or loop.
    """
    files: list[Path] = []
    problems: list[tuple[Path, str]] = []
    seen_files: set[Path] = set()
    seen_dirs: set[tuple[int, int]] = set()

    def add(p: Path) -> None:
        key = Path(os.path.abspath(p))
        if key not in seen_files:
            seen_files.add(key)
            files.append(p)

    for given in paths:
        try:
            st = given.stat()
        except OSError as exc:
            problems.append((given, exc.strerror or str(exc)))
            continue
        if not given.is_dir():
            if force_exclude and is_excluded(given, root, exclude):
                continue
            add(given)
            continue
        if force_exclude and is_excluded(given, root, exclude):
            continue
        # An explicitly given directory is linted even if excluded: the patterns that exclude
        # the directory itself do not apply below it (the others still do).
        active = [pat for pat in exclude if not is_excluded(given, root, [pat])]
        seen_dirs.add((st.st_dev, st.st_ino))
        for dirpath, dirnames, filenames in os.walk(given, followlinks=True,
                                                    onerror=lambda e: problems.append(
                                                        (Path(str(e.filename)),
                                                         e.strerror or str(e)))):
            here = Path(dirpath)
            keep = []
            for d in sorted(dirnames):
                sub = here / d
                if is_excluded(sub, root, active):
                    continue
                try:
                    dst = sub.stat()
                except OSError as exc:
                    problems.append((sub, exc.strerror or str(exc)))
                    continue
                if (dst.st_dev, dst.st_ino) in seen_dirs:
                    continue  # a symlink loop or a second link to a walked directory
                seen_dirs.add((dst.st_dev, dst.st_ino))
                keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                p = here / name
                if is_excluded(p, root, active):
                    continue
                if not p.exists():
                    problems.append((p, "broken symbolic link or symlink loop"))
                    continue
                add(p)
    return files, problems


def decode_source(data: bytes) -> str:
    """Decode Python source bytes per PEP 263 (coding cookie, BOM, else UTF-8).

    Raises:
        UnicodeDecodeError, SyntaxError, LookupError: the bytes cannot be decoded.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text
