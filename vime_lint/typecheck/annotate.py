"""Give a module's hooks the contract's annotations, without moving any line.

A LibCST transformer edits only the ``def`` line(s) of each hook: an unannotated parameter gets
the contract's type (``sample: "Sample"``), an unannotated return the contract's return type.
The names those annotations use are imported, under ``_vime_t_`` aliases, by lines appended
after the user's last line, so every line of the user's code keeps its number. The
annotations are quoted, so they may name what the appended lines import.

A user annotation is kept, except ``Any`` and ``object`` (wider than any contract type: the
contract's replaces them). When the user's annotation is not the contract's own text, two
*probe* functions are appended that check, under mypy, whether it is narrower or wider than the
contract's type; when both fail the annotation conflicts with the contract (VIM203); when only
the narrower check fails it is wider, and a second pass (``wider=``) puts the contract's type
in its place.

Every function the samples reach: a module-level helper that a hook calls with one of its
contract-typed parameters (``_score(sample)``, ``_score(s=sample)``) gets that type for the
matching unannotated parameter, when every such call site agrees, and so on through the
helpers it calls (up to ``_DEPTH`` calls deep). A helper whose own annotations name a contract
type (``_fill(sample: Sample)``, ``groups: list[list[Sample]]``) is checked with them. Each
helper records the hooks that reach it (``TypedFunction.reached_from``), which its findings
name.

Usage::

    plan = annotate(source, {"reward_func": HOOKS["custom_rm_path"]})
    plan.text                         # the copy to type-check (same line numbers up to the tail)
    plan.functions[0].params          # {"args": TypedParam(...), "sample": TypedParam(...)}

Built on LibCST's ``CSTTransformer`` and ``PositionProvider``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from vime.contract import HookSpec
from vime_lint.typecheck.contract_types import (
    ALIAS_PREFIX,
    LAUNCH_FIELDS,
    WIDE_TYPES,
    aliased,
    hook_types,
    import_lines,
    launch_sample,
)
from vime_lint.typecheck.plan import AnnotationPlan, Probe, TypedFunction, TypedParam
from vime_lint.typecheck.seeds import Seeds

__all__ = ["annotate"]

#: How many calls deep types follow the samples from a hook into the module's helpers.
_DEPTH = 4
#: The first line appended to the copy (after the user's last line).
TAIL_MARK = "# --- vime-lint types: the contract's names and probes (not in the user's file) ---"


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class _Short(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return ast.copy_location(ast.Name(node.attr, ast.Load()), node)


def _normal(text: str) -> str:
    """Annotation text compared loosely: quotes dropped, ``a.b.C`` read as ``C``."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        if isinstance(tree.body, ast.Constant) and isinstance(tree.body.value, str):
            tree = ast.parse(tree.body.value.strip(), mode="eval")
        return ast.unparse(_Short().visit(tree))
    except SyntaxError:
        return text.strip()


def _names_contract(annotation: str) -> bool:
    """Whether an annotation's text names a type of the contract (``Sample``,
    ``list[list[Sample]]``, ``RolloutFnTrainOutput``, ``"Sample"`` quoted)."""
    from vime_lint.typecheck.contract_types import type_sources

    names = {n for n, mod in type_sources().items() if mod.startswith("vime")}
    return bool(set(re.findall(r"\b\w+\b", annotation)) & names)


def _quoted(text: str) -> cst.Annotation:
    return cst.Annotation(cst.SimpleString(repr(text) if '"' in text else f'"{text}"'))


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    return out


def _positional(params: cst.Parameters) -> list[cst.Param]:
    return [*params.posonly_params, *params.params]


@dataclass
class _Edit:
    node: cst.FunctionDef
    name: str
    spec: HookSpec | None
    protocol: str
    #: param name -> (contract text, origin)
    wanted: dict[str, tuple[str, str]]
    returns: str | None


class _Apply(cst.CSTTransformer):
    def __init__(self, edits: Mapping[cst.FunctionDef, cst.FunctionDef]) -> None:
        super().__init__()
        self.edits = edits

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        new = self.edits.get(original_node)
        if new is None:
            return updated_node
        return updated_node.with_changes(params=new.params, returns=new.returns)


