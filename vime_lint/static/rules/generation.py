"""What generate functions and turn loops do with the engine's output: VIM009, VIM018.

Both rules look at a hook function together with the module-level helpers it calls (by name,
transitively), because multi-turn code usually keeps its loop in a helper
(``generate -> run_episode``). The finish-reason mapping comes from
``vime.contract.FINISH_REASON_STATUS``; nothing is copied here.

See ``docs/contract.md`` §2 (``append_response_tokens(meta_info=...)``), §8 (vLLM's
``finish_reason``) and §6a.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vime.contract import FINISH_REASON_STATUS, INVARIANTS, STATUS_VALUES
from vime_lint.static._cst import code_of, dotted, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["ReencodedGeneratedText", "UnmappedFinishReason", "local_closure"]

_GENERATE_DESTS = ("custom_generate_function_path",)
_TURN_DESTS = ("rollout_function_path", "eval_function_path", "custom_generate_function_path")
_STATUS_NAMES = frozenset(name for name, _ in STATUS_VALUES)
_STATUS_BY_VALUE = {value: name for name, value in STATUS_VALUES}
#: The status members a generate function must reach from the finish reason (VIM009).
_REQUIRED = ("TRUNCATED", "ABORTED")
#: Calls that only look at a value (the finish reason passed to them is not a mapping).
_BENIGN_CALLS = frozenset({
    "str", "repr", "print", "len", "isinstance", "bool", "format", "debug", "info", "warning",
    "warn", "error", "exception", "critical", "log", "lower", "upper", "strip",
})
_MAX_HELPERS = 64

_IMPORT = "from vime.utils.types import Sample\n"


def _skip_nested(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.ClassDef, cst.Lambda))


def local_closure(fn: cst.FunctionDef, context: FileContext) -> list[cst.FunctionDef]:
    """``fn`` and the module-level functions it calls by plain name, transitively (in
    discovery order, at most 64 helpers)."""

    class _Calls(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name):
                self.names.append(node.func.value)

    out = [fn]
    seen = {fn.name.value}
    i = 0
    while i < len(out) and len(out) <= _MAX_HELPERS:
        calls = _Calls()
        out[i].body.visit(calls)
        for name in calls.names:
            target = context.definitions.get(name)
            if name not in seen and isinstance(target, cst.FunctionDef):
                seen.add(name)
                out.append(target)
        i += 1
    return out


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
            if lit in _STATUS_BY_VALUE:
                out.add(_STATUS_BY_VALUE[lit])
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
        Valid(_IMPORT + "async def generate(args, sample, sampling_params):\n"
              "    reason = (await post(url, sampling_params))['finish_reason']\n"
              "    if reason == 'length':\n"
              "        sample.status = Sample.Status.TRUNCATED\n"
              "    elif reason == 'abort':\n"
              "        sample.status = Sample.Status.ABORTED\n"
              "    else:\n"
              "        sample.status = Sample.Status.COMPLETED\n"
              "    return sample\n"),
        Valid(_IMPORT + "_STATUS = {'length': Sample.Status.TRUNCATED,\n"
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
        Invalid(_IMPORT + "async def generate(args, sample, sampling_params):\n"
                "    choice = (await post(url, sampling_params))['choices'][0]\n"
                "    sample.append_response_tokens(args, tokens=choice['token_ids'], "
                "log_probs=lp)\n"
                "    if choice['finish_reason'] == 'stop':\n"
                "        sample.status = Sample.Status.COMPLETED\n"
                "    return sample\n", line=5, col=7),
        Invalid(_IMPORT + "async def generate(args, sample, sampling_params):\n"
                "    out = await post(url, sampling_params)\n"
                "    reason = out['choices'][0]['finish_reason']\n"
                "    sample.status = (Sample.Status.TRUNCATED if reason == 'length'\n"
                "                     else Sample.Status.COMPLETED)\n"
                "    return sample\n", line=4, col=13),
        Invalid(_IMPORT + "async def _turn(sample, out):\n"
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
        closure = local_closure(node, self.context)
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


# ---- VIM018 ----------------------------------------------------------------------------------

_DECODE = frozenset({"decode", "batch_decode"})
_ENCODE = frozenset({"encode", "encode_plus", "batch_encode_plus"})
_GROW = frozenset({"append", "extend", "insert"})
_NOT_STR = frozenset({"encode"})
#: Keywords and dict keys whose value is a token-id list (the next turn's prompt).
_TOKEN_KEYS = frozenset({"tokens", "token_ids", "prompt_token_ids", "input_ids", "prompt_ids",
                         "prompt"})


def _is_tokenizer(expr: cst.BaseExpression) -> bool:
    """``tokenizer``, ``self.tokenizer``, ``hf_tokenizer``, ``tok``, ``processor``: by the
    last name of the receiver (``token_count`` or ``stock`` are not tokenizers)."""
    name = (dotted(expr) or "").rpartition(".")[2].lower()
    return name == "tok" or name.endswith(("tokenizer", "_tok", "processor"))


def _subscript_keys(expr: cst.BaseExpression) -> list[str]:
    keys: list[str] = []
    cur = expr
    while isinstance(cur, cst.Subscript):
        if len(cur.slice) == 1 and isinstance(cur.slice[0].slice, cst.Index):
            key = string_value(cur.slice[0].slice.value)
            if key is not None:
                keys.append(key)
        cur = cur.value
    return keys


def _tokenize_false(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "tokenize"
               and isinstance(a.value, cst.Name) and a.value.value == "False"
               for a in call.args)


class _Taint:
    """Which expressions hold text generated by the model, inside one loop body."""

    def __init__(self, sample_names: frozenset[str], generates: bool) -> None:
        self.sample_names = sample_names
        #: The loop generates (awaits something or calls a ``*generate*`` function): decoded
        #: text and ``sample.response`` are then model output, not dataset text (SFT).
        self.generates = generates
        self.names: set[str] = set()

    def source(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Subscript):
            keys = _subscript_keys(expr)
            return bool(keys) and keys[0] in ("text", "content") and "choices" in keys
        if not self.generates:
            return False
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                and expr.func.attr.value in _DECODE and _is_tokenizer(expr.func.value):
            return True
        if isinstance(expr, cst.Attribute) and expr.attr.value == "response" \
                and isinstance(expr.value, cst.Name) and (
                    expr.value.value in self.sample_names or expr.value.value == "sample"
                    or expr.value.value.endswith("_sample")):
            return True
        return False

    def tainted(self, expr: cst.BaseExpression | None) -> bool:
        if expr is None:
            return False
        if self.source(expr):
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.names
        if isinstance(expr, cst.BinaryOperation):
            return self.tainted(expr.left) or self.tainted(expr.right)
        if isinstance(expr, cst.FormattedString):
            return any(isinstance(p, cst.FormattedStringExpression) and self.tainted(p.expression)
                       for p in expr.parts)
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return any(self.tainted(el.value) for el in expr.elements)
        if isinstance(expr, cst.Dict):
            return any(isinstance(el, cst.DictElement) and self.tainted(el.value)
                       for el in expr.elements)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.tainted(expr.elt)
        if isinstance(expr, cst.Subscript):
            return self.tainted(expr.value)
        if isinstance(expr, cst.IfExp):
            return self.tainted(expr.body) or self.tainted(expr.orelse)
        if isinstance(expr, cst.Call):
            return self._call_tainted(expr)
        return False

    def _call_tainted(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Name):
            return func.value == "str" and bool(call.args) and self.tainted(call.args[0].value)
        if not isinstance(func, cst.Attribute):
            return False
        attr = func.attr.value
        if attr == "apply_chat_template" and _tokenize_false(call):
            return bool(call.args) and self.tainted(call.args[0].value)
        if attr in ("join", "format"):
            return any(self.tainted(a.value) for a in call.args)
        return attr not in _NOT_STR and self.tainted(func.value)

    def sink(self, call: cst.Call) -> bool:
        """``tokenizer.encode(text)``, ``tokenizer(text)``, ``apply_chat_template(messages)``
        without ``tokenize=False``, on generated text."""
        if not call.args or call.args[0].keyword is not None:
            return False
        arg = call.args[0].value
        func = call.func
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            if attr in _ENCODE and _is_tokenizer(func.value):
                return self.tainted(arg)
            if attr == "apply_chat_template" and not _tokenize_false(call):
                return self.tainted(arg)
            return False
        return _is_tokenizer(func) and self.tainted(arg)


class _LoopFacts(cst.CSTVisitor):
    """Assignments, growing calls and tokenizer calls of one loop body (nested defs skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.binds: list[tuple[str, cst.BaseExpression]] = []
        self.calls: list[cst.Call] = []
        self.generates = False
        #: Expressions whose value becomes token ids or goes to the engine: values assigned to
        #: ``.tokens``, ``tokens=``/``token_ids=`` arguments, ``"token_ids"`` dict values,
        #: awaited expressions and the arguments of ``*generate*`` calls.
        self.token_uses: list[cst.CSTNode] = []

    def visit_Await(self, node: cst.Await) -> None:
        self.generates = True
        self.token_uses.append(node.expression)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if string_value(node.key) in _TOKEN_KEYS:
            self.token_uses.append(node.value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.binds.append((target.value, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind(t.target, node.value)
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "tokens":
                self.token_uses.append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)
        if isinstance(node.target, cst.Attribute) and node.target.attr.value == "tokens":
            self.token_uses.append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        func = node.func
        self.token_uses += [a.value for a in node.args
                            if a.keyword is not None and a.keyword.value in _TOKEN_KEYS]
        if "generate" in (dotted(func) or "").rpartition(".")[2]:
            self.generates = True
            self.token_uses += [a.value for a in node.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _GROW \
                and isinstance(func.value, cst.Name) and node.args:
            self.binds.append((func.value.value, node.args[-1].value))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


class _Loops(cst.CSTVisitor):
    """The outermost statement loops of a function body, and the names that hold samples."""

    def __init__(self) -> None:
        super().__init__()
        self.loops: list[cst.For | cst.While] = []
        self.sample_names: set[str] = set()
        self._depth = 0

    def visit_For(self, node: cst.For) -> None:
        if not self._depth:
            self.loops.append(node)
        self._depth += 1
        if isinstance(node.target, cst.Name):
            it = node.iter
            if (isinstance(it, cst.Call) and dotted(it.func) == "iter_samples") or (
                    isinstance(it, cst.Name) and (it.value.endswith("group")
                                                  or it.value.endswith("samples"))):
                self.sample_names.add(node.target.value)

    def leave_For(self, original_node: cst.For) -> None:
        self._depth -= 1

    def visit_While(self, node: cst.While) -> None:
        if not self._depth:
            self.loops.append(node)
        self._depth += 1

    def leave_While(self, original_node: cst.While) -> None:
        self._depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def retokenised_calls(fn: cst.FunctionDef) -> list[cst.Call]:
    """Tokenizer calls inside a loop of ``fn`` (nested functions included) that encode text
    the model generated in that loop (a fixpoint over the loop's assignments).

    Decoded text and ``sample.response`` count as generated only in a loop that generates
    (an ``await`` or a call of a ``*generate*`` function), so an SFT rollout that tokenises
    dataset text in a loop is not reported; an engine response's ``choices[...]["text"]``
    always counts.
    """
    finder = _Loops()
    fn.body.visit(finder)
    out: list[cst.Call] = []
    for loop in finder.loops:
        facts = _LoopFacts()
        loop.visit(facts)
        taint = _Taint(frozenset(finder.sample_names), facts.generates)
        for _ in range(len(facts.binds) + 1):
            before = len(taint.names)
            for name, value in facts.binds:
                if name not in taint.names and taint.tainted(value):
                    taint.names.add(name)
            if len(taint.names) == before:
                break
        out += [c for c in facts.calls if taint.sink(c) and _becomes_tokens(c, facts)]
    return out


def _contains(node: cst.CSTNode, target: cst.CSTNode, names: set[str]) -> bool:
    if node is target or (isinstance(node, cst.Name) and node.value in names):
        return True
    return any(_contains(c, target, names) for c in node.children)


def _becomes_tokens(sink: cst.Call, facts: _LoopFacts) -> bool:
    """True when the encoded ids reach the next turn: the sink's value (directly or through
    names bound in the loop) is sent to the engine or stored as tokens."""
    names: set[str] = set()
    for _ in range(len(facts.binds) + 1):
        before = len(names)
        for name, value in facts.binds:
            if name not in names and _contains(value, sink, names):
                names.add(name)
        if len(names) == before:
            break
    return any(_contains(use, sink, names) for use in facts.token_uses)


class ReencodedGeneratedText(FunctionTracker):
    """Turn loops keep the sampled token ids instead of re-encoding generated text.

    ## What it does
    In rollout, eval and custom generate functions (and the module-level helpers they call),
    reports a tokenizer call inside a ``for``/``while`` loop that encodes text the model
    generated to build the next turn's tokens: ``tokenizer.encode(text)``, ``tokenizer(text)``,
    or
    ``tokenizer.apply_chat_template(messages)`` without ``tokenize=False``, where ``text`` /
    ``messages`` hold ``tokenizer.decode(...)`` output, ``sample.response`` or an engine
    response's ``choices[...]["text"]``, directly or through assignments, f-strings,
    concatenation, string methods and ``messages.append({...})`` in the same loop.
    The encoded ids must visibly become tokens (assigned to ``.tokens``, passed as
    ``tokens=``/``token_ids=``, stored under ``"token_ids"``, or sent to an awaited or
    ``*generate*`` call), so counting tokens of a response for a metric is fine; so is encoding
    tool or environment output that is not derived from generated text.

    ## Known problems
    Decoded text and ``sample.response`` count as generated only in a loop that awaits
    something or calls a ``*generate*`` function (an SFT rollout tokenising dataset text in
    a loop is fine); the analysis does not follow values through calls of other functions.

    ## Why is this bad?
    Decoding and encoding again does not reproduce the sampled ids (merges, special tokens,
    whitespace normalisation), so the next turn's prompt and the trained tokens differ from
    what the engine sampled, and the log-probs of the sampler no longer line up with the
    trained tokens (failure kind: "retokenisation drift").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        for _ in range(MAX_TURNS):
            out = await engine(ids)
            messages.append({"role": "assistant", "content": tokenizer.decode(out.token_ids)})
            messages.append({"role": "tool", "content": run_tool(out)})
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        for _ in range(MAX_TURNS):
            out = await engine(sample.tokens)
            sample.append_response_tokens(args, tokens=out.token_ids, log_probs=out.log_probs)
            tool = tokenizer.encode(run_tool(out), add_special_tokens=False)
            sample.append_response_tokens(args, tokens=tool, trainable=False)
    ```

    ## Fix safety
    No fix: keeping the ids changes how the loop is written.
    """

    INVARIANT = INVARIANTS["VIM018"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def generate(args, sample, sampling_params):\n"
              "    for _ in range(3):\n"
              "        out = await engine(sample.tokens)\n"
              "        text = tokenizer.decode(out)\n"
              "        tool = run_tool(text)\n"
              "        ids = tokenizer.encode(f'<result>{tool}</result>')\n"
              "        sample.append_response_tokens(args, tokens=ids, trainable=False)\n"
              "    return sample\n"),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    for _ in range(3):\n"
              "        out = await engine(sample.tokens)\n"
              "        text = tokenizer.decode(out)\n"
              "        sample.metadata['n'] = len(tokenizer.encode(text))\n"
              "    return sample\n"),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    text = tokenizer.decode(sample.tokens)\n"
              "    ids = tokenizer.encode(text)\n"
              "    return sample\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    for group in data_source.get_samples(4):\n"
              "        for sample in group:\n"
              "            sample.tokens = tokenizer.apply_chat_template(sample.prompt)\n"),
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    for group in data_source.get_samples(4):\n"
              "        for sample in group:\n"
              "            sample.response = sample.label\n"
              "            sample.tokens = tokenizer.encode(sample.prompt + sample.response)\n"),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    while True:\n"
              "        data = sample.response.encode('utf-8')\n"
              "        prompt = tokenizer.apply_chat_template(msgs + [{'content': sample.response}],"
              " tokenize=False)\n"
              "        break\n"
              "    return sample\n"),
    ]
    INVALID = [
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    messages = [{'role': 'user', 'content': sample.prompt}]\n"
                "    for _ in range(3):\n"
                "        out = await engine(ids)\n"
                "        text = tokenizer.decode(out['token_ids'])\n"
                "        messages.append({'role': 'assistant', 'content': text})\n"
                "        ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True)\n"
                "    return sample\n", line=7, col=14),
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    while not done:\n"
                "        prompt = self.tok.apply_chat_template(msgs, tokenize=False)\n"
                "        prompt += sample.response.strip()\n"
                "        ids = self.tok.encode(prompt)\n"
                "        sample = await vllm_generate(args, sample, ids)\n"
                "    return sample\n", line=5, col=14),
        Invalid("async def _episode(sample):\n"
                "    for turn in range(4):\n"
                "        out = await post(url, payload)\n"
                "        history = history + out['choices'][0]['text']\n"
                "        payload = {'token_ids': tokenizer(history)['input_ids']}\n"
                "    return sample\n"
                "async def generate(args, sample, sampling_params):\n"
                "    return await _episode(sample)\n", line=5, col=32),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.reported: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _TURN_DESTS:
            return
        for fn in local_closure(node, self.context):
            for call in retokenised_calls(fn):
                if id(call) in self.reported:
                    continue
                self.reported.add(id(call))
                self.report(call, self.INVARIANT.render(name=fn.name.value)
                            + f": `{_short(call)}` inside a loop encodes generated text again")


def _short(call: cst.Call, limit: int = 60) -> str:
    text = " ".join(code_of(call).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
