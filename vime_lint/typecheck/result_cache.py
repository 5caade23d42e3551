"""The result cache of ``vime-lint types``: a run with nothing changed answers from disk.

A warm run of an unchanged project needs neither mypy nor LibCST: the key of a run is computed
with the standard library and vime-lint's light modules (``_config``, ``_files``,
``_discovery``), and on a hit the stored output and exit status are printed as the uncached
run printed them. One entry per run (not per file, as ``vime-lint rollout``'s
:mod:`vime_lint.static._cache` has): a module's types depend on the modules it imports, so a
file's findings cannot be reused on their own.

The key (:meth:`TypesCache.key`) is a SHA-256 of:

- every Python file the run collected: its reported name, resolved path and content hash;
- the files mypy reads from vime's hook API (``vime.contract.HOOK_API_MODULES`` and their
  packages, ``.py`` and ``.pyi``) and vime-lint's own stubs, by content;
- the configuration and launch facts that change types or output: the resolved
  ``[tool.vime_lint]`` settings, the selection and excludes, the hook targets the launch
  scripts and configs name, each launch file's content and ``--flags``, the size and mtime of
  the ``--prompt-data`` file it names (:mod:`vime_lint.typecheck.launch_data`), the files the
  targets bind to, the output options, the working folder (reported names are relative to it);
- mypy's version (its ``mypy/version.py``), vime's and vime-lint's versions, Python's version
  and executable, the modification times of the interpreter's ``site-packages`` folders (a
  package installed, upgraded or removed changes them), and the code fingerprint of the
  linter (path, size and mtime of each file of ``vime_lint/static``, ``vime_lint/typecheck``
  and ``vime/contract``, and of ``vime/utils/data.py``).

An entry also lists the user modules the checked files import, found by following their
``import`` statements through the project root (and ``src/``) and the files' folders, as mypy
follows them (:func:`user_dependencies`): each with its content hash, or absent. A hit needs
every one of them unchanged (an edited helper, or a new module that an import would now find,
is a miss). Not covered: a third-party package edited in place without any change to its
``site-packages`` folder, and the user's own package when it lies outside the project and
is installed in editable mode (mypy finds it through a ``.pth`` file); ``--no-cache``
answers for those cases.

Only runs that end in 0 or 1 are stored (a mypy failure or an unreadable file is run again).
Entries are JSON data, never code; a corrupt, foreign or mismatched entry is a miss. They live
in ``<mypy cache folder>/vime-lint-results/<vime-lint version>/`` (the project's
``.vime_lint_cache/mypy`` by default, the user's cache folder when the project cannot be
written); a cache that cannot be written is skipped without an error. At most
:data:`MAX_ENTRIES` are kept (the oldest are removed).

Usage::

    cache = TypesCache(cache_dir)
    key = cache.key(facts)
    hit = cache.get(key)          # StoredRun(stdout, stderr, status) or None
    cache.put(key, StoredRun(out, err, 0), dependencies)
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "SCHEMA", "StoredRun", "TypesCache", "code_fingerprint",
           "file_digest", "hook_api_files", "mypy_version", "user_dependencies"]

#: The entry format's name and version.
SCHEMA = "vime-lint-types-result/1"
#: Entries kept per vime-lint version (older ones are removed when a new one is written).
MAX_ENTRIES = 256
#: Entries larger than this are not read.
_MAX_ENTRY = 64 * 1024 * 1024
#: Top-level names whose modules are never user code for mypy here: vime (its hook API is in
#: the key by content, the rest is skipped by mypy) and ``__future__``.
_NOT_USER = frozenset({"vime", "__future__"})


@dataclass(frozen=True, slots=True)
class StoredRun:
    """What one run printed and its exit status."""

    stdout: str
    stderr: str
    status: int


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes, or None when it is absent or unreadable."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def mypy_version() -> str | None:
    """mypy's version text without importing mypy (the text of ``mypy/version.py``, else the
    installed distribution's version), or None when mypy is not installed."""
    if "mypy" in sys.modules and sys.modules["mypy"] is None:  # blocked (tests, -X)
        return None
    try:
        spec = importlib.util.find_spec("mypy")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            return (Path(folder) / "version.py").read_text(encoding="utf-8")
        except OSError:
            continue
    try:
        from importlib.metadata import version

        return version("mypy")
    except Exception:  # noqa: BLE001 - any failure: mypy is not usable
        return None


