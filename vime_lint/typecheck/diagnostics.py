"""mypy's messages on an annotated copy, mapped back to ``VIM2xx`` findings at the user's lines.

Only errors inside a hook or a helper that got contract types are kept (the rest of the module
is the user's own business); notes are dropped. Each message keeps mypy's text, prefixed by the
contract type it came from::

    `sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt); Item "list[dict[str, Any]]"
    of "str | list[dict[str, Any]]" has no attribute "lower"

Classification (an *error* only where a contract type is violated in a way that raises or
corrupts training; :func:`~vime_lint.typecheck.strictness.strictness` says what is mypy's own
strictness instead):

- ``return``/``return-value`` errors of a hook are VIM200 (a tensor, numpy or string reward,
  ``None`` on a path, a list where the output dataclass is due); a rollout function's bare list
  of groups or bare dict has the severity of
  :func:`vime.contract.invariants.raw_rollout_return_severity` for the ``evaluation`` path
  its ``return`` is on (a warning for the legacy form vime wraps, else an error);
- a wrong value stored in a field of ``Sample`` or given to a contract dataclass is VIM202 (a
  string status, a list-valued metric, a ``Sample`` where a group is expected);
- a failing pair of annotation probes is VIM203;
- an attribute that is no ``Sample`` field is VIM031, with the severity and words of
  ``vime-lint rollout`` (a store: error for a near miss of a field's name, else a warning; not
  reported when the module reads it back; a read nothing stores: an error);
- a call of one of vime's functions (or a contract type's method) whose arguments do not fit
  its parameters is VIM201 at the call, said in the contract's words: what it does not pass
  (the argument that lands in its place), vime's signature, the call to write
  (:mod:`~vime_lint.typecheck.call_shape`; mypy's sentences about the call are merged into that one finding);
- any other error on a contract value is VIM201;
- mypy's own strictness (``var-annotated``, ``object`` from untyped containers, ``None`` into a
  typed local, an unnarrowed ``X | None``, an unnarrowed union of modes or fan-out, the types
  of a third-party API on the user's own values) is VIM204, a warning that is off by default.

Each message leads with vime's words and the fix, then mypy's sentence (``...; mypy: ...``).

Usage::

    findings = findings_for(path, source, plan, messages)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from vime.contract import INVARIANTS, SAMPLE_FIELD_NAMES
from vime.contract.errors import Severity
from vime.contract.invariants import raw_rollout_return_severity
from vime_lint.static._model import Finding
from vime_lint.typecheck.call_shape import call_shape
from vime_lint.typecheck.codes import rule_for
from vime_lint.typecheck.contract_context import (
    assigned_field,
    context_of,
    contract_call,
    contract_names,
    involved,
    reached,
    sample_field_type,
    via,
)
from vime_lint.typecheck.contract_types import ALIAS_PREFIX
from vime_lint.typecheck.fixes import fix_for
from vime_lint.typecheck.plan import AnnotationPlan, TypedFunction
from vime_lint.typecheck.run import MypyMessage
from vime_lint.typecheck.signatures import class_attributes
from vime_lint.typecheck.source_index import SourceIndex, focus
from vime_lint.typecheck.strictness import GOT, strictness, union_members
from vime_lint.typecheck.unknown_attributes import NO_ATTR, attribute_uses, unknown_attribute

if TYPE_CHECKING:
    from vime_lint.static.analysis import Side

__all__ = ["findings_for", "innermost", "wider_annotations"]

_RETURN_CODES = frozenset({"return", "return-value", "empty-body"})
_FIELD_CODES = frozenset({"assignment", "arg-type", "dict-item", "list-item", "call-arg",
                          "misc"})
#: The copy's launch-typed ``Sample`` subclasses (``_vime_t_Sample_text_prompt``, see
#: ``contract_types.launch_sample``): a ``Sample`` with fields narrowed by the launch. mypy names
#: them in its messages; they are read, and shown, as ``Sample``.
_LAUNCH_SAMPLE = re.compile(rf"(?<!\w){ALIAS_PREFIX}Sample_\w+")


def innermost(functions: Iterable[TypedFunction], line: int) -> TypedFunction | None:
    """The innermost of ``functions`` whose definition holds 1-based ``line``, else None."""
    best = None
    for fn in functions:
        if fn.start_line <= line <= fn.end_line and (
                best is None or fn.start_line >= best.start_line):
            best = fn
    return best


def _legacy_return(fn: TypedFunction, detail: str) -> type | None:
    """A rollout function's raw list of groups or raw dict where the output dataclass is due:
    ``list`` or ``dict`` (the contract's :func:`~vime.contract.invariants.raw_rollout_return_severity`
    decides, from the path the return is on, whether it is the legacy form or an error), else
    None."""
    got = GOT.search(detail)
    if got is None or fn.spec is None:
        return None
    if got["got"].startswith("list[list[") and "RolloutFnTrainOutput" in got["want"]:
        return list
    if got["got"].startswith("dict[") and "RolloutFnEvalOutput" in got["want"]:
        return dict
    return None


def _return_side(source: str, line: int) -> Side:
    """The ``evaluation`` side of the ``return`` on 1-based ``line`` (``"train"``, ``"eval"``;
    None where no ``if evaluation:`` splits the function or no return is there), as
    ``vime-lint rollout`` reads it (:func:`vime_lint.static.analysis.function_facts`)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from vime_lint.static.analysis._functions import function_facts

    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError:
        return None
    where = wrapper.resolve(PositionProvider)
    best: cst.FunctionDef | None = None
    for node, pos in where.items():
        if isinstance(node, cst.FunctionDef) and pos.start.line <= line <= pos.end.line and (
                best is None or pos.start.line >= where[best].start.line):
            best = node
    if best is None:
        return None
    for ret in function_facts(best).returns:
        if where[ret.node].start.line == line:
            return ret.side
    return None


