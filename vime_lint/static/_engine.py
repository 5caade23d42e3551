"""The lint engine: one parse per file, one batched traversal of all enabled rules.

Steps for one source text: decode -> ``libcst.parse_module`` -> scopes
(``LinearScopeProvider``, by :func:`~vime_lint.static.analysis._scopes.resolve_scopes`) -> the
semantic model (:class:`~vime_lint.static.analysis.Semantic`) -> :func:`build_context` (hook
bindings resolved through it) -> the enabled rules that can fire on this file ->
``visit_batched`` -> positions (``PositionProvider``,
resolved only when something was reported) -> noqa suppression -> findings with fix edits.
``--fix`` repeats lint and apply until nothing changes (at most 10 rounds).

The linter never imports or runs the code it lints.

Usage::

    result = lint_source(text, "pkg/rollout.py", LintOptions(), rules=ALL_RULES)
    for f in result.findings:
        print(f.path, f.line, f.col + 1, f.code, f.message)

Built on LibCST's ``MetadataWrapper.visit_batched`` and ``PositionProvider``.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from vime.contract import INVARIANTS
from vime_lint.static._files import decode_source
from vime_lint.static._fix import apply_edits, fix_edits
from vime_lint.static._guard import (
    DEFAULT_LIMITS,
    Limits,
    OverBudget,
    Skipped,
    parse_module,
    screen,
    syntax_failure,
    time_budget,
)
from vime_lint.static._model import Finding, LintOptions, LintResult, ParseFailure
from vime_lint.static._rule import FileContext, Report, Rule, build_context
from vime_lint.static._suppress import Suppression, parse_suppressions
from vime_lint.static._walk import read_only_visits
from vime_lint.static.analysis import Semantic
from vime_lint.static.analysis._scopes import resolve_scopes

__all__ = ["decode_source", "file_context", "lint_source", "select_rules"]

MAX_FIX_ROUNDS = 10


def select_rules(
    rules: Sequence[type[Rule]],
    select: Sequence[str] = ("VIM",),
    ignore: Sequence[str] = (),
) -> list[type[Rule]]:
    """The rules whose code starts with a ``select`` prefix and with no ``ignore`` prefix.

    The longest matching prefix wins, as in Ruff: ``select=["VIM"], ignore=["VIM0"]`` turns off
    VIM0xx, ``select=["VIM001"], ignore=["VIM"]`` keeps VIM001. A rule's old code (its
    alias, ``VIM007`` for VIM032) selects and ignores it too.
    """
    out = []
    for r in rules:
        codes = r.codes()
        best_sel = max((len(p) for p in select for c in codes if c.startswith(p)), default=-1)
        best_ign = max((len(p) for p in ignore for c in codes if c.startswith(p)), default=-1)
        if best_sel >= 0 and best_sel >= best_ign:
            out.append(r)
    return out


def _syntax_error(path: str, text: str) -> ParseFailure | None:
    """Python's own report of a syntax error (position, message, source line), or None when
    Python parses ``text`` (a LibCST limitation, then LibCST's report is used)."""
    import ast

    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        return syntax_failure(path, text, exc)
    except (ValueError, RecursionError, MemoryError):
        return None
    return None


def _failure(path: str, exc: BaseException, text: str = "") -> ParseFailure:
    if isinstance(exc, cst.ParserSyntaxError):
        own = _syntax_error(path, text) if text else None
        if own is not None:
            return own
        lines = text.splitlines()
        src = lines[exc.raw_line - 1] if 0 < exc.raw_line <= len(lines) else ""
        return ParseFailure(path, exc.raw_line, exc.raw_column + 1,
                            f"cannot parse: {exc.message}", src)
    if isinstance(exc, UnicodeDecodeError):
        return ParseFailure(path, 0, 0, f"cannot decode: {exc.reason} at byte {exc.start}; "
                            "save the file as UTF-8 or declare its encoding (PEP 263)")
    if isinstance(exc, RecursionError):
        return ParseFailure(path, 0, 0, "cannot parse: the code is nested too deeply")
    return ParseFailure(path, 0, 0, f"cannot parse: {type(exc).__name__}: {exc}")


def file_context(path: str, module: cst.Module, options: LintOptions
                 ) -> tuple[FileContext, MetadataWrapper]:
    """The semantic model and hook bindings of a parsed module, and the metadata wrapper the
    rules' traversal reuses (scopes resolved once)."""
    with read_only_visits():
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        semantic = Semantic(module, resolve_scopes(wrapper))
        return build_context(path, module, options, semantic), wrapper


def _engine_rule(rules: Sequence[type[Rule]], code: str) -> type[Rule] | None:
    for r in rules:
        if r.code() == code and r.ENGINE_ONLY:
            return r
    return None


def _lint_once(
    text: str, path: str, options: LintOptions, rules: Sequence[type[Rule]],
) -> tuple[list[Finding], ParseFailure | Skipped | None]:
    try:
        module = parse_module(text)
    except RecursionError:
        return [], Skipped("too deeply nested", "LibCST's parser ran out of recursion depth")
    except cst.ParserSyntaxError as exc:
        own = _syntax_error(path, text)
        if own is not None:  # Python rejects it too (a text a fix produced)
            return [], own
        return [], Skipped("not parsable by LibCST",  # Python accepts it: LibCST's limit
                           f"line {exc.raw_line}: {exc.message.splitlines()[0]}")
    except Exception as exc:  # noqa: BLE001 - any parser failure becomes a diagnostic
        return [], _failure(path, exc, text)
    try:
        with read_only_visits():
            context, wrapper = file_context(path, module, options)
            active = [r for r in rules if not r.ENGINE_ONLY and r.applies(context)]
            instances = [r(context) for r in active]
            if instances:
                wrapper.visit_batched(instances)
    except RecursionError:
        return [], Skipped("too deeply nested", "LibCST's visitors ran out of recursion depth")
    reports = [rep for inst in instances for rep in inst.reports]
    suppressions = parse_suppressions(text)
    if not reports and not suppressions:
        return [], None
    positions = wrapper.resolve(PositionProvider) if reports else {}
    findings = []
    for rep in reports:
        rng = positions[rep.node]
        findings.append(_finding(rep, path, rng.start.line, rng.start.column,
                                 rng.end.line, rng.end.column, module, text))
    return _suppress(findings, suppressions, path, rules, context), None


def _finding(rep: Report, path: str, line: int, col: int, end_line: int, end_col: int,
             module: cst.Module, text: str) -> Finding:
    try:
        edits = fix_edits(module, text, rep.fix) if rep.fix is not None else ()
    except Exception:  # noqa: BLE001 - a fix that cannot be built is dropped, never a crash
        edits = ()
    return Finding(
        code=rep.rule.code(), slug=rep.rule.slug(), severity=rep.severity, message=rep.message,
        path=path, line=line, col=col, end_line=end_line, end_col=end_col,
        fix_hint=rep.fix_hint, fix_title=rep.fix.title if (rep.fix and edits) else "",
        fix_safe=rep.fix.safe if rep.fix else True, edits=edits,
    )


def _suppress(findings: list[Finding], suppressions: list[Suppression], path: str,
              rules: Sequence[type[Rule]], context: FileContext) -> list[Finding]:
    if not suppressions:
        return findings
    bare_rule = _engine_rule(rules, "VIM090")
    unused_rule = _engine_rule(rules, "VIM091")
    enabled = {r.code() for r in rules}
    aliases: dict[str, set[str]] = {}
    for r in rules:
        for alias in r.ALIASES:
            aliases.setdefault(r.code(), set()).add(alias)
    used: set[tuple[int, str]] = set()
    by_line: dict[int, list[Suppression]] = {}
    file_level: list[Suppression] = []
    for s in suppressions:
        (file_level if s.file_level else by_line.setdefault(s.line, [])).append(s)
    kept = []
    for f in findings:
        hit: tuple[Suppression, str] | None = None
        for s in (*by_line.get(f.line, ()), *by_line.get(f.end_line, ()), *file_level):
            named = f.code if f.code in s.vime_codes else next(
                (a for a in aliases.get(f.code, ()) if a in s.vime_codes), None)
            if named is not None:
                hit = (s, named)
                break
        if hit is None:
            kept.append(f)
        else:
            used.add((hit[0].line * 100000 + hit[0].col, hit[1]))
    extra = []
    for s in suppressions:
        if s.bare and bare_rule is not None:
            inv = bare_rule.INVARIANT
            extra.append(Finding(inv.id, bare_rule.slug(), inv.severity, inv.render(),
                                 path, s.line, s.col, s.line, s.col + s.length, inv.fix))
            continue
        if unused_rule is None:
            continue
        key = s.line * 100000 + s.col
        unused = [c for c in s.vime_codes
                  if (key, c) not in used and (c in enabled or c not in INVARIANTS)]
        if unused:
            inv = unused_rule.INVARIANT
            unknown = [c for c in unused if c not in INVARIANTS]
            msg = inv.render(codes=", ".join(unused))
            if unknown:
                msg += f" ({', '.join(unknown)}: unknown code)"
            extra.append(Finding(inv.id, unused_rule.slug(), inv.severity, msg, path,
                                 s.line, s.col, s.line, s.col + s.length, inv.fix))
    out = kept + extra
    out.sort(key=lambda f: (f.line, f.col, f.code))
    return out


def lint_source(
    source: str | bytes,
    path: str,
    options: LintOptions | None = None,
    *,
    rules: Sequence[type[Rule]],
    fix: bool = False,
    unsafe_fixes: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> LintResult:
    """Lint one source text; with ``fix`` apply safe fixes (and unsafe ones with ``unsafe_fixes``).

    Args:
        source: the file's text, or its bytes (decoded per PEP 263).
        path: the name to report.
        options: hooks named by configuration, launch flags.
        rules: the enabled rule classes (see :func:`select_rules`).
        fix: apply fixes until the text stops changing (at most 10 rounds).
        unsafe_fixes: also apply fixes marked unsafe.

    Returns:
        A :class:`LintResult`; ``failure`` is set (and ``findings`` empty) when the text cannot
        be decoded or Python rejects it (``compile()``'s verdict). Never raises for bad input.
    """
    options = options or LintOptions()
    if isinstance(source, bytes):
        try:
            text = decode_source(source)
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
            if isinstance(exc, UnicodeDecodeError):
                return LintResult(path, failure=_failure(path, exc))
            return LintResult(path, failure=ParseFailure(path, 0, 0, f"cannot decode: {exc}"))
    else:
        text = source
    size = len(source) if isinstance(source, bytes) else len(text.encode("utf-8", "replace"))
    verdict = screen(text, size, path, limits)
    if isinstance(verdict, ParseFailure):
        return LintResult(path, failure=verdict, source=text)
    if isinstance(verdict, Skipped):
        return _skipped(path, text, verdict, rules)
    try:
        with time_budget(limits.seconds):
            result = _lint_and_fix(text, path, options, rules, fix, unsafe_fixes)
        late = verdict.compile_error
        if late is not None and result.failure is None and not result.findings:
            return LintResult(path, failure=late, source=text)  # never clean when Python says no
        return result
    except OverBudget:
        return _skipped(path, text, Skipped(
            "too slow", f"over the {limits.seconds:g} s budget for one file; split the file "
                        "or exclude it"), rules)


def _skipped(path: str, text: str, why: Skipped, rules: Sequence[type[Rule]]) -> LintResult:
    """The result of a file that was not linted: one VIM092 finding at its start (none when
    VIM092 is not selected)."""
    rule = _engine_rule(rules, "VIM092")
    if rule is None:
        return LintResult(path, source=text)
    inv = rule.INVARIANT
    return LintResult(path, (Finding(inv.id, rule.slug(), inv.severity, why.message(), path,
                                     1, 0, 1, 0, inv.fix),), source=text)


def _lint_and_fix(text: str, path: str, options: LintOptions, rules: Sequence[type[Rule]],
                  fix: bool, unsafe_fixes: bool) -> LintResult:
    findings, failure = _lint_once(text, path, options, rules)
    if isinstance(failure, Skipped):
        return _skipped(path, text, failure, rules)
    if failure is not None or not fix:
        return LintResult(path, tuple(findings), failure, source=text)
    current, total = text, 0
    for _ in range(MAX_FIX_ROUNDS):
        fixes = [f.edits for f in findings if f.edits and (f.fix_safe or unsafe_fixes)]
        if not fixes:
            break
        new, applied = apply_edits(current, fixes)
        if applied == 0 or new == current:
            break
        current, total = new, total + applied
        findings, again = _lint_once(current, path, options, rules)
        if again is not None:  # a fix must never break the code: report, change nothing
            failure = again if isinstance(again, ParseFailure) else ParseFailure(
                path, 0, 0, f"a fix made the file unlintable: {again.message()}")
            return LintResult(path, (), failure, source=text)
    return LintResult(path, tuple(findings), None, fixed_source=current if total else None,
                      fixes_applied=total, source=text)
