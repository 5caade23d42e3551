"""Run mypy (its Python API, ``mypy.api.run``) on annotated copies of user modules.

Each copy is written to a temporary directory under a stable module name derived from the
user file's path (``_vime_t_<hash>_<stem>.py``), so mypy's incremental cache, kept under the
project's cache folder (``.vime_lint_cache/mypy``), stays valid between runs: an unchanged
module and its dependencies (vime, numpy, torch) are read from the cache.

mypy reads no configuration of the user's (its own file, written next to the copies, sets
``mypy_path``) and runs with ``check_untyped_defs``, ``allow_redefinition_new`` (a name
rebound to another type, ``(sample,) = sample`` over a group, takes the new type, as Python
does), ``follow_imports = silent`` (errors are
reported for the copies only), ``ignore_missing_imports``, and ``follow_imports = skip`` for
the packages of :data:`SKIPPED` (torch, ray, vllm, transformers, ...: ``Any``, never read;
vime-lint's own ``torch`` stub keeps ``Tensor``). ``vime`` resolves to the
package this process imports (an editable checkout is put on ``mypy_path``; an installed
one is found in the interpreter's site-packages), so mypy works on a user file from anywhere.

Usage::

    result = run_mypy({"/repo/rm.py": "<annotated text>"}, cache_dir=Path(".vime_lint_cache"),
                      search_path=[Path("/repo")])
    result.messages[0]      # MypyMessage(path="/repo/rm.py", line=3, col=8, code="union-attr", ...)

mypy's programmatic API: https://mypy.readthedocs.io/en/stable/extending_mypy.html
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MypyMessage", "MypyResult", "copy_module_name", "mypy_search_path", "run_mypy"]

#: ``file:line:col:end_line:end_col: severity: message  [code]`` with ``--show-error-end``.
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+):(?P<end_line>\d+):"
                   r"(?P<end_col>\d+): (?P<severity>error|note|warning): (?P<message>.*?)"
                   r"(?:  \[(?P<code>[a-z0-9-]+)\])?$")


@dataclass(frozen=True, slots=True)
class MypyMessage:
    """One line of mypy's output, mapped back to the user's file."""

    #: The user's file (the key given to :func:`run_mypy`).
    path: str
    #: 1-based line; 0-based columns (mypy prints 1-based columns; converted here).
    line: int
    col: int
    end_line: int
    end_col: int
    severity: str
    message: str
    #: mypy's error code (``"union-attr"``), "" for notes without one.
    code: str


@dataclass(frozen=True, slots=True)
class MypyResult:
    """mypy's messages, its exit status, its stderr and the wall time (seconds)."""

    messages: tuple[MypyMessage, ...]
    status: int
    stderr: str
    seconds: float
    #: Output lines mypy printed that are not messages about a copy (crashes, config errors).
    other: tuple[str, ...] = ()

    @property
    def failure(self) -> str | None:
        """Why mypy did not check the copies, or ``None`` when it did: a crash or bad options
        (exit 2), lines that are no message about a copy, or exit 1 without one error message
        (mypy refused to start: a ``mypy_path`` folder inside site-packages, a missing file;
        its reason is on stderr). A run that checked nothing is never reported as clean."""
        errors = any(m.severity == "error" for m in self.messages)
        if self.status == 0 and not self.other or self.status == 1 and errors and not self.other:
            return None
        return " | ".join(self.other) or self.stderr.strip() or f"mypy exited {self.status}"


def copy_module_name(user_path: str) -> str:
    """The copy's module name: stable for a path, a valid identifier, unique per path."""
    digest = hashlib.sha1(user_path.encode("utf-8")).hexdigest()[:10]
    stem = re.sub(r"\W", "_", Path(user_path).stem) or "module"
    return f"_vime_t_{digest}_{stem}"


