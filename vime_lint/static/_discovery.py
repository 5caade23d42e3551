"""Hook discovery from the repository: launch scripts, configs, ``[tool.vime_lint] hooks``.

Order (reported by ``vime-lint rollout --show-hooks``):

a. ``--*-path`` arguments in the repository's shell scripts and YAML/JSON/TOML files
   (``--rollout-function-path pkg.mod.fn`` -> ``pkg/mod.py:fn``; ``rollout_function_path:
   pkg.mod.fn`` in YAML), mapped to hooks with ``vime.contract.hook_for_arg``;
b. ``[tool.vime_lint] hooks`` in ``pyproject.toml``;
c. module-level annotations with a contract Protocol (``x: RolloutFunction = fn``);
d. conventional names (``HookSpec.conventional_names``).

Steps c and d need the module's own text and happen in ``_rule.build_context``.

Usage::

    launch = scan_launch_files(root, exclude)
    bindings = bind_targets(root, launch.targets + config_targets(config))
    bindings[Path("/repo/pkg/mod.py")]       # (HookBinding("fn", spec, "run.sh:3 (...)"),)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from vime.contract import GROUP_RM_SPEC, HOOKS, HookSpec, hook_for_arg
from vime_lint.static._files import is_excluded
from vime_lint.static._model import HookBinding

__all__ = [
    "FORWARDED_ARGS", "LaunchConfig", "Target", "bind_targets", "config_targets",
    "scan_launch_files", "strip_comments",
]

#: Marker in a launch file's flags: the script forwards its own arguments (``"$@"``, ``$*``),
#: so flags missing from the file may still be given on the command line.
FORWARDED_ARGS = "$@"

SCAN_SUFFIXES = frozenset({".sh", ".bash", ".zsh", ".yaml", ".yml", ".json", ".toml"})
MAX_SCAN_BYTES = 512 * 1024
MAX_SCAN_FILES = 5000

_PATH_ARG = re.compile(
    r"(?<![\w-])(?:--)?(?P<name>[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*[-_]path)[\"']?"
    r"(?:[ \t]*\\\r?\n[ \t]*|[ \t]*[:= \t][ \t]*)[\"']?"
    r"(?P<value>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w:-])")
_FLAG = re.compile(r"(?<![\w-])--(?P<name>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
_KEY = re.compile(r"^[ \t-]*[\"']?(?P<name>[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)[\"']?[ \t]*[:=]",
                  re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Target:
    """A dotted path named for a hook, and where it was named."""

    dotted: str
    spec: HookSpec
    source: str
    #: The launch script/config that names it (root-relative), None for ``[tool.vime_lint]``.
    launch: str | None = None


@dataclass(frozen=True, slots=True)
class LaunchConfig:
    """What the launch scripts and configs of a repository say."""

    targets: tuple[Target, ...] = ()
    #: ``--flags`` mentioned (YAML/TOML keys count as ``--key-name``).
    flags: frozenset[str] = frozenset()
    #: Files scanned.
    scanned: int = 0
    #: Launch configurations (files naming at least one hook target, root-relative) -> the
    #: ``--flags`` they set, plus those of the config files they mention by name.
    files: Mapping[str, frozenset[str]] = field(default_factory=dict)


def _walk(root: Path, exclude: Sequence[str]) -> Iterable[Path]:
    count = 0
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not is_excluded(here / d, root, exclude))
        for name in sorted(filenames):
            p = here / name
            if p.suffix in SCAN_SUFFIXES and not is_excluded(p, root, exclude):
                count += 1
                if count > MAX_SCAN_FILES:
                    return
                yield p


#: Suffixes whose ``#`` (at a line's start or after whitespace, outside quotes) starts a comment.
_HASH_COMMENTS = frozenset({".sh", ".bash", ".zsh", ".yaml", ".yml", ".toml"})


def strip_comments(text: str, suffix: str) -> str:
    """``text`` with its ``#`` comments blanked (shell, YAML, TOML; JSON has none), line
    breaks kept so line numbers stay: a ``--group-rm`` or a ``--custom-rm-path x.y`` written in
    a comment is not a launch flag. A ``#`` inside quotes or glued to a word (``$#``,
    ``a#b``) is kept, as the shell and YAML read it."""
    if suffix not in _HASH_COMMENTS or "#" not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "#" not in line:
            continue
        quote = ""
        for j, ch in enumerate(line):
            if quote:
                if ch == quote and (quote == "'" or line[j - 1] != "\\"):
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "#" and (j == 0 or line[j - 1] in " \t"):
                lines[i] = line[:j]
                break
    return "\n".join(lines)


