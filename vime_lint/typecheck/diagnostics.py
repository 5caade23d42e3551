"""mypy's messages on an annotated copy, mapped back to ``VIM2xx`` findings at the user's lines.

Only errors inside a hook or a helper that got contract types are kept (the rest of the module
is the user's own business); notes are dropped. Each message keeps mypy's text, prefixed by the
contract type it came from::

    `sample.prompt` is `str | list[dict[str, Any]]` (Sample.prompt); Item "list[dict[str, Any]]"
    of "str | list[dict[str, Any]]" has no attribute "lower"

Classification (an *error* only where a contract type is violated in a way that raises or
corrupts training; :func:`strictness` says what is mypy's own strictness instead):

- ``return``/``return-value`` errors of a hook are VIM200 (a tensor, numpy or string reward,
  ``None`` on a path, a list where the output dataclass is due); a rollout function's bare list
  of groups, which vime wraps with a DeprecationWarning (the legacy form), is a warning;
- a wrong value stored in a field of ``Sample`` or given to a contract dataclass is VIM202 (a
  string status, a list-valued metric, a ``Sample`` where a group is expected);
- a failing pair of annotation probes is VIM203;
- an attribute that is no ``Sample`` field is VIM031, with the severity and words of
  ``vime-lint rollout`` (a store: error for a near miss of a field's name, else a warning; not
  reported when the module reads it back; a read nothing stores: an error);
- a call of one of vime's functions (or a contract type's method) whose arguments do not fit
  its parameters is VIM201 at the call, said in the contract's words: what it does not pass
  (the argument that lands in its place), vime's signature, the call to write
  (:func:`_call_shape`; mypy's sentences about the call are merged into that one finding);
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
import difflib
import importlib.util
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from vime.contract import FIELDS_BY_NAME, INVARIANTS, SAMPLE_FIELD_NAMES
from vime.contract.errors import Severity
from vime_lint.static._model import Finding
from vime_lint.typecheck.annotate import AnnotationPlan, TypedFunction
from vime_lint.typecheck.codes import rule_for
from vime_lint.typecheck.contract_types import ALIAS_PREFIX, field_hint, type_sources
from vime_lint.typecheck.run import MypyMessage

__all__ = ["contract_class_fields", "findings_for", "strictness", "wider_annotations"]

_RETURN_CODES = frozenset({"return", "return-value", "empty-body"})
#: Statements with a body: the position's context is never a whole block.
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
             ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)
_FIELD_CODES = frozenset({"assignment", "arg-type", "dict-item", "list-item", "call-arg",
                          "misc"})
#: mypy codes that are never about a contract value (annotations, names, imports, redefinitions).
_STRICT_CODES = frozenset({"var-annotated", "has-type", "annotation-unchecked", "no-redef",
                           "name-defined", "import", "import-untyped", "import-not-found",
                           "valid-type", "unused-ignore", "truthy-function", "unreachable",
                           "redundant-cast", "type-var", "override", "no-any-return"})
#: ``Item "X" of "U" has no attribute`` where X is one side of a union of modes that the code
#: selects by other means (``evaluation``, a generate function that does not fan out).
_MODE_ITEMS = (("RolloutFnEvalOutput", "RolloutFnTrainOutput"),
               ("RolloutFnTrainOutput", "RolloutFnEvalOutput"),
               ("list[Sample]", "Sample | list[Sample]"),
               # the same fan-out union where `Sample` is unknown (imported from slime or
               # miles, read as `Any`): `sample: Sample | list[Sample]` in ported code
               ("list[Any]", "Any | list[Any]"))
_GOT = re.compile(r'(?:got|has type|incompatible type) "(?P<got>[^"]*)"[;,)]?.*?'
                  r'(?:expected|variable has type) "(?P<want>[^"]*)"')
_NO_ATTR = re.compile(r'(?:Item )?"Sample"(?: of "[^"]*")? has no attribute "(?P<attr>\w+)"')
#: The copy's launch-typed ``Sample`` subclasses (``_vime_t_Sample_text_prompt``, see
#: ``annotate.launch_sample``): a ``Sample`` with fields narrowed by the launch. mypy names
#: them in its messages; they are read, and shown, as ``Sample``.
_LAUNCH_SAMPLE = re.compile(rf"(?<!\w){ALIAS_PREFIX}Sample_\w+")


def _members(t: str) -> list[str]:
    """The top-level members of a union's text (``"a | dict[str, b | c] | None"``)."""
    out: list[str] = []
    depth, cur = 0, ""
    for ch in t:
        depth += ch in "[("
        depth -= ch in "])"
        cur += ch
        if depth == 0 and cur.endswith(" | "):
            out.append(cur[:-3].strip())
            cur = ""
    out.append(cur.strip())
    return [m for m in out if m]


