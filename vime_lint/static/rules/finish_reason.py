"""A custom generate function maps the engine's finish reason to ``status``: VIM009.

:class:`UnmappedFinishReason` looks at the generate function together with the module-level
helpers it calls (:meth:`~vime_lint.static.analysis.Semantic.closure`). The finish-reason
mapping comes from ``vime.contract.FINISH_REASON_STATUS``; nothing is copied here.

See ``docs/contract.md`` §2 (``append_response_tokens(meta_info=...)``), §8 (vLLM's
``finish_reason``) and §6a.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vime.contract import FINISH_REASON_STATUS, INVARIANTS, STATUS_VALUES
from vime_lint.static._cst import dotted, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.rules._samples import SAMPLE_IMPORT, STATUS_BY_VALUE

__all__ = ["UnmappedFinishReason"]

_GENERATE_DESTS = ("custom_generate_function_path",)
_STATUS_NAMES = frozenset(name for name, _ in STATUS_VALUES)
#: The status members a generate function must reach from the finish reason (VIM009).
_REQUIRED = ("TRUNCATED", "ABORTED")
#: Calls that only look at a value (the finish reason passed to them is not a mapping).
_BENIGN_CALLS = frozenset({
    "str", "repr", "print", "len", "isinstance", "bool", "format", "debug", "info", "warning",
    "warn", "error", "exception", "critical", "log", "lower", "upper", "strip",
})


def _skip_nested(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.ClassDef, cst.Lambda))


def _module_constants(context: FileContext) -> Iterator[cst.CSTNode]:
    """Module-level statements other than ``def``/``class`` (constants, mapping tables)."""
    for stmt in context.module.body:
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            yield stmt


def _module_dicts(context: FileContext) -> frozenset[str]:
    """Names bound at module level to a dict display (``_STATUS = {"length": ...}``)."""
    names: set[str] = set()
    for stmt in context.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and isinstance(small.value, cst.Dict):
                    names |= {t.target.value for t in small.targets
                              if isinstance(t.target, cst.Name)}
                elif isinstance(small, cst.AnnAssign) and isinstance(small.value, cst.Dict) \
                        and isinstance(small.target, cst.Name):
                    names.add(small.target.value)
    return frozenset(names)


def _is_finish_reason_read(node: cst.CSTNode) -> bool:
    """``x["finish_reason"]``, ``x.get("finish_reason", ...)`` or ``x.finish_reason``."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        sl = node.slice[0].slice
        return isinstance(sl, cst.Index) and string_value(sl.value) == "finish_reason"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value == "get" and node.args:
        return string_value(node.args[0].value) == "finish_reason"
    return isinstance(node, cst.Attribute) and node.attr.value == "finish_reason"


