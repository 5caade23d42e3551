"""The lint result cache: ``.vime_lint_cache/rollout/`` under the project root.

One entry per linted file, keyed by a SHA-256 of the file's bytes, the path it is reported as,
the configuration that decides its findings (enabled rule codes, hook bindings, launch flags
and files) and the vime-lint version, as Ruff's cache is, plus the size and modification time
of the linter's own sources (``vime_lint/static`` and ``vime/contract``), so a changed rule in
a development checkout is not answered from an older run. An unchanged file under an unchanged
configuration is not parsed again. ``--no-cache`` turns it off; ``--fix`` runs never use it.
Entries are pickles written by this program for this program (a corrupt or foreign entry is a
miss, never an error).

Usage::

    cache = ResultCache(root / ".vime_lint_cache")
    key = cache.key(data, display, fingerprint)
    result = cache.get(key) or lint(...); cache.put(key, result)
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

import vime.contract
import vime_lint.static
from vime_lint import __version__
from vime_lint.static._model import LintResult

__all__ = ["CACHE_DIR", "ResultCache"]

#: The cache folder, relative to the project root.
CACHE_DIR = ".vime_lint_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# vime-lint's cache (CACHEDIR.TAG)\n"


_CODE: str | None = None


def code_fingerprint() -> str:
    """A digest of the path, size and mtime of each ``.py`` file of ``vime_lint/static`` and
    ``vime/contract`` (computed once per process; stat calls only)."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha256()
        for pkg in (vime_lint.static, vime.contract):
            for root in pkg.__path__:
                for path in sorted(Path(root).rglob("*.py")):
                    try:
                        st = path.stat()
                    except OSError:
                        continue
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()
    return _CODE


class ResultCache:
    """Lint results by key, in ``<root>/rollout/<vime-lint version>/``."""

    def __init__(self, root: Path) -> None:
        self.base = root
        self.dir = root / "rollout" / __version__
        self.hits = 0
        self.misses = 0
        self._ready = False

    @staticmethod
    def key(data: bytes, display: str, fingerprint: str) -> str:
        """The entry name for a file's bytes, reported name and configuration fingerprint."""
        h = hashlib.sha256()
        for part in (__version__.encode(), code_fingerprint().encode(), fingerprint.encode(),
                     display.encode(), data):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        return h.hexdigest()

    def get(self, key: str) -> LintResult | None:
        """The cached result, or None (missing, unreadable or not a result)."""
        try:
            with open(self.dir / key[:2] / key, "rb") as fh:
                value = pickle.load(fh)  # noqa: S301 - our own cache folder
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError,
                IndexError, TypeError, ValueError):
            self.misses += 1
            return None
        if not isinstance(value, LintResult):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, result: LintResult) -> None:
        """Store ``result`` (atomically; a cache that cannot be written is skipped)."""
        try:
            self._prepare()
            folder = self.dir / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, folder / key)
        except OSError:
            return

    def _prepare(self) -> None:
        if self._ready:
            return
        self.base.mkdir(parents=True, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "# vime-lint's cache\n*\n")):
            p = self.base / name
            if not p.exists():
                p.write_text(text, encoding="utf-8")
        self._ready = True