_CODE: str | None = None


def code_fingerprint() -> str:
    """A digest of the path, size and mtime of each ``.py``/``.pyi`` file of
    ``vime_lint/static``, ``vime_lint/typecheck`` and ``vime/contract``, and of
    ``vime/utils/data.py`` (stat calls only; computed once per process)."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha256()
        here = Path(__file__).resolve().parent
        contract = importlib.util.find_spec("vime.contract")
        roots = [here, here.parent / "static"]
        if contract is not None and contract.submodule_search_locations:
            roots += [Path(p) for p in contract.submodule_search_locations]
        files = [p for root in roots
                 for p in sorted([*root.rglob("*.py"), *root.rglob("*.pyi")])]
        if contract is not None and contract.submodule_search_locations:
            # the dataset reader the launch-aware prompt type reads with (launch_data)
            files.append(Path(next(iter(contract.submodule_search_locations))).parent
                         / "utils" / "data.py")
        for path in files:
            try:
                st = path.stat()
            except OSError:
                continue
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()
    return _CODE


def _module_candidates(folder: Path, dotted: str) -> list[Path]:
    """The files that could hold ``dotted`` or one of its packages under ``folder``."""
    parts = dotted.split(".")
    out = []
    for i in range(1, len(parts) + 1):
        base = folder.joinpath(*parts[:i])
        out += [base.with_suffix(".py"), base.with_suffix(".pyi"),
                base / "__init__.py", base / "__init__.pyi"]
    return out


def hook_api_files() -> list[Path]:
    """The source files mypy reads from vime (the modules of
    ``vime.contract.HOOK_API_MODULES`` and their packages, found without importing them) and
    vime-lint's stubs; absent candidates included (a stub added later changes the key)."""
    from vime_lint.typecheck.run import STUBS, _hook_api

    spec = importlib.util.find_spec("vime")
    out: list[Path] = sorted(STUBS.rglob("*.pyi"))
    if spec is None or not spec.submodule_search_locations:
        return out
    parent = Path(next(iter(spec.submodule_search_locations))).parent
    for module in _hook_api():
        parts = module.split(".")
        base = parent.joinpath(*parts)
        out += [base.with_suffix(".py"), base.with_suffix(".pyi"),
                base / "__init__.py", base / "__init__.pyi"]
    out.append(parent / "vime" / "py.typed")
    return out