def _none_only(got: str, want: str) -> bool:
    """``got`` is ``want`` (or narrower) plus ``None``: an ``Optional`` not narrowed, not
    certainly None."""
    members = _members(got)
    if "None" not in members or members == ["None"]:
        return False
    wanted = set(_members(want))
    return all(m == "None" or m in wanted or m == "Any" or (m == "int" and "float" in wanted)
               for m in members)


def strictness(message: str, code: str) -> str | None:
    """Why mypy's ``message`` (error code ``code``) is its own strictness rather than a
    contract type violated (VIM204's context), or None when it may be a violation."""
    if code in _STRICT_CODES:
        return f"mypy's `{code}` check, no contract type involved"
    if '"object"' in message:
        return "a value of type `object` (read from an untyped container)"
    if 'Item "None" of ' in message or re.search(r'\("None" and |and "None"\)|\("None"\)',
                                                    message):
        return "an `X | None` used without narrowing (not certainly None)"
    for item, union in _MODE_ITEMS:
        if f'Item "{item}" of "{union}' in message or (
                f'Item "{item}" of "' in message and union in message):
            return (f"a `{union}` not narrowed to one side (the mode is chosen by "
                    "`evaluation` or by a generate function that fans out)")
    if re.search(r'Value of type "[^"]*\| None" is not indexable|"None" (?:not callable|has no)',
                 message):
        return "an `X | None` used without narrowing (not certainly None)"
    got = _GOT.search(message)
    if got is not None and (got["got"] in ("object", "Any")
                            or _none_only(got["got"], got["want"])):
        return "an `X | None` (or `object`) where `X` is due, not certainly None"
    return None


@cache
def _contract_names() -> frozenset[str]:
    return frozenset({n for n, mod in type_sources().items() if mod.startswith("vime")}
                     | {"Status"})


@cache
def _long_hints() -> tuple[str, ...]:
    """Sample field types distinctive enough to name the field in a message."""
    return tuple(sorted({f.hint for f in FIELDS_BY_NAME.values()
                         if " | " in f.hint and len(f.hint) >= 12}))


def _involved(fn: TypedFunction, focus: ast.AST | None, message: str) -> bool:
    """Whether the error is about a contract value: the message names a contract type or a
    Sample field's type, or the expression mypy points at reads a contract-typed parameter or
    a Sample field."""
    names = _contract_names()
    for quoted in re.findall(r'"([^"]*)"', message):
        if set(re.findall(r"\b\w+\b", quoted)) & names:
            return True
    if any(h in message for h in _long_hints()):
        return True
    if focus is None:
        return False
    for sub in ast.walk(focus):
        if isinstance(sub, ast.Name) and sub.id in fn.params and \
                fn.params[sub.id].type not in ("Any", "object"):
            return True
        if isinstance(sub, ast.Attribute) and _field_context(fn, sub, message) is not None:
            return True
    return False


@cache
def contract_class_fields(name: str) -> dict[str, str]:
    """``{field: annotation text}`` of a contract dataclass (``RolloutFnTrainOutput``), read
    from its module's source (nothing imported); empty for a name that is no class there."""
    module = type_sources().get(name)
    if module is None or not module.startswith("vime"):
        return {}
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return {}
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {s.target.id: ast.unparse(s.annotation) for s in node.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return {}


def _within(node: ast.AST, line: int, col: int) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)
    return start <= (line, col) < end or start == (line, col)


def _root(node: ast.expr) -> tuple[ast.Name | None, list[ast.Attribute]]:
    """The Name a chain ``a[0].b.c`` starts from, and its attributes, innermost first."""
    attrs: list[ast.Attribute] = []
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node)
            node = node.value
        elif isinstance(node, (ast.Subscript, ast.Call)):
            node = node.value if isinstance(node, ast.Subscript) else node.func
        else:
            break
    return (node if isinstance(node, ast.Name) else None), attrs[::-1]


def _chain_text(node: ast.Attribute) -> str:
    return ast.unparse(node)