def _finding(code: str, path: str, line: int, col: int, end_line: int, end_col: int,
             context: str, detail: str, severity: Severity | None = None,
             fix: str | None = None) -> Finding:
    rule = rule_for(code)
    inv = INVARIANTS[code]
    # this field's, this type's, this call's fix (``help:`` shows it too)
    context = _LAUNCH_SAMPLE.sub("Sample", context)
    fix = fix or fix_for(code, context, detail)
    return Finding(code=code, slug=rule.slug(), severity=severity or inv.severity,
                   message=inv.render(context=context, fix=fix, detail=detail),
                   path=path, line=line, col=col, end_line=end_line, end_col=end_col,
                   fix_hint=fix)


def wider_annotations(plan: AnnotationPlan,
                      messages: Iterable[MypyMessage]) -> frozenset[tuple[str, str]]:
    """``(function, parameter or "return")`` of the user annotations that the probes found
    not narrower than the contract's type: wider ones (the "wider" probe passes) and
    conflicting ones (VIM203, both fail). The contract's type replaces them in a second pass,
    since it is what vime passes whatever the annotation says."""
    failed = {m.line for m in messages if m.severity == "error" and m.line > plan.user_lines}
    return frozenset((p.function, p.what) for p in plan.probes if p.narrower_line in failed)