def _imports(path: Path, folders: Sequence[Path]) -> set[str]:
    """The absolute module names a file imports (relative imports resolved against the folder
    it lies in; ``from a import b`` gives ``a`` and ``a.b``)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError):
        return set()
    package: list[str] = []
    for folder in folders:
        try:
            package = list(path.relative_to(folder).with_suffix("").parts[:-1])
            break
        except ValueError:
            continue
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                keep = len(package) - (node.level - 1)
                if keep < 0:
                    continue
                base = ".".join([*package[:keep], *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{a.name}" if base else a.name for a in node.names
                         if a.name != "*")
    return names


def user_dependencies(sources: Iterable[Path], folders: Sequence[Path],
                      skipped: Iterable[str] = ()) -> dict[str, str | None]:
    """The user modules ``sources`` import, transitively: ``{path: sha256 or None}`` for each
    file an import could resolve to under ``folders`` (``None``: absent now), the packages on
    the way included. Modules of ``skipped`` top-level names (what mypy never reads) and vime
    are not followed; nor is anything outside ``folders`` (the standard library and installed
    packages: mypy's version and the ``site-packages`` folders are in the key for them)."""
    stop = _NOT_USER | set(skipped)
    folders = [f.resolve() for f in folders]
    seen: dict[str, str | None] = {}
    todo = [p.resolve() for p in sources]
    done: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in done:
            continue
        done.add(path)
        for name in sorted(_imports(path, folders)):
            if name.split(".")[0] in stop:
                continue
            for folder in folders:
                for cand in _module_candidates(folder, name):
                    key = str(cand)
                    if key in seen:
                        continue
                    digest = file_digest(cand) if cand.is_file() else None
                    seen[key] = digest
                    if digest is not None and cand.suffix == ".py":
                        todo.append(cand)
    return seen


def site_folders() -> list[str]:
    """``path mtime_ns`` of each ``site-packages``/``dist-packages`` folder on ``sys.path``."""
    out = []
    for entry in sys.path:
        if not entry or not any(p in ("site-packages", "dist-packages")
                                for p in Path(entry).parts):
            continue
        try:
            out.append(f"{entry} {os.stat(entry).st_mtime_ns}")
        except OSError:
            continue
    return out


class TypesCache:
    """Stored runs of ``vime-lint types``, in ``<folder>/vime-lint-results/<version>/``.

    ``hits``, ``misses`` and ``stores`` count this object's lookups and writes.
    """

    def __init__(self, folder: Path) -> None:
        from vime_lint import __version__

        self.dir = folder / "vime-lint-results" / __version__
        self.hits = 0
        self.misses = 0
        self.stores = 0

    @staticmethod
    def key(facts: Sequence[Any]) -> str:
        """The entry name for a run's facts (JSON-serialisable values, in a fixed order) with
        the versions, the interpreter, the ``site-packages`` folders and the code
        fingerprint."""
        import vime
        from vime_lint import __version__

        parts = [SCHEMA, __version__, getattr(vime, "__version__", ""), sys.version,
                 sys.executable, site_folders(), code_fingerprint(), list(facts)]
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()
                              ).hexdigest()

    def get(self, key: str) -> StoredRun | None:
        """The stored run, or None: missing, unreadable, not an entry of :data:`SCHEMA` under
        ``key``, or a dependency (an imported user module) changed since."""
        try:
            with open(self.dir / f"{key}.json", "rb") as fh:
                data = json.loads(fh.read(_MAX_ENTRY + 1)[:_MAX_ENTRY].decode("utf-8"))
            if not isinstance(data, dict) or data.get("schema") != SCHEMA \
                    or data.get("key") != key:
                raise ValueError("not an entry of this schema and key")
            deps = data["dependencies"]
            if not isinstance(deps, dict):
                raise TypeError("dependencies")
            for path, digest in deps.items():
                if not isinstance(path, str) or not (digest is None or isinstance(digest, str)):
                    raise TypeError("dependency")
                if file_digest(Path(path)) != digest:
                    raise ValueError(f"{path} changed")
            run = StoredRun(data["stdout"], data["stderr"], data["status"])
            if not (isinstance(run.stdout, str) and isinstance(run.stderr, str)
                    and type(run.status) is int and run.status in (0, 1)):
                raise TypeError("run")
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            self.misses += 1
            return None
        self.hits += 1
        return run

    def put(self, key: str, run: StoredRun, dependencies: dict[str, str | None]) -> None:
        """Store ``run`` under ``key`` with its dependencies (atomically; a folder that
        cannot be written is skipped, no error), then keep the newest :data:`MAX_ENTRIES`."""
        text = json.dumps({"schema": SCHEMA, "key": key, "dependencies": dependencies,
                           "stdout": run.stdout, "stderr": run.stderr, "status": run.status},
                          separators=(",", ":"))
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                os.replace(tmp, self.dir / f"{key}.json")
            except OSError:
                os.unlink(tmp)      # a full disk leaves no temporary file behind per run
                raise
            self.stores += 1
            entries = sorted(self.dir.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
            for old in entries[:-MAX_ENTRIES]:
                old.unlink(missing_ok=True)
        except OSError:
            return