class _Index:
    """The user's module parsed once: the nodes at each position."""

    def __init__(self, source: str) -> None:
        try:
            self.tree: ast.AST | None = ast.parse(source)
        except SyntaxError:
            self.tree = None
        self.nodes: list[ast.AST] = list(ast.walk(self.tree)) if self.tree is not None else []

    def at(self, line: int, col: int) -> list[ast.AST]:
        """Nodes whose span holds the position, outermost first."""
        found = [n for n in self.nodes if isinstance(n, (ast.expr, ast.stmt)) and
                 not isinstance(n, _COMPOUND) and _within(n, line, col)]
        return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0),
                                            -(getattr(n, "end_lineno", 0) or 0),
                                            -(getattr(n, "end_col_offset", 0) or 0)))


def _field_context(fn: TypedFunction, attr: ast.Attribute, message: str) -> str | None:
    """``"`x.f` is `T` (Sample.f)"`` for a Sample field read through a contract value."""
    if attr.attr not in SAMPLE_FIELD_NAMES:
        return None
    root, _ = _root(attr)
    hint = _hint(fn, attr)
    if hint is None:
        return None
    typed = root is not None and root.id in fn.params and "Sample" in fn.params[root.id].type
    if typed or hint.replace("Sample.", "") in message or f'"{attr.attr}"' in message:
        return f"`{_chain_text(attr)}` is `{hint}` (Sample.{attr.attr})"
    return None


def _hint(fn: TypedFunction, attr: ast.Attribute) -> str | None:
    """``Sample.<attr>``'s type, as narrowed by the launch (``annotate.LAUNCH_FIELDS``) when the
    chain starts at a parameter typed with a launch subclass of ``Sample``."""
    from vime_lint.typecheck.annotate import LAUNCH_FIELDS, launch_sample

    root, _ = _root(attr)
    param = fn.params.get(root.id) if root is not None else None
    typed = param.type if param is not None else ""
    for kind, (name, hint, _why) in LAUNCH_FIELDS.items():
        if name == attr.attr and typed.startswith(launch_sample(frozenset())) and \
                kind.replace("-", "_") in typed:
            return hint
    return field_hint(attr.attr)


def _param_context(fn: TypedFunction, name: str) -> str | None:
    p = fn.params.get(name)
    if p is None:
        return None
    return f"`{name}` is `{p.type}` ({p.origin})"


def _contract_call(nodes: Sequence[ast.AST], line: int, col: int) -> str | None:
    """``"`RolloutFnTrainOutput.metrics` is `dict[str, float] | None`"`` when the position is
    inside a keyword argument of a call to a contract dataclass."""
    for node in reversed(nodes):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        name = name.removeprefix("_vime_t_")
        fields = contract_class_fields(name)
        if not fields:
            continue
        for kw in node.keywords:
            if kw.arg in fields and _within(kw.value, line, col):
                return f"`{name}.{kw.arg}` is `{fields[kw.arg]}` ({name})"
        for i, arg in enumerate(node.args):
            names = list(fields)
            if i < len(names) and _within(arg, line, col):
                return f"`{name}.{names[i]}` is `{fields[names[i]]}` ({name})"
    return None


def _assigned_field(nodes: Sequence[ast.AST]) -> ast.Attribute | None:
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr in SAMPLE_FIELD_NAMES:
                    return t
    return None


def _context(fn: TypedFunction, nodes: Sequence[ast.AST], msg: MypyMessage) -> str:
    """The contract type the error came from, looked for in the innermost node at the error's
    position first: a Sample field read, else a contract-typed parameter."""
    inner = list(reversed(nodes))
    for node in inner:  # a field read that spans the error's position
        if isinstance(node, ast.Attribute) and node.attr in SAMPLE_FIELD_NAMES:
            hint = _hint(fn, node)
            return f"`{ast.unparse(node)}` is `{hint}` (Sample.{node.attr})" + _via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute):
                ctx = _field_context(fn, sub, msg.message)
                if ctx is not None:
                    return ctx + _via(fn)
    for node in inner:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                ctx = _param_context(fn, sub.id)
                if ctx is not None:
                    return ctx
    return f"in `{fn.name}` (types from {fn.protocol})"


def _via(fn: TypedFunction) -> str:
    """For a helper: which hook gave it its types (``", in _score via reward_func(sample)"``)."""
    if fn.spec is not None:
        return ""
    return f", in `{fn.name}` (types from {fn.protocol})"


def _innermost(functions: Iterable[TypedFunction], line: int) -> TypedFunction | None:
    best = None
    for fn in functions:
        if fn.start_line <= line <= fn.end_line and (
                best is None or fn.start_line >= best.start_line):
            best = fn
    return best


