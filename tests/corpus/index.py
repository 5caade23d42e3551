"""The mistake corpus (``tests/corpus/``): its index, and how each case is laid out as a project.

``kinds.toml`` lists every mistake kind: the public threads where it broke someone's training,
the module we wrote that reproduces it (``cases/``), the hook it is bound to, the launch flags
of the case, and which of vime's tools should catch it with which id. A kind may name a correct
near-miss module (``near/``): the same hook written right, on which every tool must stay
silent.

Each case is linted as its own little project (so that one case's launch flags never leak into
another's): ``cases/<module>.py`` plus ``launch/<module>.sh``, a ``vime train`` line naming the
hook (``--custom-rm-path cases.<module>.reward_func``) and the case's flags.

Usage::

    from tests.corpus.index import load_kinds, write_project, lint_rollout
    kinds = load_kinds()
    codes = lint_rollout(kinds[0], near=False)     # {"VIM011": "error"}
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

__all__ = ["CORPUS", "TOOLS", "Kind", "launch_argv", "lint_rollout", "load_kinds",
           "write_project"]

CORPUS = Path(__file__).resolve().parent

#: The tools a kind's ``tool`` may name: the static linter, the type checker, the dry run
#: (``vime-lint check``) and the run-time contract checks of ``vime train`` (B0-B7).
TOOLS = ("rollout", "types", "check", "runtime")

#: Areas a kind belongs to (the README's and docs/mistakes.md's sections).
AREAS = ("rewards", "custom generate", "multi-turn and tools", "agents", "data sources",
         "filters", "buffers", "rollout functions", "evaluation", "trainer hooks")

#: Hook keys beyond ``vime.contract.HOOKS``: a ``--custom-rm-path`` used with ``--group-rm``.
GROUP_RM = "group_rm"


@dataclass(frozen=True)
class Kind:
    """One mistake kind of the corpus (a ``[[kind]]`` table of ``kinds.toml``)."""

    name: str
    title: str
    area: str
    hook: str
    function: str
    module: str
    threads: tuple[str, ...]
    visible: str
    tool: str
    expect: str
    why: str
    launch: str = ""
    caught: bool = True
    miss_why: str = ""
    near: str | None = None
    near_note: str = ""
    #: ``vime-lint check`` on this case and its near-miss (False where the dry run cannot run
    #: the hook: trainer hooks, a hook that would block).
    check: bool = True
    also: tuple[str, ...] = field(default_factory=tuple)

    @property
    def path(self) -> Path:
        """The case module."""
        return CORPUS / "cases" / f"{self.module}.py"

    @property
    def near_path(self) -> Path | None:
        """The near-miss module, if the kind has one."""
        return CORPUS / "near" / f"{self.near}.py" if self.near else None


def load_kinds(path: Path | None = None) -> list[Kind]:
    """Read ``kinds.toml``.

    Raises:
        ValueError: a kind names an unknown tool or area, or a module that does not exist.
    """
    data = tomllib.loads((path or CORPUS / "kinds.toml").read_text(encoding="utf-8"))
    kinds = []
    for raw in data["kind"]:
        raw = dict(raw)
        raw["threads"] = tuple(raw["threads"])
        raw["also"] = tuple(raw.get("also", ()))
        kind = Kind(**raw)
        if kind.tool not in TOOLS:
            raise ValueError(f"{kind.name}: unknown tool {kind.tool!r} (expected {TOOLS})")
        if kind.area not in AREAS:
            raise ValueError(f"{kind.name}: unknown area {kind.area!r} (expected {AREAS})")
        if kind.visible not in ("source", "run time"):
            raise ValueError(f"{kind.name}: visible is 'source' or 'run time'")
        for p in (kind.path, kind.near_path):
            if p is not None and not p.is_file():
                raise ValueError(f"{kind.name}: no module {p}")
        kinds.append(kind)
    return kinds


def _hook_arg(kind: Kind) -> tuple[str, str]:
    """The ``--*-path`` flag that names the hook, and extra flags it needs."""
    if kind.hook == GROUP_RM:
        return "--custom-rm-path", "--group-rm"
    from vime.contract import HOOKS

    return HOOKS[kind.hook].arg, ""


def launch_argv(kind: Kind, module: str) -> list[str]:
    """The ``vime train`` arguments of the case (without ``vime train``), with the hook bound
    to ``cases.<module>.<function>``; ``{module}`` in the case's flags names the same module
    (a second hook of it: ``--rollout-sample-filter-path {module}.keep_all``)."""
    arg, extra = _hook_arg(kind)
    launch = kind.launch.replace("{module}", f"cases.{module}")
    return [arg, f"cases.{module}.{kind.function}", *shlex.split(extra), *shlex.split(launch)]


def write_project(root: Path, kind: Kind, *, near: bool) -> Path:
    """Lay the case (or its near-miss) out under ``root``: ``cases/<module>.py`` and
    ``launch/<module>.sh``. Returns the module's path."""
    src = kind.near_path if near else kind.path
    assert src is not None
    module = src.stem
    (root / "cases").mkdir(parents=True, exist_ok=True)
    (root / "launch").mkdir(parents=True, exist_ok=True)
    (root / "cases" / "__init__.py").write_text("", encoding="utf-8")
    dest = root / "cases" / f"{module}.py"
    dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    argv = " ".join(shlex.quote(a) for a in launch_argv(kind, module))
    (root / "launch" / f"{module}.sh").write_text(f"#!/bin/sh\nvime train {argv}\n",
                                                  encoding="utf-8")
    return dest


def lint_rollout(kind: Kind, *, near: bool) -> dict[str, str]:
    """``vime-lint rollout`` (in process, no cache) on the case or its near-miss, laid out as
    its own project. Returns ``{code: severity}`` of the findings in the module (an error
    wins over a warning of the same code)."""
    from vime_lint.static._runner import Settings, run

    with tempfile.TemporaryDirectory(prefix="vime-corpus-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[tool.vime_lint]\n", encoding="utf-8")
        dest = write_project(root, kind, near=near)
        outcome = run(Settings(paths=[dest], root=root, cache=False, jobs=1))
        found: dict[str, str] = {}
        for result in outcome.results:
            if result.failure is not None:
                raise RuntimeError(f"{kind.name}: {result.failure}")
            for f in result.findings:
                if found.get(f.code) != "error":
                    found[f.code] = f.severity
        return found