#: ``group-rm: true`` / ``group_rm = true`` (YAML, TOML, JSON keys; ``--group-rm`` is a flag).
_GROUP_RM_TRUE = re.compile(r"(?<![\w-])[\"']?group[_-]rm[\"']?[ \t]*[:=][ \t]*[\"']?[Tt]rue\b")


def _file_flags(text: str) -> frozenset[str]:
    flags = {f"--{m.group('name')}" for m in _FLAG.finditer(text)}
    keys = {"--" + m.group("name").replace("_", "-") for m in _KEY.finditer(text)}
    if "--group-rm" in keys and "--group-rm" not in flags and not _GROUP_RM_TRUE.search(text):
        keys.discard("--group-rm")  # `group_rm: false` does not set --group-rm
    flags |= keys
    if "$@" in text or "$*" in text or "${@" in text:
        flags.add(FORWARDED_ARGS)
    return frozenset(flags)


def _names_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w.-])", text) is not None


def _mentioned(text: str, launch: str, files: Iterable[str]) -> list[str]:
    """The scanned files (root-relative) that the launch file ``launch``'s ``text`` names: by
    their root-relative path, by their path from the launch's folder
    (``--custom-config-path configs/rm.yaml``, ``config: rm.yaml`` beside it), or by their
    file name alone when no other scanned file has that name: a bare ``grpo.yaml`` does not
    pull in the flags of every ``grpo.yaml`` of the tree."""
    folder = launch.rpartition("/")[0]
    by_name: dict[str, list[str]] = {}
    out: list[str] = []
    for rel in files:
        if rel == launch:
            continue
        local = rel[len(folder) + 1:] if folder and rel.startswith(folder + "/") else (
            rel if not folder else "")
        if _names_word(text, rel) or (local and _names_word(text, local)):
            out.append(rel)
        else:
            by_name.setdefault(rel.rpartition("/")[2], []).append(rel)
    named = {rel.rpartition("/")[2] for rel in out}
    for name, rels in by_name.items():
        if len(rels) == 1 and name not in named and _names_word(text, name):
            out.append(rels[0])
    return out


def scan_launch_files(root: Path, exclude: Sequence[str]) -> LaunchConfig:
    """Read ``--*-path`` hook targets and ``--flags`` from the repository's scripts/configs.

    A file naming at least one hook target is a launch configuration: its flags (with those of
    the scanned config files it names, e.g. a YAML given to ``--custom-config-path``) are kept
    per file in :attr:`LaunchConfig.files`, for the configuration-aware rules (VIM019).

    A ``--custom-rm-path`` target is a group reward (``GROUP_RM_SPEC``) only when its own
    launch file, or a config file that launch names, sets ``--group-rm``: a ``group-rm: true``
    elsewhere in the repository says nothing about the rewards it does not name.
    """
    targets: list[Target] = []
    flags: set[str] = set()
    scanned = 0
    rm_targets: list[Target] = []
    file_flags: dict[str, frozenset[str]] = {}
    launch_texts: dict[str, str] = {}
    for p in _walk(root, exclude):
        try:
            if p.stat().st_size > MAX_SCAN_BYTES:
                continue
            text = strip_comments(p.read_text(encoding="utf-8", errors="replace"), p.suffix)
        except OSError:
            continue
        scanned += 1
        rel = p.relative_to(root).as_posix()
        here = _file_flags(text)
        file_flags[rel] = here
        flags |= here
        if "path" not in text or p.name == "pyproject.toml":
            continue  # pyproject's [tool.vime_lint] hooks are step b, not a launch config
        for m in _PATH_ARG.finditer(text):
            arg = "--" + m.group("name").replace("_", "-")
            spec = hook_for_arg(arg)
            if spec is None:
                continue
            line = text.count("\n", 0, m.start()) + 1
            t = Target(m.group("value"), spec, f"{rel}:{line} ({arg})", rel)
            launch_texts[rel] = text
            if spec.dest == "custom_rm_path":
                rm_targets.append(t)
            else:
                targets.append(t)
    files: dict[str, frozenset[str]] = {}
    for rel, text in launch_texts.items():
        merged = set(file_flags[rel])
        for other in _mentioned(text, rel, file_flags):
            merged |= file_flags[other]
        files[rel] = frozenset(merged)
    for t in rm_targets:
        group = t.launch is not None and "--group-rm" in files.get(t.launch, frozenset())
        targets.append(replace(t, spec=GROUP_RM_SPEC) if group else t)
    return LaunchConfig(tuple(targets), frozenset(flags), scanned, files)