def _fix(code: str, context: str, detail: str) -> str:
    """The fix for this finding, in vime's words: specific to the field or value when known,
    else the invariant's."""
    if code in ("VIM203", "VIM204"):
        return INVARIANTS[code].fix
    if code == "VIM200":
        if re.search(r'got "(?:Tensor|ndarray|[^"]*floating|[^"]*float\d+|[^"]*int\d+)', detail):
            return "return a Python number: `float(value)` (`tensor.item()`, `float(x)`)"
        if 'got "None"' in detail or "Missing return" in detail or "Return value expected" \
                in detail:
            return "return a value on every path (raise instead of returning None)"
        if 'got "list[' in detail and "RolloutFn" in context:
            return "wrap the groups: `return RolloutFnTrainOutput(samples=groups)`"
        if 'got "str"' in detail:
            return "convert the text to the contract's type (`float(text)` for a reward)"
    if code == "VIM202" and "(Sample.reward)" in context:
        return "store a Python float (`float(x)`, `tensor.item()`), or a dict with --reward-key"
    if "(Sample.prompt)" in context:
        return "narrow it first: `if isinstance(sample.prompt, str): ...` (else a message list)"
    if "(Sample.reward)" in context:
        return "read it with `sample.get_reward_value(args)` (a float)"
    if "(Sample.status)" in context:
        return "store a member of `Sample.Status` (`Sample.Status.COMPLETED`)"
    if ".metrics`" in context:
        return "give one float per metric key (`float(sum(xs) / len(xs))`)"
    if "(Sample.tokens)" in context or "(Sample.loss_mask)" in context:
        if re.search(r'"(?:ndarray|Tensor)\b', detail):
            return ("convert with `.tolist()`: vime's contract check rejects an array, it wants "
                    "a list of ints (token ids from the tokenizer, 0/1 for a mask)")
        return "store a list of ints (token ids from the tokenizer, 0/1 for a mask)"
    if "(Sample.metadata)" in context:
        if code == "VIM202":
            return ("keep `sample.metadata` a dict: set its keys (`sample.metadata['turns'] = "
                    "n`), not a JSON string (building the training batch calls `.get` on it)")
        if '"loads"' in detail:
            return ("`sample.metadata` is already a dict (vime parses a JSON-string metadata "
                    "column when it reads the data): read its keys, drop `json.loads`")
    return INVARIANTS[code].fix


def _legacy_return(fn: TypedFunction, detail: str) -> str | None:
    """A rollout function's bare list of groups (or an eval function's bare dict) where the
    output dataclass is due: vime wraps it with a DeprecationWarning on the train (eval) path
    (``vime.rollout.base_types.check_vim101``, legacy form), so it is a warning, not an
    error. mypy cannot tell the path; a bare list on the eval path is an error at run time
    (and VIM002 of ``vime-lint rollout`` reports a function that ignores ``evaluation``)."""
    got = _GOT.search(detail)
    if got is None or fn.spec is None:
        return None
    if got["got"].startswith("list[list[") and "RolloutFnTrainOutput" in got["want"]:
        return "train"
    if got["got"].startswith("dict[") and "RolloutFnEvalOutput" in got["want"]:
        return "eval"
    return None


def _finding(code: str, path: str, line: int, col: int, end_line: int, end_col: int,
             context: str, detail: str, severity: Severity | None = None,
             fix: str | None = None) -> Finding:
    rule = rule_for(code)
    inv = INVARIANTS[code]
    # this field's, this type's, this call's fix (``help:`` shows it too)
    context = _LAUNCH_SAMPLE.sub("Sample", context)
    fix = fix or _fix(code, context, detail)
    return Finding(code=code, slug=rule.slug(), severity=severity or inv.severity,
                   message=inv.render(context=context, fix=fix, detail=detail),
                   path=path, line=line, col=col, end_line=end_line, end_col=end_col,
                   fix_hint=fix)