#: Packages mypy never reads under ``vime-lint types``: their modules are ``Any`` (mypy's
#: ``follow_imports = skip``). The heavy ones behind vime's imports (torch, ray, vllm,
#: transformers and the rest of the training stack) and large client libraries (the ``openai``
#: SDK, httpx, pydantic, rich) whose types are no part of the contract: reading them made a
#: cold run take a minute. torch keeps the little the contract needs (``Tensor``) through the
#: stub in :data:`STUBS`; packages that ship ``.pyi`` stubs (numpy) are still read. slime and
#: miles (the hook API under another package name, ported code: ``vime-lint rollout`` reports
#: the import, VIM012) are ``Any`` too: their classes are not vime's, and reading them gave only
#: nominal mismatches (miles' ``DynamicFilterOutput`` where vime's is due), no failure.
SKIPPED = ("torch", "ray", "vllm", "transformers", "tokenizers", "sglang", "megatron",
           "deepspeed", "triton", "flash_attn", "xformers", "accelerate", "peft", "datasets",
           "pyarrow", "pandas", "matplotlib", "safetensors", "wandb", "tensorboard", "trackio",
           "gguf", "cv2", "PIL", "rich", "httpx", "httpcore", "anyio", "aiohttp", "fastapi",
           "starlette", "uvicorn", "typeguard", "click", "openai", "anthropic", "pydantic",
           "pydantic_core", "yaml", "requests", "psutil", "slime", "miles")
#: Standard-library modules that only vime's own imports reach (through asyncio and the
#: HTTP client): their typeshed stubs are about a third of a cold run, and no contract type
#: lives in them. A hook that uses them sees them as ``Any``.
STDLIB_SKIPPED = ("ssl", "_ssl", "socket", "_socket", "subprocess", "multiprocessing",
                  "ctypes", "_ctypes", "zipfile", "email", "http", "urllib", "xml", "mmap",
                  "tarfile")
#: Stubs shipped with vime-lint, first on ``mypy_path`` (``torch/__init__.pyi``: ``Tensor``).
STUBS = Path(__file__).resolve().parent / "stubs"


def _hook_api() -> tuple[str, ...]:
    """The vime modules mypy reads (``vime.contract.HOOK_API_MODULES`` and their packages);
    every other vime module is ``Any`` (skipped), so the internals behind them (the Ray
    actors, the runtime checker, the configuration) are never analysed."""
    from vime.contract.hooks import HOOK_API_MODULES

    out: set[str] = set()
    for m in HOOK_API_MODULES:
        parts = m.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return tuple(sorted(out))