def _hook_defs(module: cst.Module, hooks: Mapping[str, HookSpec]) -> list[
        tuple[str, cst.FunctionDef, HookSpec, bool]]:
    """``(name, def, spec, is_class_init)`` for each module-level hook definition."""
    out: list[tuple[str, cst.FunctionDef, HookSpec, bool]] = []
    last: dict[str, cst.FunctionDef | cst.ClassDef] = {}
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            last[stmt.name.value] = stmt
    for name, spec in hooks.items():
        node = last.get(name)
        if isinstance(node, cst.FunctionDef) and spec.kind == "function":
            out.append((name, node, spec, False))
        elif isinstance(node, cst.ClassDef) and spec.kind == "class" and isinstance(
                node.body, cst.IndentedBlock):
            for item in node.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
                    out.append((name, item, spec, True))
    return out


class _Calls(cst.CSTVisitor):
    """Calls ``helper(...)`` of module-level helpers, with the arguments that are bare names."""

    def __init__(self, helpers: Mapping[str, cst.FunctionDef]) -> None:
        super().__init__()
        self.helpers = helpers
        self.calls: list[tuple[str, list[tuple[int | str, str]]]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Name) or node.func.value not in self.helpers:
            return
        args: list[tuple[int | str, str]] = []
        pos = 0
        for a in node.args:
            if a.star:
                break
            if a.keyword is not None:
                if isinstance(a.value, cst.Name):
                    args.append((a.keyword.value, a.value.value))
                continue
            if isinstance(a.value, cst.Name):
                args.append((pos, a.value.value))
            pos += 1
        self.calls.append((node.func.value, args))


def _wanted(fn: cst.FunctionDef, spec: HookSpec, types: Mapping[str, str], protocol: str, *,
            skip_self: bool) -> dict[str, tuple[str, str]]:
    """The user's parameter name -> (contract type, origin). The call site passes
    ``spec.positional`` by position, so the i-th positional parameter gets the i-th type
    whatever its name (a stale ``data_buffer`` is the data source); the others go by name."""
    out = {n: (t, protocol) for n, t in types.items() if n not in spec.positional}
    positional = _positional(fn.params)[1 if skip_self else 0:]
    # strict=False: a definition may take fewer positional parameters (``**kwargs``) or more
    for param, contract in zip(positional, spec.positional, strict=False):
        name = param.name.value
        origin = protocol if name == contract else f"{protocol}, passed as `{contract}`"
        out[name] = (types[contract], origin)
    return out




