"""What a custom generate function does with the engine's finish reason: where it reads it,
whether it hands it (or the sample) to code the linter cannot see, whether ``status`` gets a
value whose members are not visible, and the ``Sample.Status`` members and string literals it
mentions; over the function and the module's functions it calls. A fact of the semantic model
(:meth:`Semantic.finish_reason_use`), read by VIM009.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from vime.contract import STATUS_VALUES
from vime_lint.static._cst import dotted, string_value
from vime_lint.static.analysis._functions import FunctionFacts

if TYPE_CHECKING:
    from vime_lint.static.analysis import Semantic

__all__ = ["FinishReasonUse", "finish_reason_use"]

_STATUS_NAMES = frozenset(name for name, _ in STATUS_VALUES)
#: Calls that only look at a value (the finish reason passed to them is not a mapping).
_BENIGN_CALLS = frozenset({
    "str", "repr", "print", "len", "isinstance", "bool", "all", "any", "format", "debug", "info",
    "warning",
    "warn", "error", "exception", "critical", "log", "lower", "upper", "strip",
})


def _module_dicts(semantic: Semantic) -> frozenset[str]:
    """Names bound at module level to a dict display (``_STATUS = {"length": ...}``)."""
    return frozenset(name for name, value in semantic.symbols.items()
                     if isinstance(value, cst.Dict))


def _vocabulary(facts: FunctionFacts, members: set[str], literals: set[str]) -> None:
    """Add the status members (``.TRUNCATED``) and string literals ``facts`` mention."""
    members.update(a for a in facts.attributes if a in _STATUS_NAMES)
    literals |= facts.strings


def _with_nested(semantic: Semantic, fn: cst.FunctionDef | cst.Lambda, depth: int = 0
                 ) -> Iterator[FunctionFacts]:
    """The facts of ``fn`` and of the functions and lambdas nested in it."""
    facts = semantic.facts(fn)
    yield facts
    if depth < 8:
        inner: list[cst.FunctionDef | cst.Lambda] = [*facts.nested.values(), *facts.lambdas]
        for fn_inner in inner:
            yield from _with_nested(semantic, fn_inner, depth + 1)


@dataclass(slots=True)
class FinishReasonUse:
    """What a generate function does with the finish reason and with ``status`` (over the
    functions it calls), and the status vocabulary it mentions."""

    #: Finish-reason reads, in source order (the generate function's first, then its helpers').
    reads: list[cst.CSTNode] = field(default_factory=list)
    #: ``append_response_tokens(meta_info=...)`` (or ``update_from_meta_info``) is called.
    meta_info: bool = False
    #: The finish reason or the sample goes into a call the linter cannot see.
    delegated: bool = False
    #: ``status`` is assigned a value whose members are not visible.
    opaque_status: bool = False
    #: ``Sample.Status`` member names mentioned (``.TRUNCATED``).
    members: set[str] = field(default_factory=set)
    #: String literals mentioned (finish reasons, status values).
    literals: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _GenerateFacts:
    """What a generate function (or one of its helpers) does with the finish reason and with
    ``status``."""

    #: Finish-reason reads, in source order.
    reads: list[cst.CSTNode] = field(default_factory=list)
    #: ``append_response_tokens(meta_info=...)`` (or ``update_from_meta_info``) is called.
    meta_info: bool = False
    #: The finish reason or the sample goes into a call the linter cannot see.
    delegated: bool = False
    #: ``status`` is assigned a value whose members are not visible.
    opaque_status: bool = False


def _enclosing_calls(parents: tuple[cst.CSTNode, ...]) -> Iterator[cst.Call]:
    """The calls whose arguments hold a node with these ``parents`` (innermost first)."""
    for i, p in enumerate(parents[:-1]):
        if isinstance(p, cst.Arg) and isinstance(parents[i + 1], cst.Call):
            yield parents[i + 1]  # type: ignore[misc]


def _is_target(node: cst.CSTNode, parents: tuple[cst.CSTNode, ...]) -> bool:
    """True when ``node`` is what an assignment stores into (not a read)."""
    if not parents:
        return False
    first = parents[0]
    return isinstance(first, cst.AssignTarget) or (
        isinstance(first, (cst.AnnAssign, cst.AugAssign)) and first.target is node)


def _generate_facts(facts: FunctionFacts, sample_param: str | None, helpers: frozenset[str],
                    dicts: frozenset[str]) -> _GenerateFacts:
    """Read one function's facts (the semantic model's) for the finish reason."""
    out = _GenerateFacts()

    def opaque_call(call: cst.Call) -> bool:
        last = (dotted(call.func) or "").rpartition(".")[2]
        if last in _BENIGN_CALLS:
            return False
        return not (isinstance(call.func, cst.Name) and call.func.value in helpers)

    def constant_status(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Attribute):
            return value.attr.value in _STATUS_NAMES
        if isinstance(value, cst.IfExp):
            return constant_status(value.body) and constant_status(value.orelse)
        if isinstance(value, cst.Subscript):
            return isinstance(value.value, cst.Name) and value.value.value in dicts
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "get":
            return isinstance(value.func.value, cst.Name) and value.func.value.value in dicts
        return string_value(value) is not None

    reads: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
    reads += facts.subscripts.get("finish_reason", [])
    reads += facts.attributes.get("finish_reason", [])
    for site in facts.calls:
        call = site.node
        func = call.func
        if isinstance(func, cst.Attribute) and (
                func.attr.value in ("update_from_meta_info", "_apply_meta_info")
                or (func.attr.value == "append_response_tokens" and any(
                    a.keyword is not None and a.keyword.value == "meta_info"
                    and not (isinstance(a.value, cst.Name) and a.value.value == "None")
                    for a in call.args))):
            out.meta_info = True
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and call.args \
                and string_value(call.args[0].value) == "finish_reason":
            reads.append((call, site.parents))
    reads.sort(key=lambda r: facts.order.get(id(r[0]), 0))
    reason_names: set[str] = set()
    for node, parents in reads:
        if _is_target(node, parents):
            continue
        out.reads.append(node)
        if any(opaque_call(c) for c in _enclosing_calls(parents)):
            out.delegated = True
        assign = next((p for p in parents if isinstance(p, (cst.Assign, cst.AnnAssign))), None)
        if isinstance(assign, cst.Assign):
            reason_names |= {t.target.value for t in assign.targets
                             if isinstance(t.target, cst.Name)}
        elif isinstance(assign, cst.AnnAssign) and isinstance(assign.target, cst.Name):
            reason_names.add(assign.target.value)
    for name in reason_names:
        for parents in facts.name_uses.get(name, ()):
            if any(opaque_call(c) for c in _enclosing_calls(parents)):
                out.delegated = True
    if sample_param is not None:
        for parents in facts.name_uses.get(sample_param, ()):
            # The sample itself handed to code the linter cannot see (which may set status).
            if len(parents) >= 2 and isinstance(parents[0], cst.Arg) \
                    and isinstance(parents[1], cst.Call) and opaque_call(parents[1]):
                out.delegated = True
    for store in facts.attr_stores:
        if store.attr == "status" and isinstance(store.node, cst.Attribute) \
                and store.value is not None and not constant_status(store.value):
            out.opaque_status = True
    return out


def _sample_param(fn: cst.FunctionDef) -> str | None:
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if "sample" in params:
        return "sample"
    return params[1] if len(params) >= 2 else None


def finish_reason_use(semantic: Semantic, fn: cst.FunctionDef) -> FinishReasonUse:
    """What generate function ``fn`` and the module's functions it calls
    (:meth:`Semantic.closure`) do with the finish reason and with ``status``, and the status
    members and string literals they (their nested functions and lambdas, the module's
    constants) mention."""
    closure = semantic.closure(fn)
    helpers = frozenset(f.name.value for f in closure)
    dicts = _module_dicts(semantic)
    use = FinishReasonUse()
    for i, f in enumerate(closure):
        facts = _generate_facts(semantic.facts(f), _sample_param(fn) if i == 0 else None,
                                helpers, dicts)
        for part in _with_nested(semantic, f):
            _vocabulary(part, use.members, use.literals)
        use.reads += facts.reads
        use.meta_info |= facts.meta_info
        use.delegated |= facts.delegated
        use.opaque_status |= facts.opaque_status
    for part in semantic.module_constants():
        _vocabulary(part, use.members, use.literals)
    return use