def _in_site_packages(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


def stubs_folder(cache_dir: Path, scratch: Path) -> Path:
    """The folder of vime-lint's stubs to put on ``mypy_path``: :data:`STUBS` itself in a
    checkout; in an installed vime-lint (a pre-commit hook's environment) a copy under
    ``cache_dir`` (``scratch`` when there is no cache), since mypy refuses to start with a
    folder inside site-packages on its path ("... is in the MYPYPATH. Please remove it")."""
    if not _in_site_packages(STUBS):
        return STUBS
    target = (scratch if str(cache_dir) == os.devnull else cache_dir) / "stubs"
    for source in STUBS.rglob("*.pyi"):
        copy = target / source.relative_to(STUBS)
        text = source.read_bytes()
        if not copy.is_file() or copy.read_bytes() != text:  # stable path and mtime: mypy's
            copy.parent.mkdir(parents=True, exist_ok=True)   # cache of the stub stays valid
            copy.write_bytes(text)
    return target


def mypy_search_path(extra: Sequence[Path] = (), *, stubs: Path = STUBS) -> list[Path]:
    """Directories for mypy's ``mypy_path``: ``stubs`` (see :func:`stubs_folder`), the folder
    holding the ``vime`` package this process imports (unless it is a site-packages folder,
    which mypy finds by itself and refuses on its path), then ``extra`` (the user's project
    root, the file's folder)."""
    out: list[Path] = [stubs]
    spec = importlib.util.find_spec("vime")
    if spec is not None and spec.origin:
        parent = Path(spec.origin).resolve().parent.parent
        if not _in_site_packages(parent):
            out.append(parent)
    for p in extra:
        p = p.resolve()
        if p not in out and not _in_site_packages(p):
            out.append(p)
    return out


def _config(search_path: Sequence[Path]) -> str:
    joined = ",".join(str(p) for p in search_path)
    return ("[mypy]\n"
            f"mypy_path = {joined}\n"
            "check_untyped_defs = True\n"
            "allow_redefinition_new = True\n"
            "local_partial_types = True\n"
            "follow_imports = silent\n"
            "ignore_missing_imports = True\n"
            "warn_no_return = True\n"
            "show_column_numbers = True\n"
            "show_error_end = True\n"
            "show_error_codes = True\n"
            "pretty = False\n"
            "color_output = False\n"
            "error_summary = False\n"
            f"[mypy-{','.join(p + '.*' for p in (*SKIPPED, 'vime'))}]\n"
            "follow_imports = skip\n"
            f"[mypy-{','.join(_hook_api())}]\n"
            "follow_imports = silent\n"
            f"[mypy-{','.join(p + '.*' for p in STDLIB_SKIPPED)}]\n"
            "follow_imports = skip\n"
            "follow_imports_for_stubs = True\n")


def run_mypy(copies: Mapping[str, str], *, cache_dir: Path,
             search_path: Sequence[Path] = ()) -> MypyResult:
    """Type-check ``copies`` (user path -> annotated text) in one mypy run.

    Args:
        copies: the annotated text of each user file, keyed by the user's path (as reported).
        cache_dir: mypy's incremental cache folder (created if missing).
        search_path: more folders for ``mypy_path`` (see :func:`mypy_search_path`).

    Returns:
        The messages about the copies, keyed back to the user's paths. mypy exits 0 (clean),
        1 (errors, or a refusal to start) or 2 (a crash or bad options); its other output is in
        ``other`` and ``stderr``, and :attr:`MypyResult.failure` says whether it checked.

    Raises:
        ImportError: mypy is not installed (``pip install 'vime[types]'``).
    """
    from mypy import api

    if str(cache_dir) != os.devnull:  # os.devnull: mypy writes no cache
        cache_dir.mkdir(parents=True, exist_ok=True)
    by_copy: dict[str, str] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vime-lint-types-") as tmp:
        folder = Path(tmp)
        files = []
        for user_path, text in copies.items():
            target = folder / f"{copy_module_name(user_path)}.py"
            target.write_text(text, encoding="utf-8")
            by_copy[str(target)] = user_path
            by_copy[target.name] = user_path
            files.append(str(target))
        config = folder / "mypy.ini"
        stubs = stubs_folder(cache_dir, folder)
        config.write_text(_config(mypy_search_path(search_path, stubs=stubs)), encoding="utf-8")
        stdout, stderr, status = api.run(
            ["--config-file", str(config), "--cache-dir", str(cache_dir),
             "--python-executable", sys.executable, *files])
    messages: list[MypyMessage] = []
    other: list[str] = []
    for raw in stdout.splitlines():
        m = _LINE.match(raw)
        user = by_copy.get(m.group("path")) if m else None
        if user is None and m is not None:
            user = by_copy.get(Path(m.group("path")).name)
        if m is None or user is None:
            if raw.strip():
                other.append(raw)
            continue
        messages.append(MypyMessage(
            path=user, line=int(m.group("line")), col=max(0, int(m.group("col")) - 1),
            end_line=int(m.group("end_line")), end_col=max(0, int(m.group("end_col"))),
            severity=m.group("severity"), message=m.group("message"),
            code=m.group("code") or ""))
    return MypyResult(tuple(messages), status, stderr, time.perf_counter() - started,
                      tuple(other))
