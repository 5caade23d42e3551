"""Type-check the hooks under some paths: discovery, annotation, one mypy run, findings.

Usage::

    outcome = check_paths(TypesSettings(paths=[Path("examples")], root=Path("."),
                                        cache_dir=Path(".vime_lint_cache/mypy")))
    outcome.results          # one LintResult per file with hooks (VIM2xx findings)
    outcome.mypy_seconds     # the mypy run's wall time

Hook discovery, file collection, configuration, suppression and per-file-ignores are those of
``vime-lint rollout`` (``vime_lint.static``), imported, not copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from vime.contract import HookSpec
from vime_lint.static._config import Config
from vime_lint.static._model import Finding, HookBinding, LintOptions, LintResult, ParseFailure

if TYPE_CHECKING:
    from vime_lint.typecheck.plan import AnnotationPlan
    from vime_lint.typecheck.seeds import Seeds

__all__ = ["TypesOutcome", "TypesSettings", "UnknownSelector", "check_paths", "check_source"]


class UnknownSelector(ValueError):
    """A ``--select``/``--ignore`` entry that is no code or prefix of any vime-lint rule."""


@dataclass
class TypesSettings:
    """Everything a ``vime-lint types`` run needs (command line merged with the config)."""

    paths: list[Path]
    root: Path
    cache_dir: Path
    config: Config = field(default_factory=Config)
    select: Sequence[str] = ("VIM",)
    ignore: Sequence[str] = ()
    exclude: Sequence[str] | None = None
    force_exclude: bool = False


@dataclass
class TypesOutcome:
    """Results per file that has hooks, problems (unreadable files, mypy failures), timing."""

    results: list[LintResult]
    problems: list[ParseFailure]
    #: Files type-checked (those with at least one hook).
    checked: int = 0
    mypy_seconds: float = 0.0
    #: Python files found under the paths (0: nothing to check, an error for the command).
    files: int = 0


def _display(path: Path) -> str:
    from vime_lint.static._files import safe_resolve

    try:
        return safe_resolve(path).relative_to(safe_resolve(Path.cwd())).as_posix()
    except ValueError:
        return path.as_posix()


def _unsuppressed(findings: list[Finding], source: str) -> list[Finding]:
    """``findings`` less those a ``# noqa: VIM2xx`` on their line (first or last) or a
    file-level ``# vime-lint: noqa: VIM2xx`` names (the comments ``vime-lint rollout`` reads)."""
    from vime_lint.static._suppress import parse_suppressions

    marks = parse_suppressions(source)
    return [f for f in findings if not any(
        f.code in s.vime_codes and (s.file_level or s.line in (f.line, f.end_line))
        for s in marks)]


def _hooks_of(path: str, text: str, bindings: tuple[HookBinding, ...]
              ) -> tuple[dict[str, HookSpec], dict[str, HookBinding]]:
    """Module-level name -> spec, in discovery order (``vime-lint rollout``'s steps a-d), and
    the names bound by a conventional name alone (``HookBinding.loose``)."""
    from vime_lint.static._engine import file_context
    from vime_lint.static._guard import parse_module

    ctx, _ = file_context(path, parse_module(text), LintOptions(hooks=bindings))
    first = {name: bs[0] for name, bs in ctx.hooks.items() if bs}
    return ({name: b.spec for name, b in first.items()},
            {name: b for name, b in first.items() if b.loose})


def _loose_warnings(findings: list[Finding], plan: AnnotationPlan,
                    guessed: Mapping[str, HookBinding]) -> list[Finding]:
    """``findings`` with each error inside a :attr:`~HookBinding.loose` hook (bound by its
    conventional name alone, with parameters the hook does not pass), or in a helper only such
    hooks reach, made a warning that says why: the contract's types were given on a guess."""
    from vime_lint.typecheck.diagnostics import innermost

    if not guessed:
        return findings
    out = []
    for f in findings:
        fn = innermost(plan.functions, f.line)
        roots = (fn.name,) if fn is not None and fn.spec is not None else \
            fn.reached_from if fn is not None else ()
        if f.severity == "error" and roots and all(r in guessed for r in roots):
            f = replace(f, severity="warning",
                        message=f.message + guessed[roots[0]].loose_note())
        out.append(f)
    return out