def findings_for(path: str, source: str, plan: AnnotationPlan,
                 messages: Iterable[MypyMessage]) -> list[Finding]:
    """The ``VIM2xx`` (and VIM031) findings of one user file (unsuppressed, unselected), sorted.

    Args:
        path: the user's file, as reported.
        source: the user's text (positions refer to it).
        plan: how the copy was annotated.
        messages: mypy's messages about this file's copy.
    """
    index = SourceIndex(source)
    uses = attribute_uses(index)
    own = _own_callables(index, path)
    errors = [replace(m, message=_LAUNCH_SAMPLE.sub("Sample", m.message))
              for m in messages if m.severity == "error"]
    probe_errors = {m.line for m in errors if m.line > plan.user_lines}
    out: dict[tuple[int, int, str], Finding] = {}
    for probe in plan.probes:
        if probe.narrower_line in probe_errors and probe.wider_line in probe_errors:
            what = "returns" if probe.what == "return" else f"`{probe.what}` is"
            ctx = f"`{probe.function}` {what} `{probe.contract}` ({probe.protocol})"
            f = _finding("VIM203", path, probe.line, probe.col, probe.end_line, probe.end_col,
                         ctx, f"the annotation `{probe.user}` is neither that type nor "
                              "narrower or wider than it")
            out[(f.line, f.col, f.code)] = f
    for m in errors:
        if m.line > plan.user_lines:
            continue
        fn = innermost(plan.functions, m.line)
        if fn is None:
            continue
        nodes = index.at(m.line, m.col)
        line, col, end_line, end_col = m.line, m.col, m.end_line, m.end_col
        missing = NO_ATTR.search(m.message) if m.code in ("attr-defined", "union-attr") else None
        strict = strictness(m.message, m.code)
        legacy = soft = False
        fix: str | None = None
        if missing is not None and missing["attr"] not in SAMPLE_FIELD_NAMES:
            found = unknown_attribute(path, index, m, missing["attr"], uses)
            if found is not None:
                out.setdefault((found.line, found.col, found.code), found)
            continue
        if m.code in _RETURN_CODES and fn.returns is not None:
            code = "VIM200"
            user = fn.spec is None or fn.returns != _spec_returns(fn)
            ctx = f"`{fn.name}` returns `{fn.returns}` ({fn.protocol}" + (
                ", the hook's own annotation)" if user else ")") + reached(fn)
            if m.code == "return" and m.line in (fn.start_line, fn.def_line):
                line, col = fn.def_line, fn.name_col
                end_line, end_col = line, col + len(fn.name)
            if strict is None and user and m.code == "return-value" and \
                    not _breaks_contract(m.message, fn):
                strict = ("the hook's own return annotation is stricter than the contract's, "
                          "which this value still meets")
            if strict is not None:
                code, ctx = "VIM204", f"{ctx}, {strict}"
            elif (kind := _legacy_return(fn, m.message)) is not None:
                got = GOT.search(m.message)
                value = f"`{got['got']}`" if got else "this value"
                ctx = (f"`{fn.name}` returns {value} where `{fn.returns}` is due "
                       f"({fn.protocol}" + (", the hook's own annotation)" if user else ")")
                       + reached(fn))
                side = _return_side(source, m.line)
                # the contract decides, as for VIM003 and VIM101: the legacy form of the
                # path is a warning, the other mode's raw value an error
                legacy = raw_rollout_return_severity(kind, side) == "warning"
                raw = "a bare list" if kind is list else "a bare dict"
                if side is None:
                    ctx += (f": {raw} on a path that `evaluation` does not split, which the "
                            "train step takes" + (
                                ": a legacy form there, which vime wraps with a "
                                "DeprecationWarning; on the eval path it is an error at run "
                                "time (VIM101)" if legacy else
                                ": call_rollout_fn raises at the first train step (VIM101)"))
                else:
                    where = ("the train path (evaluation=False)" if side == "train"
                             else "the eval path (evaluation=True)")
                    ctx += (f": {raw} on {where}" + (
                        ": a legacy form, which vime wraps with a DeprecationWarning"
                        if legacy else ": call_rollout_fn raises at the first such step "
                                       "(VIM101)"))
        elif m.code in _RETURN_CODES and (own_return := _own_return(fn, m)) is not None:
            # a helper's value against the helper's own return annotation (the contract types
            # what helpers are given, not what they return): what reaches vime is checked
            # where the hook returns it
            code = "VIM204"
            ctx = (f"`{fn.name}` returns `{own_return[0]}` where its own annotation says "
                   f"`{own_return[1]}`" + reached(fn) + ", the helper's own return "
                   "annotation, not a contract type")
            fix = (f"annotate `{fn.name}` with what it returns (`-> {own_return[0]}`), or "
                   "drop the annotation")
        elif (shape := call_shape(index, fn, nodes, m)) is not None:
            # a call of vime's function that does not fit its parameters: one finding at the
            # call (mypy's sentences about it merged), in the contract's words
            code, ctx, fix, node = "VIM201", *shape
            line, col = node.lineno, node.col_offset
            end_line, end_col = node.end_lineno or line, node.end_col_offset or col + 1
        else:
            call = contract_call(nodes, m.line, m.col) if m.code in _FIELD_CODES else None
            target = assigned_field(nodes) if m.code == "assignment" else None
            if call is not None:
                code, ctx = "VIM202", call + reached(fn)
            elif target is not None:
                hint = sample_field_type(fn, target) or "?"
                code = "VIM202"
                ctx = (f"`{ast.unparse(target)}` is `{hint}` (Sample.{target.attr})"
                       + via(fn) + reached(fn))
            elif (default := _default_data_source_attr(m)) is not None:
                # a method the default data source has and the DataSource interface lacks: it
                # runs, unless --data-source-path names a class without it
                code, soft = "VIM201", True
                ctx = (f"`{default[0]}` is a method of vime's default data source "
                       f"(`{default[1]}`), not of the `DataSource` interface the contract "
                       "gives hooks: it works unless --data-source-path names a class "
                       "without it" + reached(fn))
                fix = (f"keep it with the default data source, or check for it first: "
                       f"`if hasattr(data_source, \"{default[0]}\"): ...`")
            else:
                code, ctx = "VIM201", context_of(fn, nodes, m) + reached(fn)
                if strict is None and (m.code == "assignment" or not involved(
                        fn, focus(nodes, m.line, m.col), m.message)):
                    strict = "the user's own values and types, no contract value involved"
                callee = _CALLEE.search(m.message) if m.code == "arg-type" else None
                # the user's own function, or a method of the user's own class
                owner = callee and (callee["cls"] if callee["cls"] else callee["name"])
                if strict is None and callee is not None and owner in own and \
                        not _names_contract_type(callee["want"]):
                    name = f"{callee['cls']}.{callee['name']}" if callee["cls"] \
                        else callee["name"]
                    strict = (f"the parameter annotation of the user's own `{name}`, "
                              "not a contract type")
            if strict is not None:
                code, ctx = "VIM204", f"{ctx}, {strict}"
        severity: Severity | None = "warning" if legacy or soft else None
        key = (line, col, code)
        if key in out:
            prev = out[key]
            out[key] = _finding(code, path, line, col, end_line, end_col, ctx,
                                prev.message.partition("; mypy: ")[2] + "; " + m.message,
                                severity, fix)
            continue
        out[key] = _finding(code, path, line, col, max(end_line, line),
                            end_col if end_line >= line else col + 1, ctx, m.message, severity,
                            fix)
    # One finding per position: an error hides a strictness note mypy gave at the same place.
    for (line, col, code) in list(out):
        if code == "VIM204" and any((line, col, c) in out for c in ("VIM200", "VIM201",
                                                                   "VIM202")):
            del out[(line, col, code)]
    return sorted(out.values(), key=lambda f: (f.line, f.col, f.code))