def annotate(source: str, hooks: Mapping[str, HookSpec], *,
             wider: frozenset[tuple[str, str]] = frozenset(),
             seeds: Seeds | None = None,
             launch_types: Mapping[str, frozenset[str]] | None = None) -> AnnotationPlan:
    """Annotate the hooks ``hooks`` (module-level name -> spec) of ``source``.

    ``wider`` names user annotations (``(function, parameter or "return")``) that a first run's
    probes found wider than the contract's type: the contract's replaces them (the user's
    annotation wins only where it is narrower). ``seeds`` types helpers of this module that
    hooks of other modules call with their samples (:func:`vime_lint.typecheck.seeds.imported_calls`).
    ``launch_types`` (hook -> kinds of :data:`~vime_lint.typecheck.contract_types.LAUNCH_FIELDS`) says what the launches naming a
    hook fix: its ``Sample`` parameters get a subclass whose fields are narrowed (``prompt:
    str`` with ``--apply-chat-template``, ``reward: float | None`` without ``--reward-key``).

    Returns:
        An :class:`AnnotationPlan` whose ``text`` has the user's lines at the same numbers
        (only ``def`` lines change) followed by the appended tail.

    Raises:
        libcst.ParserSyntaxError: ``source`` is not valid Python.
    """
    from vime_lint.static._guard import parse_module  # LibCST's parser on a large stack

    module = parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    names: set[str] = set()
    edits: dict[cst.FunctionDef, cst.FunctionDef] = {}
    functions: list[TypedFunction] = []
    probe_specs: list[tuple[str, str, str, str, str, cst.CSTNode]] = []
    hook_defs = _hook_defs(module, hooks)
    hook_names = {n for n, *_ in hook_defs}
    helpers = {s.name.value: s for s in module.body
               if isinstance(s, cst.FunctionDef) and s.name.value not in hook_names}
    propagated: dict[tuple[str, str], set[tuple[str, str]]] = {}

    def use(text: str) -> str:
        alias, used = aliased(text)
        names.update(used)
        return alias

    def typed(fn: cst.FunctionDef, wanted: Mapping[str, tuple[str, str]], returns: str | None,
              protocol: str, owner: str) -> tuple[cst.FunctionDef, dict[str, TypedParam],
                                                  str | None]:
        new_params: dict[int, cst.Param] = {}
        kept: dict[str, TypedParam] = {}
        plist = _all_params(fn.params)
        for i, p in enumerate(plist):
            want = wanted.get(p.name.value)
            if want is None:
                continue
            contract, origin = want
            if p.annotation is None or _normal(_code(p.annotation.annotation)) in WIDE_TYPES or (
                    owner, p.name.value) in wider:
                new_params[i] = p.with_changes(annotation=_quoted(use(contract)))
                kept[p.name.value] = TypedParam(p.name.value, contract, origin)
                continue
            user = _code(p.annotation.annotation)
            kept[p.name.value] = TypedParam(p.name.value, user, "user annotation")
            if _normal(user) != _normal(contract):
                probe_specs.append((owner, p.name.value, user, contract, protocol,
                                    p.annotation.annotation))
        ret_node = fn.returns
        ret_type: str | None = None
        if returns is not None:
            if fn.returns is None or _normal(_code(fn.returns.annotation)) in WIDE_TYPES or (
                    owner, "return") in wider:
                ret_node = _quoted(use(returns))
                ret_type = returns
            else:
                user = _code(fn.returns.annotation)
                ret_type = user
                if _normal(user) != _normal(returns):
                    probe_specs.append((owner, "return", user, returns, protocol,
                                        fn.returns.annotation))

        def swap(seq: Sequence[cst.Param], offset: int) -> list[cst.Param]:
            return [new_params.get(offset + j, q) for j, q in enumerate(seq)]

        ps = fn.params
        n_pos, n_par = len(ps.posonly_params), len(ps.params)
        new_ps = ps.with_changes(
            posonly_params=swap(ps.posonly_params, 0), params=swap(ps.params, n_pos),
            kwonly_params=swap(ps.kwonly_params, n_pos + n_par))
        return fn.with_changes(params=new_ps, returns=ret_node), kept, ret_type

    def record(name: str, fn: cst.FunctionDef, spec: HookSpec | None,
               params: dict[str, TypedParam], returns: str | None, protocol: str,
               reached_from: tuple[str, ...] = ()) -> None:
        rng = positions[fn]
        functions.append(TypedFunction(
            name=name, spec=spec, start_line=rng.start.line, end_line=rng.end.line,
            def_line=positions[fn.name].start.line, name_col=positions[fn.name].start.column,
            params=params, returns=returns, protocol=protocol, reached_from=reached_from))

    #: Functions whose calls give types to helpers: (name, def, typed params, hooks reaching it).
    callers: dict[str, tuple[cst.FunctionDef, dict[str, TypedParam], frozenset[str]]] = {}
    for name, fn, spec, is_init in hook_defs:
        types = hook_types(spec)
        wanted = _wanted(fn, spec, types.params, types.protocol, skip_self=is_init)
        kinds = (launch_types or {}).get(name, frozenset())
        if kinds:
            why = "; ".join(LAUNCH_FIELDS[k][2] for k in sorted(kinds))
            for pname, (t, origin) in list(wanted.items()):
                if t == "Sample":  # not list[Sample]: a list of a subclass is no list[Sample]
                    wanted[pname] = (launch_sample(kinds), f"{origin}; {why}")
        new, params, ret = typed(fn, wanted, None if is_init else types.returns,
                                 types.protocol, name)
        edits[fn] = new
        record(name, fn, spec, params, ret, types.protocol)
        callers[name] = (fn, params, frozenset({name}))
    # Helpers whose own annotations name a contract type (`_fill(sample: Sample)`): checked
    # with those annotations, whether or not a hook is seen calling them.
    annotated: dict[str, dict[str, TypedParam]] = {}
    for hname, hp in helpers.items():
        ps = {q.name.value: TypedParam(q.name.value, _code(q.annotation.annotation),
                                       "its own annotation")
              for q in _all_params(hp.params)
              if q.annotation is not None and _names_contract(_code(q.annotation.annotation))}
        if ps:
            annotated[hname] = ps
            callers[hname] = (hp, ps, frozenset())
    # Every function the samples reach: helpers called with a typed parameter (bare name), by a
    # hook or by a helper that got types this way, up to _DEPTH calls deep.
    reach: dict[str, set[str]] = {}
    for helper, (keys, from_hooks) in (seeds or {}).items():
        if helper not in helpers:
            continue
        reach.setdefault(helper, set()).update(from_hooks)
        for key, (t, origin) in keys.items():
            positional = _positional(helpers[helper].params)
            seeded = (positional[key] if isinstance(key, int) and key < len(positional) else
                      next((q for q in _all_params(helpers[helper].params)
                            if q.name.value == key), None))
            if seeded is not None and seeded.annotation is None:
                propagated.setdefault((helper, seeded.name.value), set()).add((t, origin))
    for _ in range(_DEPTH):
        changed = False
        for caller, (fn, params, hooks_of) in list(callers.items()):
            calls = _Calls(helpers)
            fn.body.visit(calls)
            for helper, args in calls.calls:
                hp = helpers[helper]
                positional = _positional(hp.params)
                for key, arg_name in args:
                    tp = params.get(arg_name)
                    if tp is None or tp.type in WIDE_TYPES:
                        continue
                    target: cst.Param | None
                    if isinstance(key, int):
                        target = positional[key] if key < len(positional) else None
                    else:
                        target = next((q for q in _all_params(hp.params)
                                       if q.name.value == key), None)
                    if target is None:
                        continue
                    reached = reach.setdefault(helper, set())
                    if not hooks_of <= reached:
                        reached |= hooks_of
                        changed = True
                    if target.annotation is not None:
                        continue
                    via = (tp.type, f"{tp.origin}, via {caller}({arg_name})"
                           if tp.origin != "its own annotation" else
                           f"{caller}'s annotation, via {caller}({arg_name})")
                    found = propagated.setdefault((helper, target.name.value), set())
                    if via[0] not in {t for t, _ in found}:
                        changed = True
                    found.add(via)
        for (helper, pname), found in propagated.items():
            if len({t for t, _ in found}) == 1:  # every call site agrees
                t, origin = sorted(found)[0]
                _fn, ps, _h = callers.get(helper, (helpers[helper], {}, frozenset()))
                ps = dict(ps)
                ps.setdefault(pname, TypedParam(pname, t, origin))
                callers[helper] = (helpers[helper], ps, frozenset(reach.get(helper, ())))
        for helper, reached in reach.items():
            if helper in callers:
                fn, ps, _h = callers[helper]
                callers[helper] = (fn, ps, frozenset(reached))
        if not changed:
            break
    per_helper: dict[str, dict[str, tuple[str, str]]] = {}
    for (helper, pname), found in propagated.items():
        if len({t for t, _ in found}) == 1:
            per_helper.setdefault(helper, {})[pname] = sorted(found)[0]
    for helper in sorted(set(per_helper) | set(annotated)):
        hp = helpers[helper]
        wanted = per_helper.get(helper, {})
        new, params, _ = typed(hp, wanted, None, "", helper)
        params = {**annotated.get(helper, {}), **params}
        if wanted:
            edits[hp] = new
        origins = sorted({o for _, o in wanted.values()} | (
            {"its own annotations"} if helper in annotated else set()))
        record(helper, hp, None, params, None, ", ".join(origins),
               tuple(sorted(reach.get(helper, ()))))
    copy = module.visit(_Apply(edits)) if edits else module
    text = copy.code
    if not text.endswith("\n"):
        text += "\n"
    user_lines = text.count("\n")
    aliases = [use(contract) for (_o, _w, _u, contract, _p, _n) in probe_specs]
    used = {n for n, *_ in hook_defs}  # the hooks of this module (their probes may name them)
    subclasses = {launch_sample(ks) for h, ks in (launch_types or {}).items()
                  if ks and h in used}
    if subclasses:
        names.add("Sample")
    tail = [TAIL_MARK, *import_lines(names)]
    for kinds in sorted({ks for ks in (launch_types or {}).values() if ks}, key=sorted):
        if launch_sample(kinds) in subclasses:
            tail.append(f"class {launch_sample(kinds)}({ALIAS_PREFIX}Sample):")
            tail += [f"    {LAUNCH_FIELDS[k][0]}: {LAUNCH_FIELDS[k][1]}" for k in sorted(kinds)]
    probes: list[Probe] = []
    for i, (owner, what, user, contract, protocol, node) in enumerate(probe_specs):
        rng = positions[node]
        first = user_lines + len(tail) + 1
        # narrower: a value of the user's type is a contract value; wider: the reverse
        tail.append(f"def _vime_probe_{i}n(_x: {user}) -> {aliases[i]!r}: return _x")
        tail.append(f"def _vime_probe_{i}w(_x: {aliases[i]!r}) -> {user}: return _x")
        probes.append(Probe(first, first + 1, owner, what, user, contract, protocol,
                            rng.start.line, rng.start.column, rng.end.line, rng.end.column))
    return AnnotationPlan(text + "\n".join(tail) + "\n", tuple(functions), tuple(probes),
                          user_lines)