def launch_types(bindings: Sequence[HookBinding],
                 launch_files: Mapping[str, frozenset[str]],
                 root: Path | None = None) -> dict[str, frozenset[str]]:
    """What the launches naming each hook fix about its samples (kinds of
    ``contract_types.LAUNCH_FIELDS``), read from their flags as ``vime-lint rollout``'s
    configuration-aware rules read them: ``text-prompt`` when every launch sets
    ``--apply-chat-template`` or (with ``root``, the project root the launch paths are
    relative to) gives a ``--prompt-data`` file whose every prompt is a string
    (:func:`vime_lint.typecheck.launch_data.prompts_are_text`); ``scalar-reward`` when none
    sets ``--reward-key`` (nor ``--eval-reward-key``, ``--group-rm``) and none forwards its
    arguments (``"$@"``)."""
    from vime_lint.static._discovery import FORWARDED_ARGS
    from vime_lint.typecheck.launch_data import prompts_are_text

    def text(rel: str, flags: frozenset[str]) -> bool:
        if "--apply-chat-template" in flags:
            return True
        return root is not None and prompts_are_text(root, rel, flags)

    out: dict[str, frozenset[str]] = {}
    for b in bindings:
        flags = [launch_files.get(f) for f in b.launches]
        if not flags or any(f is None for f in flags):
            continue
        known = [f for f in flags if f is not None]
        kinds = set()
        if all(text(rel, launch_files[rel]) for rel in b.launches):
            kinds.add("text-prompt")
        if not any(f & {"--reward-key", "--eval-reward-key", "--group-rm", FORWARDED_ARGS}
                   for f in known):
            kinds.add("scalar-reward")
        out[b.function] = out.get(b.function, frozenset(kinds)) & frozenset(kinds)
    return out


def absolute_imports(text: str, rel: str) -> str:
    """``text`` (the copy of the module at root-relative path ``rel``) with each relative
    ``from .x import y`` made absolute (``from pkg.x import y``), on the same line: the copy is
    a top-level module, where mypy refuses a relative import ("No parent module").

    Where a folder of the path is no Python name (``recipes/tau2-bench/``), the dotted path
    would be a syntax error that stops mypy; a ``from .x import y`` there reads the sibling
    (``from x import y``; the module's folder is on mypy's path) and ``from . import x``
    becomes ``import x``."""
    import ast
    import re

    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    package = rel.removesuffix(".py").replace("/", ".").split(".")
    package = package[:-1] if not rel.endswith("__init__.py") else package[:-1]
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        parts = package[:len(package) - (node.level - 1)] if node.level > 1 else package
        i = node.lineno - 1
        if i >= len(lines):
            continue
        if not all(p.isidentifier() for p in parts):
            if node.level != 1:
                continue
            if node.module:
                base = node.module
            elif node.end_lineno == node.lineno:
                lines[i] = re.sub(r"\bfrom\s+\.\s+import\b", "import", lines[i], count=1)
                continue
            else:
                continue
        else:
            base = ".".join([*parts, *([node.module] if node.module else [])])
        if not base:
            continue
        lines[i] = re.sub(r"\bfrom\s+\.+\s*(?:[\w.]+)?(?=\s+import\b)", f"from {base}",
                          lines[i], count=1)
    return "".join(lines)