_DATA_SOURCE_ATTR = re.compile(r'(?:Item )?"DataSource"(?: of "[^"]*")? has no attribute '
                               r'"(?P<attr>\w+)"')


def _default_data_source_attr(m: MypyMessage) -> tuple[str, str] | None:
    """(attribute, class) when mypy says ``"DataSource" has no attribute "x"`` and ``x`` is
    defined on the default ``--data-source-path`` class (read from vime's source)."""
    found = _DATA_SOURCE_ATTR.search(m.message) \
        if m.code in ("attr-defined", "union-attr") else None
    if found is None:
        return None
    from vime.contract.hooks import HOOKS

    module, _, cls = str(HOOKS["data_source_path"].default).rpartition(".")
    return (found["attr"], cls) if found["attr"] in class_attributes(module, cls) else None


_CERTAIN = re.compile(r'got "(?P<got>None|Tensor|str|ndarray[^"]*|[^"]*floating[^"]*|'
                      r'[^"]*float\d+|[^"]*int\d+)"')


def _breaks_contract(message: str, fn: TypedFunction) -> bool:
    """For a return that breaks the hook's own (narrower) annotation: whether the value also
    breaks the contract's return type (a tensor, numpy, string or None where the contract
    names no such type and no ``Any``)."""
    got = _CERTAIN.search(message)
    if got is None or fn.spec is None:
        return False
    members = union_members(_spec_returns(fn))
    name = got["got"].split("[")[0]
    return "Any" not in members and not any(name in m for m in members)


_CALLEE = re.compile(r'to "(?P<name>\w+)"(?: of "(?P<cls>\w+)")? has incompatible type '
                     r'"[^"]*"; expected "(?P<want>[^"]*)"')


def _own_return(fn: TypedFunction, m: MypyMessage) -> tuple[str, str] | None:
    """(got, expected) when mypy's return error in ``fn`` is against the user's own return
    annotation of a helper (``fn.returns`` is None: the contract gave it no return type) and
    that annotation names no contract type; None otherwise (a helper annotated with a contract
    type hides a wrong value from the hook's check, so that error stays)."""
    got = GOT.search(m.message)
    if fn.spec is not None or fn.returns is not None or got is None \
            or _names_contract_type(got["want"]):
        return None
    return got["got"], got["want"]


def _names_contract_type(text: str) -> bool:
    return bool(set(re.findall(r"\b\w+\b", text)) & contract_names())


def _own_callables(index: SourceIndex, path: str) -> frozenset[str]:
    """Functions and classes that are the user's own: defined in the module, or imported
    relatively or from a module file next to it or under the working directory."""
    out: set[str] = set()
    tree = index.tree
    if not isinstance(tree, ast.Module):
        return frozenset()
    here = Path(path).parent
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            mod = (node.module or "").replace(".", "/")
            local = node.level > 0 or any(
                (base / f"{mod}.py").is_file() or (base / mod / "__init__.py").is_file()
                for base in (here, Path.cwd()) if mod)
            if local:
                out.update(a.asname or a.name for a in node.names)
    return frozenset(out)


def _spec_returns(fn: TypedFunction) -> str:
    from vime_lint.typecheck.contract_types import hook_types

    assert fn.spec is not None
    return hook_types(fn.spec).returns