def config_targets(hooks: Mapping[str, Sequence[str]], source: str) -> list[Target]:
    """Targets from ``[tool.vime_lint] hooks`` (``{dest: [dotted, ...]}``)."""
    return [Target(d, HOOKS[dest], source) for dest, paths in hooks.items() for d in paths]


def module_file(root: Path, dotted_module: str) -> Path | None:
    """``pkg/mod.py`` or ``pkg/mod/__init__.py`` under ``root`` or ``root/src``, else None."""
    parts = dotted_module.split(".")
    for base in (root, root / "src"):
        for cand in (base.joinpath(*parts).with_suffix(".py"),
                     base.joinpath(*parts, "__init__.py")):
            if cand.is_file():
                return cand.resolve()
    return None


def _beside_launch(root: Path, launch: str | None, dotted_module: str) -> Path | None:
    """The module ``dotted_module`` in the folder of the launch file ``launch`` (root-relative)
    or a folder above it, nearest first, below ``root``: launch scripts put their own folder on
    ``PYTHONPATH`` (``PYTHONPATH=$SCRIPT_DIR``, ``cd "$(dirname "$0")"``) and name hooks from
    there (``--custom-rm-path reward.reward_func`` beside ``reward.py``)."""
    if launch is None:
        return None
    parts = dotted_module.split(".")
    folder = (root / launch).parent
    while folder != root and root in folder.parents:
        for cand in (folder.joinpath(*parts).with_suffix(".py"),
                     folder.joinpath(*parts, "__init__.py")):
            if cand.is_file():
                return cand.resolve()
        folder = folder.parent
    return None


def bind_targets(root: Path, targets: Iterable[Target]) -> tuple[
        dict[Path, tuple[HookBinding, ...]], list[Target]]:
    """Map targets to files: ``{resolved file: bindings}`` and the targets with no file. A
    module is looked up under the root (or ``root/src``) first, then beside the launch file
    that names it (see :func:`_beside_launch`)."""
    out: dict[Path, list[HookBinding]] = {}
    missing: list[Target] = []
    for t in targets:
        module, _, name = t.dotted.rpartition(".")
        f = (module_file(root, module) or _beside_launch(root, t.launch, module)
             if module else None)
        if f is None:
            missing.append(t)
            continue
        existing = out.setdefault(f, [])
        launches = (t.launch,) if t.launch is not None else ()
        for i, b in enumerate(existing):
            if b.function == name and b.spec.dest == t.spec.dest:
                if launches and launches[0] not in b.launches:
                    existing[i] = replace(b, launches=b.launches + launches)
                break
        else:
            existing.append(HookBinding(name, t.spec, t.source, explicit=True,
                                        launches=launches))
    return {k: tuple(v) for k, v in out.items()}, missing