def shadows_stdlib(folder: Path) -> bool:
    """Whether ``folder`` holds a module named like one of the standard library's
    (``types.py``, ``logging/__init__.py``): on mypy's search path it would be a top-level
    module that shadows the library's, and mypy stops ("This file shadows library module").
    Such a folder is a package reached from the project root (``from .types import ...``), not
    a root of its own, so it is left off the search path."""
    import sys

    try:
        entries = list(folder.iterdir())
    except OSError:
        return False
    for entry in entries:
        name = entry.stem if entry.suffix in (".py", ".pyi") else (
            entry.name if (entry / "__init__.py").is_file() else "")
        if name in sys.stdlib_module_names:
            return True
    return False


def _seeds(plans: Mapping[str, tuple[str, AnnotationPlan, str]], root: Path
           ) -> dict[Path, Seeds]:
    """The helpers of the user's own modules (files under ``root``) that hooks import and
    call with their samples, per file: ``{file: {helper: ({param: (type, origin)}, hooks)}}``."""
    from vime_lint.static._discovery import module_file
    from vime_lint.typecheck.seeds import imported_calls

    out: dict[Path, dict[str, tuple[dict[int | str, tuple[str, str]], set[str]]]] = {}
    for _display, (text, plan, rel) in plans.items():
        module = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        try:
            calls = imported_calls(text, module, plan)
        except SyntaxError:
            continue
        for mod, name, key, typ, origin, hook in calls:
            target = module_file(root, mod) if mod else None
            if target is None:
                continue  # not the user's own module (vime, a library)
            keys, hooks = out.setdefault(target, {}).setdefault(name, ({}, set()))
            keys.setdefault(key, (typ, origin))
            hooks.add(hook)
    return {t: {h: (keys, frozenset(hooks)) for h, (keys, hooks) in by.items()}
            for t, by in out.items()}


def check_source(text: str, path: str, hooks: dict[str, HookSpec], *, cache_dir: Path,
                 search_path: Sequence[Path] = ()) -> tuple[list[Finding], float]:
    """The VIM2xx findings of one source text with the given hooks (no suppression applied)
    and mypy's wall time; a helper for tests and benchmarks.

    Raises:
        RuntimeError: mypy failed (its output in the message).
    """
    from vime_lint.typecheck.annotate import annotate
    from vime_lint.typecheck.diagnostics import findings_for, wider_annotations
    from vime_lint.typecheck.run import MypyResult, run_mypy

    plan = annotate(text, hooks)
    result = run_mypy({path: plan.text}, cache_dir=cache_dir, search_path=search_path)
    wider = wider_annotations(plan, result.messages)
    if wider:  # the contract's type replaces a user annotation that is wider than it
        plan = annotate(text, hooks, wider=wider)
        again = run_mypy({path: plan.text}, cache_dir=cache_dir, search_path=search_path)
        result = MypyResult(again.messages, again.status, again.stderr,
                            result.seconds + again.seconds, again.other)
    if result.failure is not None:
        raise RuntimeError(f"mypy failed (exit {result.status}): {result.failure}")
    return findings_for(path, text, plan, result.messages), result.seconds