class _Vocabulary(cst.CSTVisitor):
    """Status members and string literals mentioned in a subtree."""

    def __init__(self) -> None:
        super().__init__()
        self.members: set[str] = set()
        self.literals: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _STATUS_NAMES:
            self.members.add(node.attr.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        value = string_value(node)
        if value is not None:
            self.literals.add(value)

    def covered(self) -> set[str]:
        """Status members reached: named, or named by a finish-reason / status literal."""
        out = set(self.members)
        for lit in self.literals:
            if lit in FINISH_REASON_STATUS:
                out.add(FINISH_REASON_STATUS[lit])
            if lit in STATUS_BY_VALUE:
                out.add(STATUS_BY_VALUE[lit])
        return out


class _GenerateFacts(cst.CSTVisitor):
    """One walk of a generate function (or one of its helpers): what it does with the finish
    reason and with ``status``."""

    def __init__(self, sample_param: str | None, helpers: frozenset[str],
                 dicts: frozenset[str]) -> None:
        super().__init__()
        self.sample_param = sample_param
        self.helpers = helpers
        self.dicts = dicts
        #: Finish-reason reads, in source order.
        self.reads: list[cst.CSTNode] = []
        #: Names bound from a finish-reason read.
        self.reason_names: set[str] = set()
        #: ``append_response_tokens(meta_info=...)`` (or ``update_from_meta_info``) is called.
        self.meta_info = False
        #: The finish reason or the sample goes into a call the linter cannot see.
        self.delegated = False
        #: ``status`` is assigned a value whose members are not visible.
        self.opaque_status = False
        self._calls: list[cst.Call] = []
        self._args: list[cst.Call] = []
        self._targets: set[int] = set()

    def _opaque_call(self, call: cst.Call) -> bool:
        name = dotted(call.func) or ""
        last = name.rpartition(".")[2]
        if last in _BENIGN_CALLS:
            return False
        return not (isinstance(call.func, cst.Name) and call.func.value in self.helpers)

    def _passed_on(self) -> bool:
        return any(self._opaque_call(c) for c in self._args)

    def _constant_status(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Attribute):
            return value.attr.value in _STATUS_NAMES
        if isinstance(value, cst.IfExp):
            return self._constant_status(value.body) and self._constant_status(value.orelse)
        if isinstance(value, cst.Subscript):
            return isinstance(value.value, cst.Name) and value.value.value in self.dicts
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "get":
            return isinstance(value.func.value, cst.Name) and value.func.value.value in self.dicts
        return string_value(value) is not None

    def visit_Assign(self, node: cst.Assign) -> None:
        reason = _contains_read(node.value)
        for t in node.targets:
            tgt = t.target
            self._targets.add(id(tgt))
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "status" \
                    and not self._constant_status(node.value):
                self.opaque_status = True
            if reason and isinstance(tgt, cst.Name):
                self.reason_names.add(tgt.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets.add(id(node.target))
        if node.value is not None and _contains_read(node.value) \
                and isinstance(node.target, cst.Name):
            self.reason_names.add(node.target.value)

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append(node)
        func = node.func
        if isinstance(func, cst.Attribute) and (
                func.attr.value in ("update_from_meta_info", "_apply_meta_info")
                or (func.attr.value == "append_response_tokens" and any(
                    a.keyword is not None and a.keyword.value == "meta_info"
                    and not (isinstance(a.value, cst.Name) and a.value.value == "None")
                    for a in node.args))):
            self.meta_info = True
        if _is_finish_reason_read(node):
            self._read(node)

    def leave_Call(self, original_node: cst.Call) -> None:
        self._calls.pop()

    def visit_Arg(self, node: cst.Arg) -> None:
        if self._calls:
            self._args.append(self._calls[-1])
            # The sample itself handed to code the linter cannot see (which may set status).
            if isinstance(node.value, cst.Name) and node.value.value == self.sample_param \
                    and self._opaque_call(self._calls[-1]):
                self.delegated = True

    def leave_Arg(self, original_node: cst.Arg) -> None:
        if self._calls:
            self._args.pop()

    def _read(self, node: cst.CSTNode) -> None:
        if id(node) in self._targets:
            return
        self.reads.append(node)
        if self._passed_on():
            self.delegated = True

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if _is_finish_reason_read(node):
            self._read(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if _is_finish_reason_read(node):
            self._read(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self._args and node.value in self.reason_names and self._passed_on():
            self.delegated = True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _contains_read(expr: cst.CSTNode) -> bool:
    if _is_finish_reason_read(expr):
        return True
    return any(_contains_read(c) for c in expr.children if not _skip_nested(c))


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
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _GENERATE_DESTS:
            return
        closure = self.context.semantic.closure(node)
        helpers = frozenset(f.name.value for f in closure)
        dicts = _module_dicts(self.context)
        vocab = _Vocabulary()
        reads: list[cst.CSTNode] = []
        meta_info = delegated = opaque = False
        for i, fn in enumerate(closure):
            facts = _GenerateFacts(_sample_param(node) if i == 0 else None, helpers, dicts)
            fn.body.visit(facts)
            fn.body.visit(vocab)
            reads += facts.reads
            meta_info |= facts.meta_info
            delegated |= facts.delegated
            opaque |= facts.opaque_status
        if not reads or meta_info or delegated or opaque:
            return
        for stmt in _module_constants(self.context):
            stmt.visit(vocab)
        missing = [m for m in _REQUIRED if m not in vocab.covered()]
        if not missing:
            return
        reasons = {m: sorted(r for r, s in FINISH_REASON_STATUS.items() if s == m)[0]
                   for m in missing}
        what = " or ".join(f"`{reasons[m]}` -> {m}" for m in missing)
        self.report(reads[0], self.INVARIANT.render(
            name=binding.function,
            problem=f"reads the finish reason but never maps {what}"))
