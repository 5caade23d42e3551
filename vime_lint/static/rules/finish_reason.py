"""A custom generate function maps the engine's finish reason to ``status``: VIM009.

:class:`UnmappedFinishReason` looks at the generate function together with the module-level
helpers it calls (:meth:`~vime_lint.static.analysis.Semantic.closure`). The finish-reason
mapping comes from ``vime.contract.FINISH_REASON_STATUS``; nothing is copied here.

See ``docs/contract.md`` §2 (``append_response_tokens(meta_info=...)``), §8 (vLLM's
``finish_reason``) and §6a.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from vime.contract import FINISH_REASON_STATUS, INVARIANTS, STATUS_VALUES
from vime_lint.static._cst import dotted, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import FunctionFacts, Semantic
from vime_lint.static.rules._samples import SAMPLE_IMPORT, STATUS_BY_VALUE

__all__ = ["UnmappedFinishReason"]

_GENERATE_DESTS = ("custom_generate_function_path",)
_STATUS_NAMES = frozenset(name for name, _ in STATUS_VALUES)
#: The status members a generate function must reach from the finish reason (VIM009).
_REQUIRED = ("TRUNCATED", "ABORTED")
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


def _covered(members: set[str], literals: set[str]) -> set[str]:
    """Status members reached: named, or named by a finish-reason / status literal."""
    out = set(members)
    for lit in literals:
        if lit in FINISH_REASON_STATUS:
            out.add(FINISH_REASON_STATUS[lit])
        if lit in STATUS_BY_VALUE:
            out.add(STATUS_BY_VALUE[lit])
    return out


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


class UnmappedFinishReason(FunctionTracker):
    """A custom generate function that reads the finish reason maps it to ``status``.

    ## What it does
    In a ``--custom-generate-function-path`` function (and the module-level helpers it calls),
    reports the first read of the engine's finish reason (``out["finish_reason"]``,
    ``choice.get("finish_reason")``, ``result.finish_reason``) when the code never reaches
    ``Sample.Status.TRUNCATED`` (from ``"length"``) or ``Sample.Status.ABORTED`` (from
    ``"abort"``), and never passes ``meta_info`` to ``append_response_tokens``, which does
    the mapping. Runtime twin: VIM111.

    ## Why is this bad?
    A response cut by the token budget or aborted by the rollout then stays COMPLETED (or
    PENDING): it is rewarded and trained as a finished answer, and an aborted partial
    rollout is never resumed (failure kind: "status not set from finish reason").

    ## Known problems
    To stay precise the rule is quiet when it cannot see the mapping: when the finish reason
    or the sample is passed to a function of another module, when ``status`` is assigned
    something other than a ``Sample.Status`` member (a call, a variable), or when the module
    names both members anywhere in the generate function, its helpers or its constants.

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        out = await post(url, payload)
        choice = out["choices"][0]
        sample.append_response_tokens(args, tokens=choice["token_ids"], log_probs=lps)
        if choice["finish_reason"] == "stop":
            sample.status = Sample.Status.COMPLETED
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        out = await post(url, payload)
        choice = out["choices"][0]
        sample.append_response_tokens(
            args, tokens=choice["token_ids"], log_probs=lps,
            meta_info={"finish_reason": {"type": choice["finish_reason"]}})
        return sample
    ```

    ## Fix safety
    No fix: where the status should be set is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM009"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def generate(args, sample, sampling_params):\n"
              "    choice = (await post(url, sampling_params))['choices'][0]\n"
              "    sample.append_response_tokens(args, tokens=choice['token_ids'], log_probs=lp,\n"
              "        meta_info={'finish_reason': {'type': choice['finish_reason']}})\n"
              "    return sample\n"),
        Valid(SAMPLE_IMPORT + "async def generate(args, sample, sampling_params):\n"
              "    reason = (await post(url, sampling_params))['finish_reason']\n"
              "    if reason == 'length':\n"
              "        sample.status = Sample.Status.TRUNCATED\n"
              "    elif reason == 'abort':\n"
              "        sample.status = Sample.Status.ABORTED\n"
              "    else:\n"
              "        sample.status = Sample.Status.COMPLETED\n"
              "    return sample\n"),
        Valid(SAMPLE_IMPORT + "_STATUS = {'length': Sample.Status.TRUNCATED,\n"
              "           'abort': Sample.Status.ABORTED}\n"
              "async def generate(args, sample, sampling_params):\n"
              "    out = await post(url, sampling_params)\n"
              "    sample.status = _STATUS.get(out['finish_reason'], Sample.Status.COMPLETED)\n"
              "    return sample\n"),
        Valid("from my_lib import status_from\n"
              "async def generate(args, sample, sampling_params):\n"
              "    out = await post(url, sampling_params)\n"
              "    sample.status = status_from(out['finish_reason'])\n"
              "    return sample\n"),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    out = await post(url, sampling_params)\n"
              "    finish(sample, out)\n    log(out['finish_reason'])\n    return sample\n"),
        Valid("def helper(out):\n    return out['finish_reason']\n"),
        # An instance's __call__ under an aliased import, the reasons read in comprehensions.
        Valid("from vime.utils.types import Sample as S\n"
              "class Generate:\n"
              "    async def __call__(self, args, sample, sampling_params):\n"
              "        outs = [await post(url, sampling_params) for _ in range(2)]\n"
              "        reasons = [o['finish_reason'] for o in outs]\n"
              "        if any(r == 'abort' for r in reasons):\n"
              "            sample.status = S.Status.ABORTED\n"
              "        elif any(r == 'length' for r in reasons):\n"
              "            sample.status = S.Status.TRUNCATED\n"
              "        else:\n"
              "            sample.status = S.Status.COMPLETED\n"
              "        return sample\n"
              "generate = Generate()\n"),
    ]
    INVALID = [
        Invalid(SAMPLE_IMPORT + "async def generate(args, sample, sampling_params):\n"
                "    choice = (await post(url, sampling_params))['choices'][0]\n"
                "    sample.append_response_tokens(args, tokens=choice['token_ids'], "
                "log_probs=lp)\n"
                "    if choice['finish_reason'] == 'stop':\n"
                "        sample.status = Sample.Status.COMPLETED\n"
                "    return sample\n", line=5, col=7),
        Invalid(SAMPLE_IMPORT + "async def generate(args, sample, sampling_params):\n"
                "    out = await post(url, sampling_params)\n"
                "    reason = out['choices'][0]['finish_reason']\n"
                "    sample.status = (Sample.Status.TRUNCATED if reason == 'length'\n"
                "                     else Sample.Status.COMPLETED)\n"
                "    return sample\n", line=4, col=13),
        Invalid(SAMPLE_IMPORT + "async def _turn(sample, out):\n"
                "    sample.status = Sample.Status.COMPLETED\n"
                "    return out.finish_reason\n"
                "async def my_generate(args, sample, sampling_params):\n"
                "    await _turn(sample, await post(url, sampling_params))\n"
                "    return sample\n", line=4, col=11,
                options={"hooks": {"my_generate": "custom_generate_function_path"}}),
        # Read in a generator under all(), which only looks at the value: length never mapped.
        Invalid("from vime.utils.types import Sample\n"
                "async def generate(args, sample, sampling_params):\n"
                "    outs = [await post(url, sampling_params) for _ in range(2)]\n"
                "    done = all(o['finish_reason'] == 'stop' for o in outs)\n"
                "    sample.status = Sample.Status.COMPLETED if done else Sample.Status.ABORTED\n"
                "    return sample\n", line=4, col=15),
        # An instance's __call__, aliased import, a local alias of the sample.
        Invalid("from vime.utils.types import Sample as S\n"
                "class Generate:\n"
                "    async def __call__(self, args, sample, sampling_params):\n"
                "        out = await post(url, sampling_params)\n"
                "        cur = sample\n"
                "        cur.status = S.Status.COMPLETED if out['finish_reason'] == 'stop' else S.Status.ABORTED\n"
                "        return cur\n"
                "generate = Generate()\n", line=6, col=43),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _GENERATE_DESTS:
            return
        closure = self.context.semantic.closure(node)
        helpers = frozenset(f.name.value for f in closure)
        semantic = self.context.semantic
        dicts = _module_dicts(semantic)
        members: set[str] = set()
        literals: set[str] = set()
        reads: list[cst.CSTNode] = []
        meta_info = delegated = opaque = False
        for i, fn in enumerate(closure):
            facts = _generate_facts(semantic.facts(fn), _sample_param(node) if i == 0 else None,
                                    helpers, dicts)
            for part in _with_nested(semantic, fn):
                _vocabulary(part, members, literals)
            reads += facts.reads
            meta_info |= facts.meta_info
            delegated |= facts.delegated
            opaque |= facts.opaque_status
        if not reads or meta_info or delegated or opaque:
            return
        for part in semantic.module_constants():
            _vocabulary(part, members, literals)
        missing = [m for m in _REQUIRED if m not in _covered(members, literals)]
        if not missing:
            return
        reasons = {m: sorted(r for r, s in FINISH_REASON_STATUS.items() if s == m)[0]
                   for m in missing}
        what = " or ".join(f"`{reasons[m]}` -> {m}" for m in missing)
        self.report(reads[0], self.INVARIANT.render(
            name=binding.function,
            problem=f"reads the finish reason but never maps {what}"))
