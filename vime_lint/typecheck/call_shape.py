"""A call of one of vime's functions whose arguments do not fit its parameters, as one VIM201 at the call.

Said in the contract's words: what the call does not pass (the argument that lands in its
place), vime's signature (:mod:`vime_lint.typecheck.signatures`), the call to write. mypy's
sentences about the call (``call-arg``, ``arg-type``, ``call-overload``) are merged into it.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Sequence

from vime_lint.typecheck.contract_context import reached, via
from vime_lint.typecheck.contract_types import type_sources
from vime_lint.typecheck.plan import TypedFunction
from vime_lint.typecheck.run import MypyMessage
from vime_lint.typecheck.signatures import vime_signature
from vime_lint.typecheck.source_index import SourceIndex

__all__ = ["call_shape"]


#: mypy's sentences about a call's shape (``call-arg``) and the callee they name.
_CALL_SHAPE = re.compile(
    r'(?:Missing positional arguments? .* in call to|Too few arguments for|Too many (?:positional )?'
    r'arguments for|Unexpected keyword argument "\w+" for|Missing named argument "\w+" for) '
    r'"(?P<callee>\w+)"(?: of "(?P<owner>\w+)")?')


_ARG_TYPE = re.compile(r'Argument \d+ to "(?P<callee>\w+)"(?: of "(?P<owner>\w+)")? has '
                       r'incompatible type')


_OVERLOAD = re.compile(r'No overload variant of "(?P<callee>\w+)"(?: of "(?P<owner>\w+)")? '
                       r'matches')


def _imported(index: SourceIndex, func: ast.expr) -> tuple[str, str] | None:
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


def call_shape(index: SourceIndex, fn: TypedFunction, nodes: Sequence[ast.AST],
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
        sig = vime_signature(module, callee, owner) if module else None
        where = f"{module}.{owner}"
    else:
        source = _imported(index, call.func)
        sig = vime_signature(*source, None) if source else None
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
               + via(fn) + reached(fn))
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