def check_paths(settings: TypesSettings) -> TypesOutcome:
    """Type-check the hooks of every Python file under ``settings.paths``.

    Raises:
        UnknownSelector: a select/ignore entry matches no vime-lint code.
    """
    import libcst as cst

    from vime_lint.static._discovery import bind_targets, config_targets, scan_launch_files
    from vime_lint.static._engine import decode_source, select_rules
    from vime_lint.static._files import DEFAULT_EXCLUDE, collect_files, safe_resolve
    from vime_lint.static._guard import DEFAULT_LIMITS, OverBudget, Skipped, screen, time_budget
    from vime_lint.static._runner import _rules_for_file
    from vime_lint.static.rules import ALL_RULES
    from vime_lint.static.rules.file_not_linted import FileNotLinted
    from vime_lint.typecheck.annotate import annotate
    from vime_lint.typecheck.codes import OFF_BY_DEFAULT, TYPE_RULES, types_rules
    from vime_lint.typecheck.diagnostics import findings_for, wider_annotations
    from vime_lint.typecheck.run import MypyMessage, run_mypy

    known = [r.code() for r in (*ALL_RULES, *TYPE_RULES)]
    for s in [*settings.select, *settings.ignore]:
        if not any(c.startswith(s) for c in known):
            raise UnknownSelector(f"unknown rule selector `{s}`: no rule code starts with it "
                                  "(see `vime-lint rules`)")
    rules = [r for r in select_rules(types_rules(), settings.select, settings.ignore)
             if r.code() not in OFF_BY_DEFAULT
             or any(r.code().startswith(s) and len(s) > len("VIM") for s in settings.select)]
    exclude = settings.exclude if settings.exclude is not None else DEFAULT_EXCLUDE
    launch = scan_launch_files(settings.root, exclude)
    targets = list(launch.targets)
    if settings.config.hooks:
        targets += config_targets(settings.config.hooks, "[tool.vime_lint] hooks")
    bindings, _missing = bind_targets(settings.root, targets)
    files, file_problems = collect_files(settings.paths, settings.root, exclude=exclude,
                                         force_exclude=settings.force_exclude)
    problems = [ParseFailure(_display(p), 0, 0, msg) for p, msg in file_problems]
    plans: dict[str, tuple[str, AnnotationPlan, str]] = {}
    hooks_by_file: dict[str, dict[str, HookSpec]] = {}
    folders: list[Path] = [settings.root]
    seeds_by_display: dict[str, Seeds] = {}
    kinds_by_display: dict[str, dict[str, frozenset[str]]] = {}
    #: per file, the hooks bound by a conventional name alone (their errors are warnings)
    guessed_by_display: dict[str, dict[str, HookBinding]] = {}
    not_linted = select_rules([FileNotLinted], settings.select, settings.ignore)
    skipped: list[LintResult] = []

    def skip(display: str, text: str, why: Skipped) -> None:
        if not_linted:  # as `vime-lint rollout` reports it: VIM092 at line 1
            inv = FileNotLinted.INVARIANT
            skipped.append(LintResult(display, (Finding(
                inv.id, FileNotLinted.slug(), inv.severity,
                why.message().replace("not linted", "not type-checked"), display, 1, 0, 1, 0,
                inv.fix),), source=text))

    for p in files:
        display = _display(p)
        try:
            data = p.read_bytes()
            text = decode_source(data)
        except OSError as exc:
            problems.append(ParseFailure(display, 0, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
            problems.append(ParseFailure(display, 0, 0, f"cannot decode: {exc}"))
            continue
        # The guards of `vime-lint rollout` (size, Python's verdict, depth, time) come first:
        # neither LibCST nor mypy sees a file over a limit.
        verdict = screen(text, len(data), display, DEFAULT_LIMITS)
        if isinstance(verdict, ParseFailure):
            problems.append(verdict)
            continue
        if isinstance(verdict, Skipped):
            skip(display, text, verdict)
            continue
        resolved = safe_resolve(p)
        try:  # one budget for finding the hooks and annotating them (LibCST, twice)
            with time_budget(DEFAULT_LIMITS.seconds):
                hooks, guessed_by_display[display] = _hooks_of(
                    display, text, bindings.get(resolved, ()))
                kinds = launch_types(bindings.get(resolved, ()), launch.files, settings.root)
                plan = annotate(text, hooks, launch_types=kinds) if hooks else None
        except OverBudget:
            skip(display, text, Skipped("too slow", f"finding and annotating its hooks took "
                                                    f"over {DEFAULT_LIMITS.seconds:g} s"))
            continue
        except RecursionError:
            skip(display, text, Skipped("too deeply nested",
                                        "LibCST ran out of recursion depth"))
            continue
        except cst.ParserSyntaxError as exc:
            skip(display, text, Skipped("not parsable by LibCST",
                                        f"line {exc.raw_line}: {exc.message.splitlines()[0]}"))
            continue
        if not hooks or plan is None:
            continue
        try:
            rel = resolved.relative_to(settings.root).as_posix()
        except ValueError:
            rel = display
        plans[display] = (text, plan, rel)
        hooks_by_file[display] = hooks
        kinds_by_display[display] = kinds
        if resolved.parent not in folders and not shadows_stdlib(resolved.parent):
            folders.append(resolved.parent)
    seeds = _seeds(plans, settings.root)
    for target, given in seeds.items():  # helpers that hooks of other modules give samples to
        display = _display(target)
        try:
            text = plans[display][0] if display in plans else decode_source(target.read_bytes())
            if display not in hooks_by_file:
                hooks_by_file[display], guessed_by_display[display] = _hooks_of(
                    display, text, bindings.get(safe_resolve(target), ()))
            hooks = hooks_by_file[display]
            plan = annotate(text, hooks, seeds=given)
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError, RecursionError,
                cst.ParserSyntaxError):
            continue  # as for an unreadable file: reported when it is one of the paths
        try:
            rel = safe_resolve(target).relative_to(settings.root).as_posix()
        except ValueError:
            rel = display
        plans[display] = (text, plan, rel)
        hooks_by_file[display] = hooks
        seeds_by_display[display] = given
        if target.parent not in folders and not shadows_stdlib(target.parent):
            folders.append(target.parent)
    if not plans:
        return TypesOutcome(skipped, problems, files=len(files))
    result = run_mypy({d: absolute_imports(plan.text, r) for d, (_t, plan, r) in plans.items()},
                      cache_dir=settings.cache_dir, search_path=folders)
    if result.failure is not None:
        problems.append(ParseFailure("mypy", 0, 0, f"mypy failed: {result.failure}"))
    by_path: dict[str, list[MypyMessage]] = {}
    for m in result.messages:
        by_path.setdefault(m.path, []).append(m)
    seconds = result.seconds
    # Second pass, only for files whose probes found a user annotation wider than the
    # contract's type: the contract's type replaces it (the user's wins only where narrower).
    redo: dict[str, tuple[str, AnnotationPlan, str]] = {}
    #: VIM203 of the first pass: an annotation that conflicts with the contract is reported,
    #: and the body is checked again with the contract's type (what vime passes).
    conflicts: dict[str, list[Finding]] = {}
    for display, (text, plan, rel) in plans.items():
        first = [f for f in findings_for(display, text, plan, by_path.get(display, []))
                 if f.code == "VIM203"]
        if first:
            conflicts[display] = first
        wider = wider_annotations(plan, by_path.get(display, []))
        if wider:
            redo[display] = (text, annotate(
                text, hooks_by_file[display], wider=wider, seeds=seeds_by_display.get(display),
                launch_types=kinds_by_display.get(display)), rel)
    if redo:
        again = run_mypy({d: absolute_imports(plan.text, r) for d, (_t, plan, r) in redo.items()},
                         cache_dir=settings.cache_dir, search_path=folders)
        if again.failure is not None:
            problems.append(ParseFailure("mypy", 0, 0, f"mypy failed: {again.failure}"))
        plans.update(redo)
        for d in redo:
            by_path[d] = [m for m in again.messages if m.path == d]
        seconds += again.seconds
    results = []
    for display, (text, plan, rel) in plans.items():
        enabled = {r.code() for r in _rules_for_file(list(rules), rel, settings.config)}
        found = _unsuppressed(sorted(_loose_warnings(
            [f for f in [*findings_for(display, text, plan, by_path.get(display, [])),
                         *(f for f in conflicts.get(display, []) if display in redo)]
             if f.code in enabled], plan, guessed_by_display.get(display, {})),
            key=lambda f: (f.line, f.col, f.code)), text)
        results.append(LintResult(display, tuple(found), source=text))
    return TypesOutcome([*skipped, *results], problems, len(plans), seconds, len(files))
