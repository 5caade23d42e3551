"""The lint result cache: ``.vime_lint_cache/rollout/`` under the project root.

One entry per linted file, keyed by a SHA-256 of the file's bytes, the path it is reported as,
the configuration that decides its findings (enabled rule codes, hook bindings, launch flags
and files) and the vime-lint version, as Ruff's cache is, plus the size and modification time
of the linter's own sources (``vime_lint/static`` and ``vime/contract``), so a changed rule in
a development checkout is not answered from an older run. An unchanged file under an unchanged
configuration is not parsed again. ``--no-cache`` turns it off; ``--fix`` runs never use it.

The folder sits inside the linted repository, so anyone who can commit to it can write it: an
entry is JSON data, never code (no pickle). Each entry names its schema (:data:`SCHEMA`), its
own key and the findings, and is validated field by field on reading; an entry that is
corrupt, of another schema or version, or stored under another key is a miss (the file is
linted and the entry rewritten), never executed and never an error.

Usage::

    cache = ResultCache(root / ".vime_lint_cache")
    key = cache.key(data, display, fingerprint)
    result = cache.get(key, source=text) or lint(...); cache.put(key, result)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import vime.contract
import vime_lint.static
from vime_lint import __version__
from vime_lint.static._model import Edit, Finding, LintResult

__all__ = ["CACHE_DIR", "SCHEMA", "ResultCache", "result_from_json", "result_to_json"]

#: The entry format's name and version (a change of the entry layout bumps it).
SCHEMA = "vime-lint-result/1"

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

    def get(self, key: str, source: str = "") -> LintResult | None:
        """The cached result (with ``source`` as its text), or None: missing, unreadable,
        not valid JSON of :data:`SCHEMA`, or stored under another key."""
        try:
            with open(self.dir / key[:2] / key, "rb") as fh:
                data = json.loads(fh.read(_MAX_ENTRY + 1)[:_MAX_ENTRY].decode("utf-8"))
            if not isinstance(data, dict) or data.get("schema") != SCHEMA \
                    or data.get("key") != key:
                raise ValueError("not an entry of this schema and key")
            value = result_from_json(data.get("result"), source)
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, result: LintResult) -> None:
        """Store ``result`` (atomically; a cache that cannot be written is skipped)."""
        text = json.dumps({"schema": SCHEMA, "key": key, "result": result_to_json(result)},
                          separators=(",", ":"))
        try:
            self._prepare()
            folder = self.dir / key[:2]
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(text)
                os.replace(tmp, folder / key)
            except OSError:
                os.unlink(tmp)      # a full disk leaves no empty temporary file per lint
                raise
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


#: Entries larger than this are not read (a result is a few KB; a planted file may be huge).
_MAX_ENTRY = 16 * 1024 * 1024

_FINDING_STR = ("code", "slug", "severity", "message", "path", "fix_hint", "fix_title")
_FINDING_INT = ("line", "col", "end_line", "end_col")
_EDIT_INT = ("line", "col", "end_line", "end_col")


def result_to_json(result: LintResult) -> dict[str, Any]:
    """A cacheable result as JSON data (its source text and fixed text are not stored: the
    cache is only used without ``--fix``, and the source is the file read again)."""
    return {"path": result.path, "findings": [
        {**{k: getattr(f, k) for k in (*_FINDING_STR, *_FINDING_INT)},
         "fix_safe": f.fix_safe,
         "edits": [{"content": e.content, **{k: getattr(e, k) for k in _EDIT_INT}}
                   for e in f.edits]}
        for f in result.findings]}


def _typed(data: Any, key: str, kind: type) -> Any:
    value = data[key]
    if type(value) is not kind:  # exact: True is no int here
        raise TypeError(f"{key}: {type(value).__name__}, expected {kind.__name__}")
    return value


def _edit(data: Any) -> Edit:
    if not isinstance(data, dict):
        raise TypeError("not an edit")
    return Edit(_typed(data, "content", str), *(_typed(data, k, int) for k in _EDIT_INT))


def result_from_json(data: Any, source: str = "") -> LintResult:
    """The :class:`LintResult` of :func:`result_to_json`'s data, every field checked.

    Raises:
        TypeError, KeyError, ValueError: the data is not such a result.
    """
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise TypeError("not a result")
    findings = []
    for f in data["findings"]:
        if not isinstance(f, dict) or not isinstance(f.get("edits"), list):
            raise TypeError("not a finding")
        severity = _typed(f, "severity", str)
        if severity not in ("error", "warning"):
            raise ValueError(f"severity {severity!r}")
        edits = tuple(_edit(e) for e in f["edits"])
        findings.append(Finding(
            code=_typed(f, "code", str), slug=_typed(f, "slug", str), severity=severity,
            message=_typed(f, "message", str), path=_typed(f, "path", str),
            line=_typed(f, "line", int), col=_typed(f, "col", int),
            end_line=_typed(f, "end_line", int), end_col=_typed(f, "end_col", int),
            fix_hint=_typed(f, "fix_hint", str), fix_title=_typed(f, "fix_title", str),
            fix_safe=_typed(f, "fix_safe", bool), edits=edits))
    return LintResult(_typed(data, "path", str), tuple(findings), source=source)