def _attribute_uses(index: _Index) -> tuple[set[str], set[str]]:
    """Attribute names the module stores (``x.a = ...``) and reads (``x.a``,
    ``getattr(x, "a", ...)``, ``hasattr(x, "a")``)."""
    stores: set[str] = set()
    reads: set[str] = set()
    for node in index.nodes:
        if isinstance(node, ast.Attribute):
            (stores if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            reads.discard(node.target.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "hasattr") and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            reads.add(node.args[1].value)  # getattr(s, "name", ...): read back by name
    return stores, reads


def _unknown_attribute(path: str, index: _Index, m: MypyMessage, attr: str,
                       uses: tuple[set[str], set[str]]) -> Finding | None:
    """VIM031 for ``"Sample" has no attribute "attr"``, as ``vime-lint rollout`` reports it, or
    None for an attribute the module both stores and reads (its own)."""
    from vime_lint.static.rules.unknown_sample_attribute import (
        UnknownSampleAttribute,
        unknown_store,
    )

    stores, reads = uses
    if attr.startswith("_"):
        return None  # private: `vime-lint rollout` leaves it alone too
    node = next((n for n in index.nodes if isinstance(n, ast.Attribute) and n.attr == attr
                 and n.lineno == m.line and n.col_offset == m.col), None)
    store = node is not None and isinstance(node.ctx, ast.Store)
    if attr in stores and attr in reads:
        return None  # the module's own attribute: stored and read back (it works)
    target = ast.unparse(node) if node is not None else f"sample.{attr}"
    if attr in ("truncated", "aborted"):  # the stale flags: VIM032, as in `vime-lint rollout`
        from vime_lint.static.rules.stale_sample_flag import StaleSampleFlag

        inv = INVARIANTS["VIM032"]
        return Finding(code="VIM032", slug=StaleSampleFlag.slug(), severity=inv.severity,
                       message=inv.render(problem=f"`{target}` is a stale flag of an old API: "
                                                  f"{inv.fix}") + f"; mypy: {m.message}",
                       path=path, line=m.line, col=m.col, end_line=max(m.end_line, m.line),
                       end_col=m.end_col if m.end_line >= m.line else m.col + 1,
                       fix_hint=inv.fix)
    severity: Severity
    if store:
        problem, severity = unknown_store(target, attr)
    else:
        problem, severity = (f"the attribute read `{target}` reads `{attr}`, which is not a "
                             "Sample field and that nothing stores; it raises "
                             "AttributeError"), "error"
    inv = INVARIANTS["VIM031"]
    return Finding(code="VIM031", slug=UnknownSampleAttribute.slug(), severity=severity,
                   message=inv.render(problem=problem) + f"; mypy: {m.message}", path=path,
                   line=m.line, col=m.col, end_line=max(m.end_line, m.line),
                   end_col=m.end_col if m.end_line >= m.line else m.col + 1, fix_hint=inv.fix)


def _focus(nodes: Sequence[ast.AST], line: int, col: int) -> ast.AST | None:
    """The expression mypy points at: the largest one starting at the position, else the
    innermost one holding it."""
    exprs = [n for n in nodes if isinstance(n, ast.expr)]
    starting = [n for n in exprs if (n.lineno, n.col_offset) == (line, col)]
    if starting:
        return starting[0]
    return exprs[-1] if exprs else None


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
    index = _Index(source)
    uses = _attribute_uses(index)
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
        fn = _innermost(plan.functions, m.line)
        if fn is None:
            continue
        nodes = index.at(m.line, m.col)
        line, col, end_line, end_col = m.line, m.col, m.end_line, m.end_col
        missing = _NO_ATTR.search(m.message) if m.code in ("attr-defined", "union-attr") else None
        strict = strictness(m.message, m.code)
        legacy = False
        fix: str | None = None
        if missing is not None and missing["attr"] not in SAMPLE_FIELD_NAMES:
            found = _unknown_attribute(path, index, m, missing["attr"], uses)
            if found is not None:
                out.setdefault((found.line, found.col, found.code), found)
            continue
        if m.code in _RETURN_CODES and fn.returns is not None:
            code = "VIM200"
            user = fn.spec is None or fn.returns != _spec_returns(fn)
            ctx = f"`{fn.name}` returns `{fn.returns}` ({fn.protocol}" + (
                ", the hook's own annotation)" if user else ")") + _reached(fn)
            if m.code == "return" and m.line in (fn.start_line, fn.def_line):
                line, col = fn.def_line, fn.name_col
                end_line, end_col = line, col + len(fn.name)
            if strict is None and user and m.code == "return-value" and \
                    not _breaks_contract(m.message, fn):
                strict = ("the hook's own return annotation is stricter than the contract's, "
                          "which this value still meets")
            if strict is not None:
                code, ctx = "VIM204", f"{ctx}, {strict}"
            elif (mode := _legacy_return(fn, m.message)) is not None:
                legacy = True
                other = "train" if mode == "eval" else "eval"
                ctx += (f", a legacy form on the {mode} path only: vime wraps it there with a "
                        f"DeprecationWarning; returned on the {other} path it is an error at "
                        "run time (VIM101)")
        elif (shape := _call_shape(index, fn, nodes, m)) is not None:
            # a call of vime's function that does not fit its parameters: one finding at the
            # call (mypy's sentences about it merged), in the contract's words
            code, ctx, fix, node = "VIM201", *shape
            line, col = node.lineno, node.col_offset
            end_line, end_col = node.end_lineno or line, node.end_col_offset or col + 1
        else:
            call = _contract_call(nodes, m.line, m.col) if m.code in _FIELD_CODES else None
            target = _assigned_field(nodes) if m.code == "assignment" else None
            if call is not None:
                code, ctx = "VIM202", call + _reached(fn)
            elif target is not None:
                hint = _hint(fn, target) or "?"
                code = "VIM202"
                ctx = (f"`{ast.unparse(target)}` is `{hint}` (Sample.{target.attr})"
                       + _via(fn) + _reached(fn))
            else:
                code, ctx = "VIM201", _context(fn, nodes, m) + _reached(fn)
                if strict is None and (m.code == "assignment" or not _involved(
                        fn, _focus(nodes, m.line, m.col), m.message)):
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
        severity: Severity | None = "warning" if legacy else None
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


_CERTAIN = re.compile(r'got "(?P<got>None|Tensor|str|ndarray[^"]*|[^"]*floating[^"]*|'
                      r'[^"]*float\d+|[^"]*int\d+)"')


def _breaks_contract(message: str, fn: TypedFunction) -> bool:
    """For a return that breaks the hook's own (narrower) annotation: whether the value also
    breaks the contract's return type (a tensor, numpy, string or None where the contract
    names no such type and no ``Any``)."""
    got = _CERTAIN.search(message)
    if got is None or fn.spec is None:
        return False
    members = _members(_spec_returns(fn))
    name = got["got"].split("[")[0]
    return "Any" not in members and not any(name in m for m in members)


_CALLEE = re.compile(r'to "(?P<name>\w+)"(?: of "(?P<cls>\w+)")? has incompatible type '
                     r'"[^"]*"; expected "(?P<want>[^"]*)"')


def _names_contract_type(text: str) -> bool:
    return bool(set(re.findall(r"\b\w+\b", text)) & _contract_names())


def _own_callables(index: _Index, path: str) -> frozenset[str]:
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


def _reached(fn: TypedFunction) -> str:
    """For a helper typed because hooks reach it: which hooks (``", reached from reward_func"``)."""
    if fn.spec is not None or not fn.reached_from:
        return ""
    return f", reached from {', '.join(f'`{h}`' for h in fn.reached_from)}"


def _spec_returns(fn: TypedFunction) -> str:
    from vime_lint.typecheck.contract_types import hook_types

    assert fn.spec is not None
    return hook_types(fn.spec).returns


# ---- calls of vime's functions with arguments that do not fit them ---------------------------

#: mypy's sentences about a call's shape (``call-arg``) and the callee they name.
_CALL_SHAPE = re.compile(
    r'(?:Missing positional arguments? .* in call to|Too few arguments for|Too many (?:positional )?'
    r'arguments for|Unexpected keyword argument "\w+" for|Missing named argument "\w+" for) '
    r'"(?P<callee>\w+)"(?: of "(?P<owner>\w+)")?')
_ARG_TYPE = re.compile(r'Argument \d+ to "(?P<callee>\w+)"(?: of "(?P<owner>\w+)")? has '
                       r'incompatible type')
_OVERLOAD = re.compile(r'No overload variant of "(?P<callee>\w+)"(?: of "(?P<owner>\w+)")? '
                       r'matches')


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    default: str | None      # its text, None when required
    keyword_only: bool


@dataclass(frozen=True, slots=True)
class _Signature:
    #: ``module.name`` as vime spells it, and the parameters after ``self``.
    qualified: str
    params: tuple[_Param, ...]
    star_args: bool
    star_kwargs: bool

    def text(self) -> str:
        name = self.qualified.rpartition(".")[2]
        parts: list[str] = []
        star = False
        for p in self.params:
            if p.keyword_only and not star:
                parts.append("*")
                star = True
            parts.append(p.name if p.default is None else f"{p.name}={p.default}")
        return f"{name}({', '.join(parts)})"


def _default_text(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 12 else "..."


def _signature_of(node: ast.FunctionDef | ast.AsyncFunctionDef, qualified: str,
                  method: bool) -> _Signature:
    a = node.args
    positional = [*a.posonlyargs, *a.args][1 if method else 0:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + [
        *a.defaults][-len(positional):] if positional else []
    params = [_Param(p.arg, None if d is None else _default_text(d), False)
              for p, d in zip(positional, defaults, strict=True)]
    params += [_Param(p.arg, None if d is None else _default_text(d), True)
               for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    return _Signature(qualified, tuple(params), a.vararg is not None, a.kwarg is not None)


@cache
def _module_tree(module: str) -> ast.Module | None:
    """The parsed source of one of vime's modules (found, not imported), else None."""
    if not module.startswith("vime"):
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


@cache
def _vime_signature(module: str, name: str, owner: str | None, depth: int = 0
                    ) -> _Signature | None:
    """The parameters of ``module.name`` (a method of class ``owner`` when given; a
    dataclass's fields for a contract dataclass), following one of vime's re-exports."""
    tree = _module_tree(module)
    if tree is None or depth > 3:
        return None
    # the last `def` of a name is the implementation of its `@overload`s
    for node in reversed(tree.body):
        if owner is not None and isinstance(node, ast.ClassDef) and node.name == owner:
            for sub in reversed(node.body):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == name:
                    return _signature_of(sub, f"{module}.{owner}.{name}", True)
            return None
        if owner is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == name:
            return _signature_of(node, f"{module}.{name}", False)
        if owner is None and isinstance(node, ast.ClassDef) and node.name == name:
            return _dataclass_signature(node, f"{module}.{name}")
        if isinstance(node, ast.ImportFrom) and node.module and owner is None:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = node.module if node.level == 0 else ".".join(
                        [*module.split(".")[:-node.level], node.module])
                    return _vime_signature(base, alias.name, None, depth + 1)
    return None


def _dataclass_signature(node: ast.ClassDef, qualified: str) -> _Signature | None:
    """The ``__init__`` parameters of a dataclass: its annotated fields in order (a value is a
    default; ``field(init=False)`` and ``ClassVar`` are left out); None for another class."""
    if not any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return None
    params: list[_Param] = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if "ClassVar" in ast.unparse(stmt.annotation):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("field"):
            kw = {k.arg: k.value for k in value.keywords}
            init = kw.get("init")
            if isinstance(init, ast.Constant) and init.value is False:
                continue
            default = kw.get("default")
            text = _default_text(default) if default is not None else (
                "..." if "default_factory" in kw else None)
        else:
            text = _default_text(value) if value is not None else None
        params.append(_Param(stmt.target.id, text, False))
    return _Signature(qualified, tuple(params), False, False)


def _imported(index: _Index, func: ast.expr) -> tuple[str, str] | None:
    """``(module, name)`` a call's function comes from through the user's imports."""
    tree = index.tree
    if not isinstance(tree, ast.Module):
        return None
    if isinstance(func, ast.Name):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if (alias.asname or alias.name) == func.id:
                        return node.module, alias.name
        return None
    if isinstance(func, ast.Attribute):
        base = ast.unparse(func.value)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name) == base:
                        return alias.name, func.attr
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:   # `from vime.rollout import sft_rollout`
                    if (alias.asname or alias.name) == base:
                        return f"{node.module}.{alias.name}", func.attr
    return None


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _call_shape(index: _Index, fn: TypedFunction, nodes: Sequence[ast.AST],
                m: MypyMessage) -> tuple[str, str, ast.Call] | None:
    """``(context, fix, call)`` when mypy's message is about a call of one of vime's functions
    (or a method of a contract type such as ``DataSource``) whose arguments do not fit its
    parameters: one missing (a positional shift: ``finalize_rollout_groups(args, groups)``),
    one too many, a keyword it does not take. None for anything else."""
    pattern = {"call-arg": _CALL_SHAPE, "arg-type": _ARG_TYPE,
               "call-overload": _OVERLOAD}.get(m.code or "")
    hit = pattern.search(m.message) if pattern is not None else None
    if hit is None:
        return None
    callee, owner = hit["callee"], hit["owner"]

    def named(n: ast.AST) -> bool:
        if not isinstance(n, ast.Call):
            return False
        if owner is not None:
            return isinstance(n.func, ast.Attribute) and n.func.attr == callee
        source = _imported(index, n.func)
        return source is not None and source[1] == callee

    call = next((n for n in reversed(nodes) if named(n)), None)
    if not isinstance(call, ast.Call):
        return None
    if owner is not None:
        module = type_sources().get(owner)
        sig = _vime_signature(module, callee, owner) if module else None
        where = f"{module}.{owner}"
    else:
        source = _imported(index, call.func)
        sig = _vime_signature(*source, None) if source else None
        where = source[0] if source else ""   # as the user imports it (not a re-export's)
    if sig is None or any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None
    given = [ast.unparse(a) for a in call.args]
    keywords = [k.arg for k in call.keywords if k.arg is not None]
    positional = [p for p in sig.params if not p.keyword_only]
    names = {p.name for p in sig.params}
    covered = {p.name for p in positional[:len(given)]} | set(keywords)
    extra = given[len(positional):] if not sig.star_args else []
    unknown = [k for k in keywords if k not in names] if not sig.star_kwargs else []
    if not ([p for p in sig.params if p.default is None and p.name not in covered]
            or extra or unknown):
        return None
    # what the code means: an argument spelled like a parameter is that parameter's value
    # (`finalize_rollout_groups(args, groups)` gives `groups`, not `rollout_id`); the others
    # fill the remaining positional parameters in order
    by_name = {t for t in given if t in names}
    spare = [t for t in given if t not in names]
    # a keyword a letter or two off a parameter is that parameter misspelt (`metric=`)
    renames = {k: close[0] for k in unknown
               if (close := difflib.get_close_matches(k, sorted(names - set(keywords)), 1, 0.8))}
    bound = set(by_name) | set(keywords) | set(renames.values())
    for p in positional:
        if p.name not in bound and spare:
            bound.add(p.name)
            spare.pop(0)
    missing = [p for p in sig.params if p.default is None and p.name not in bound]
    shifted = [(text, positional[i].name) for i, text in enumerate(given[:len(positional)])
               if text in names and text != positional[i].name]
    problems: list[str] = []
    if missing:
        problems.append("passes no " + ", ".join(f"`{p.name}`" for p in missing))
    if extra:
        problems.append(f"passes {len(given)} positional arguments where it takes "
                        f"{len(positional)}")
    if unknown:
        problems.append("passes " + ", ".join(f"`{k}=`" for k in unknown)
                        + ", which it has no parameter for")
    shift = "; " + ", ".join(f"`{a}` lands in `{p}`" for a, p in shifted) if shifted else ""
    context = (f"the call `{_short_call(call)}` {' and '.join(problems)}{shift}: vime's "
               f"`{sig.text()}` ({where}) raises TypeError on it when the hook runs"
               + _via(fn) + _reached(fn))
    # the fix: every required parameter in its place, by name where the code has the value
    spare = [t for t in given if t not in names]
    args: list[str] = []
    for p in positional:
        if p.name in keywords or p.name in renames.values():
            continue
        if p.name in given:
            args.append(p.name)
        elif spare:
            args.append(spare.pop(0))
        elif p.default is None:
            args.append(p.name)
        else:
            break
    kws = [f"{ast.unparse(k)}" for k in call.keywords if k.arg in names]
    kws += [f"{renames[k.arg]}={ast.unparse(k.value)}" for k in call.keywords
            if k.arg in renames]
    kws += [f"{p.name}={p.name}" for p in missing if p.keyword_only]
    suggestion = f"{ast.unparse(call.func)}({', '.join([*args, *kws])})"
    fix_parts: list[str] = []
    if len(missing) == 1:
        first = missing[0]
        at = next((i for i, p in enumerate(positional) if p.name == first.name), None)
        place = f" as the {_ordinal(at + 1)} argument" if at is not None and not \
            first.keyword_only else " by keyword"
        whose = f"the hook's own `{first.name}`" if first.name in fn.params else \
            f"a value for `{first.name}`"
        fix_parts.append(f"pass {whose}{place}")
    elif missing:
        fix_parts.append("pass a value for each of " + ", ".join(f"`{p.name}`" for p in missing))
    if renames:
        fix_parts.append("rename " + ", ".join(f"`{k}=` to `{v}=`" for k, v in renames.items()))
    dropped = [k for k in unknown if k not in renames]
    if dropped:
        fix_parts.append("drop " + ", ".join(f"`{k}=`" for k in dropped) + " (its parameters: "
                         + ", ".join(p.name for p in sig.params) + ")")
    if extra and not missing:
        fix_parts.append(f"pass only its {len(positional)} positional parameters")
    fix = f"{' and '.join(fix_parts)}: `{suggestion}`"
    return context, fix, call


def _short_call(call: ast.Call, limit: int = 60) -> str:
    text = " ".join(ast.unparse(call).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
