"""How code builds and edits ``Sample``: VIM006, VIM007, VIM008, VIM013, VIM014, VIM022.

Field names come from ``vime.contract.SAMPLE_FIELDS`` and status values from
``vime.contract.STATUS_VALUES``; nothing is copied here.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import difflib

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from vime.contract import INVARIANTS, SAMPLE_FIELD_NAMES, SAMPLE_FIELDS, STATUS_VALUES
from vime_lint.static._cst import dotted, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, Fix, FunctionTracker, Rule
from vime_lint.static.rules._samples import SampleTracker, is_sample_call_name

__all__ = [
    "GetattrOnGroupElement", "MaskFromFullTokens", "SampleConstructor", "StaleDataBuffer",
    "StaleSampleFlag", "StatusString", "TensorInMetadata", "TokensWithoutLossMask",
    "UnknownSampleAttribute",
]

_IMPORT = "from vime.utils.types import Sample\n"
_STATUS_BY_VALUE = {value: name for name, value in STATUS_VALUES}
_EQ = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(SAMPLE_FIELD_NAMES), n=1)
    return f"; did you mean `{close[0]}`?" if close else ""


class SampleConstructor(Rule):
    """``Sample(...)`` is built with keywords and known fields only.

    ## What it does
    Reports positional arguments to ``Sample(...)`` (a warning) and keywords that are not
    fields of ``Sample`` (an error, with the closest field name).

    ## Why is this bad?
    Positional arguments bind to whatever field sits at that position, and the field order
    follows upstream's newest release: ``Sample("prompt")`` sets ``group_index``. An unknown
    keyword raises ``TypeError`` when the rollout runs (failure kind: "field order changes").

    ## Example
    ```python
    Sample(0, 1, None, "What is 2+2?")
    Sample(prompt="What is 2+2?", lable="4")
    ```

    ## Use instead
    ```python
    Sample(group_index=0, index=1, rollout_id=None, prompt="What is 2+2?")
    Sample(prompt="What is 2+2?", label="4")
    ```

    ## Fix safety
    Turning positional arguments into keywords in ``SAMPLE_FIELDS`` order is safe: it binds
    each value to the same field as before.
    """

    INVARIANT = INVARIANTS["VIM006"]
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    VALID = [
        Valid(_IMPORT + "s = Sample(prompt='hi', label='1')\n"),
        Valid("class Sample:\n    pass\nSample(1, 2)\n"),
        Valid(_IMPORT + "s = Sample(**fields)\n"),
    ]
    INVALID = [
        Invalid(_IMPORT + "s = Sample(0, 1, prompt='hi')\n", line=2, col=4,
                severity="warning",
                fixed=_IMPORT + "s = Sample(group_index=0, index=1, prompt='hi')\n"),
        Invalid(_IMPORT + "s = Sample(prompt='hi', lable='1')\n", line=2, col=4,
                severity="error"),
        Invalid("import vime.utils.types as t\ns = t.Sample(prompt='x', tokenz=[1])\n",
                line=2, col=4, severity="error"),
        Invalid("from vime.utils.types import Sample as S\ns = S('x')\n", line=2, col=4,
                fixed="from vime.utils.types import Sample as S\ns = S(group_index='x')\n"),
    ]

    def _is_sample(self, func: cst.BaseExpression) -> bool:
        if isinstance(func, cst.Name):
            return func.value in self.context.sample_names
        if isinstance(func, cst.Attribute) and func.attr.value == "Sample":
            return any((q.startswith("vime.") or q.startswith("slime.")) and q.endswith(".Sample")
                       for q in self.qualified(func))
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if not is_sample_call_name(node.func, self.context.sample_names) \
                or not self._is_sample(node.func):
            return
        positional = [a for a in node.args if a.keyword is None and not a.star]
        starred = any(a.star == "*" for a in node.args)
        for a in node.args:
            if a.keyword is not None and a.keyword.value not in SAMPLE_FIELD_NAMES:
                kw = a.keyword.value
                self.report(node, self.INVARIANT.render(
                    problem=f"has no field `{kw}`{_suggest(kw)}"), severity="error")
        if positional:
            if len(positional) > len(SAMPLE_FIELDS):
                self.report(node, self.INVARIANT.render(
                    problem=f"takes {len(positional)} positional arguments; Sample has "
                    f"{len(SAMPLE_FIELDS)} fields"), severity="error")
                return
            fix = None
            if not starred:
                repl = []
                for a, spec in zip(positional, SAMPLE_FIELDS, strict=False):
                    repl.append((a, a.with_changes(keyword=cst.Name(spec.name), equal=_EQ)))
                fix = Fix("Pass the fields by keyword", True, tuple(repl))
            names = ", ".join(f.name for f in SAMPLE_FIELDS[:len(positional)])
            self.report(node, self.INVARIANT.render(
                problem=f"passes {len(positional)} positional argument(s), bound by field "
                f"order to {names}"), severity="warning", fix=fix)


class UnknownSampleAttribute(SampleTracker):
    """Code sets only fields that ``Sample`` has.

    ## What it does
    Reports an assignment to an attribute that is not a ``Sample`` field, on a name known to
    hold a sample (a hook's ``sample`` parameter, ``x = Sample(...)``, a loop over a group).
    A near miss of a field name (``loss_masks``) is an error, any other name a warning.

    ## Why is this bad?
    ``Sample`` accepts any attribute, so a typo such as ``sample.loss_masks = mask`` raises
    nothing: the real field stays None and training uses a mask of all ones.

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        sample.loss_masks = [1, 1, 0]
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        sample.loss_mask = [1, 1, 0]
    ```

    ## Fix safety
    No fix: the intended field is a guess.
    """

    INVARIANT = INVARIANTS["VIM006"]
    VALID = [
        Valid("async def generate(args, sample, sampling_params):\n"
              "    sample.loss_mask = [1]\n    sample.metadata['x'] = 1\n    return sample\n"),
        Valid("def f(thing):\n    thing.loss_masks = 1\n"),
        Valid("def f(sample):\n    sample._cache = 1\n"),
    ]
    INVALID = [
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    sample.loss_masks = [1]\n    return sample\n", line=2, col=4,
                severity="error"),
        Invalid("def f(group):\n    for s in group:\n        s.my_score = 1\n", line=3, col=8,
                severity="warning"),
    ]

    def _check_target(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute) or not self.is_sample(target.value):
            return
        attr = target.attr.value
        if attr in SAMPLE_FIELD_NAMES or attr.startswith("_") or attr in ("truncated", "aborted"):
            return  # stale flags are VIM007's
        hint = _suggest(attr)
        self.report(target, self.INVARIANT.render(
            problem=f"sets `{attr}`, which is not a Sample field{hint}"),
            severity="error" if hint else "warning")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        for t in node.targets:
            self._check_target(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)


def _status_member(value: str) -> str | None:
    return _STATUS_BY_VALUE.get(value.lower())


class StatusString(SampleTracker):
    """``status`` is set from and compared with ``Sample.Status`` members, not strings.

    ## What it does
    Reports ``x.status = "completed"``, ``x.status == "aborted"`` and
    ``Sample(status="truncated")``.

    ## Why is this bad?
    ``Sample.Status`` is an ``Enum``: a string never equals a member, so status checks are
    always false, and ``to_dict`` needs ``.value`` (failure kind: "to_dict needs .value").

    ## Example
    ```python
    sample.status = "truncated"
    ```

    ## Use instead
    ```python
    sample.status = Sample.Status.TRUNCATED
    ```

    ## Fix safety
    Replacing a known status string with its ``Sample.Status`` member is safe when ``Sample``
    is imported in the module; no fix is offered otherwise.
    """

    INVARIANT = INVARIANTS["VIM007"]
    VALID = [
        Valid(_IMPORT + "def f(sample):\n    sample.status = Sample.Status.TRUNCATED\n"),
        Valid("response.status = 'ok'\n"),
        Valid("if resp.status == 200:\n    pass\n"),
    ]
    INVALID = [
        Invalid(_IMPORT + "def f(sample):\n    sample.status = 'truncated'\n", line=3, col=4,
                fixed=_IMPORT + "def f(sample):\n    sample.status = Sample.Status.TRUNCATED\n"),
        Invalid("def f(x):\n    if x.status == 'aborted':\n        pass\n", line=2, col=7),
        Invalid(_IMPORT + "s = Sample(prompt='p', status='completed')\n", line=2, col=4,
                fixed=_IMPORT + "s = Sample(prompt='p', status=Sample.Status.COMPLETED)\n"),
    ]

    def _member(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        value = string_value(node)
        member = _status_member(value) if value is not None else None
        if member is None or not self.context.sample_names:
            return None
        alias = "Sample" if "Sample" in self.context.sample_names else sorted(
            self.context.sample_names)[0]
        return cst.parse_expression(f"{alias}.Status.{member}")

    def _report(self, node: cst.CSTNode, literal: cst.BaseExpression, what: str) -> None:
        repl = self._member(literal)
        value = string_value(literal)
        fix = Fix(f"Use `Sample.Status.{_status_member(value or '')}`", True,
                  ((literal, repl),)) if repl is not None else None
        self.report(node, self.INVARIANT.render(
            problem=f"{what} the string {value!r} instead of a `Sample.Status` member"), fix=fix)

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        value = string_value(node.value)
        if value is None:
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "status" and (
                    self.is_sample(tgt.value) or _status_member(value) is not None):
                self._report(node, node.value, "`status` is set to")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        if not (isinstance(left, cst.Attribute) and left.attr.value == "status"):
            return
        for comp in node.comparisons:
            value = string_value(comp.comparator)
            if value is not None and _status_member(value) is not None \
                    and isinstance(comp.operator, (cst.Equal, cst.NotEqual)):
                self._report(node, comp.comparator, "`status` is compared with")

    def visit_Call(self, node: cst.Call) -> None:
        if not is_sample_call_name(node.func, self.context.sample_names):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value == "status" \
                    and string_value(a.value) is not None:
                self._report(node, a.value, "`status` is built from")


class StaleSampleFlag(SampleTracker):
    """No ``.truncated`` / ``.aborted`` booleans on samples: read ``status``.

    ## What it does
    Reports reads and writes of ``.truncated`` or ``.aborted`` on a name holding a sample.

    ## Why is this bad?
    These are fields of an old API. ``Sample`` accepts the attribute, so writing it raises
    nothing, but nothing reads it: the truncation never reaches the training data, which
    exports ``truncated`` from ``status == TRUNCATED`` only.

    ## Example
    ```python
    if sample.truncated:
        ...
    ```

    ## Use instead
    ```python
    if sample.status == Sample.Status.TRUNCATED:
        ...
    ```

    ## Fix safety
    No fix: a write needs a different statement than a read.
    """

    INVARIANT = INVARIANTS["VIM007"]
    VALID = [
        Valid("def f(sample):\n    return sample.status\n"),
        Valid("def f(output):\n    return output.truncated\n"),
    ]
    INVALID = [
        Invalid("def f(sample):\n    if sample.truncated:\n        pass\n", line=2, col=7),
        Invalid("def f(group):\n    for s in group:\n        s.aborted = True\n", line=3, col=8),
    ]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr in ("truncated", "aborted") and self.is_sample(node.value):
            member = "TRUNCATED" if attr == "truncated" else "ABORTED"
            self.report(node, self.INVARIANT.render(
                problem=f"`.{attr}` is a stale Sample API; use `status == "
                f"Sample.Status.{member}`"))


class StaleDataBuffer(Rule):
    """No ``data_buffer``: the data source is ``data_source``.

    ## What it does
    Reports attribute access to ``.data_buffer`` (``self.data_buffer``, ``args.data_buffer``).
    The rollout function's parameter of that name is VIM001's.

    ## Why is this bad?
    ``data_buffer`` is the name of an old API; vime's manager and hooks pass and hold a
    ``data_source``. The attribute does not exist and fails with ``AttributeError``.

    ## Example
    ```python
    samples = self.data_buffer.get_samples(4)
    ```

    ## Use instead
    ```python
    samples = self.data_source.get_samples(4)
    ```

    ## Fix safety
    No fix: the owner of the attribute may really define one.
    """

    INVARIANT = INVARIANTS["VIM007"]
    VALID = [Valid("self.data_source.get_samples(4)\n")]
    INVALID = [Invalid("x = self.data_buffer.get_samples(4)\n", line=1, col=4)]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "data_buffer":
            self.report(node, self.INVARIANT.render(
                problem="`.data_buffer` is a stale API; the data source is `data_source`"))


_GROW_METHODS = ("extend", "append", "insert", "__iadd__")
_PER_TOKEN = ("loss_mask", "rollout_log_probs", "append_response_tokens")


class TokensWithoutLossMask(FunctionTracker):
    """Code that grows ``tokens`` also grows ``loss_mask`` / ``rollout_log_probs``.

    ## What it does
    Reports a function that extends ``x.tokens`` or ``x.response_length`` (``+=``,
    ``.extend``, ``.append``, ``x.tokens = x.tokens + ...``) but never touches ``.loss_mask``,
    ``.rollout_log_probs`` or ``append_response_tokens``. Setting ``tokens`` once (as a
    whole) is not reported. Runtime twins: VIM108, VIM109.

    ## Why is this bad?
    Multi-turn code that appends tokens turn by turn leaves the per-token lists one turn
    short; training then masks or scores the wrong tokens (failure kind: "loss_mask /
    log-prob length mismatch").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        sample.tokens += new_tokens
        sample.response_length += len(new_tokens)
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        sample.append_response_tokens(args, tokens=new_tokens, log_probs=new_log_probs)
        return sample
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM008"]
    VALID = [
        Valid("def f(sample, t, lp):\n    sample.tokens += t\n    sample.loss_mask += [1]*len(t)\n"),
        Valid("def f(sample, t):\n    sample.tokens = [1, 2] + t\n    sample.response_length = 2\n"),
        Valid("def f(sample, t):\n    sample.append_response_tokens(None, tokens=t)\n"),
    ]
    INVALID = [
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    sample.tokens += [1]\n    sample.response_length += 1\n    return sample\n",
                line=2, col=4),
        Invalid("def f(sample, t):\n    sample.tokens.extend(t)\n", line=2, col=4),
        Invalid("def f(sample, t):\n    sample.tokens = sample.tokens + t\n", line=2, col=4),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.state: list[tuple[list[tuple[cst.CSTNode, str]], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.state.append(([], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        grows, handled = self.state.pop()
        if grows and not handled[0]:
            node, field = grows[0]
            self.report(node, self.INVARIANT.render(name=original_node.name.value, field=field))
        super().leave_FunctionDef(original_node)

    def _grow(self, node: cst.CSTNode, field: str) -> None:
        if self.state:
            self.state[-1][0].append((node, field))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        t = node.target
        if isinstance(t, cst.Attribute) and t.attr.value in ("tokens", "response_length") \
                and isinstance(node.operator, cst.AddAssign):
            self._grow(node, t.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "tokens" \
                    and isinstance(value, cst.BinaryOperation) \
                    and isinstance(value.left, cst.Attribute) and value.left.attr.value == "tokens":
                self._grow(node, "tokens")

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _GROW_METHODS \
                and isinstance(func.value, cst.Attribute) and func.value.attr.value == "tokens":
            self._grow(node, "tokens")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in _PER_TOKEN and self.state:
            self.state[-1][1][0] = True


def _tokens_len(expr: cst.BaseExpression) -> bool:
    """``len(x.tokens)``."""
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)
            and expr.func.value == "len" and len(expr.args) == 1
            and isinstance(expr.args[0].value, cst.Attribute)
            and expr.args[0].value.attr.value == "tokens")


def _full_tokens_sized(value: cst.BaseExpression) -> bool:
    """``[c] * len(x.tokens)``, ``[c for _ in x.tokens]``, ``[... in range(len(x.tokens))]``."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        return _tokens_len(value.left) or _tokens_len(value.right)
    if isinstance(value, cst.ListComp):
        it = value.for_in.iter
        if isinstance(it, cst.Attribute) and it.attr.value == "tokens":
            return True
        return (isinstance(it, cst.Call) and dotted(it.func) == "range" and len(it.args) == 1
                and _tokens_len(it.args[0].value))
    if isinstance(value, cst.Call) and len(value.args) >= 1:
        name = dotted(value.func) or ""
        if name.rpartition(".")[2] in ("ones", "zeros", "full"):
            return _tokens_len(value.args[0].value)
    return False


class MaskFromFullTokens(Rule):
    """``loss_mask`` and ``rollout_log_probs`` are sized by the response, not by ``tokens``.

    ## What it does
    Reports ``x.loss_mask`` / ``x.rollout_log_probs`` (or the same ``Sample(...)`` keywords)
    built with the length of the full ``x.tokens``: ``[1] * len(x.tokens)``,
    ``[1 for _ in x.tokens]``, ``np.ones(len(x.tokens))``. Runtime twins: VIM108, VIM109.

    ## Why is this bad?
    ``tokens`` holds the prompt and the response; the per-token lists have one entry per
    response token. A mask of ``len(tokens)`` fails the length check, or (when trimmed
    later) trains on the prompt (failure kind: "loss_mask length != response_length").

    ## Example
    ```python
    sample.loss_mask = [1] * len(sample.tokens)
    ```

    ## Use instead
    ```python
    sample.loss_mask = [1] * sample.response_length
    ```

    ## Fix safety
    No fix: the response length may live in another variable.
    """

    INVARIANT = INVARIANTS["VIM022"]
    VALID = [
        Valid("sample.loss_mask = [1] * sample.response_length\n"),
        Valid("sample.loss_mask = [1] * (len(sample.tokens) - prompt_len)\n"),
    ]
    INVALID = [
        Invalid("sample.loss_mask = [1] * len(sample.tokens)\n", line=1, col=0),
        Invalid("s.rollout_log_probs = [0.0 for _ in s.tokens]\n", line=1, col=0),
        Invalid(_IMPORT + "s = Sample(tokens=t, loss_mask=[1] * len(x.tokens))\n", line=2,
                col=4),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value in ("loss_mask",
                                                                     "rollout_log_probs") \
                    and _full_tokens_sized(node.value):
                self.report(node, self.INVARIANT.render(field=tgt.attr.value,
                                                        name=dotted(tgt.value) or "?"))

    def visit_Call(self, node: cst.Call) -> None:
        if not is_sample_call_name(node.func, self.context.sample_names):
            return
        for a in node.args:
            if a.keyword is not None and a.keyword.value in ("loss_mask", "rollout_log_probs") \
                    and _full_tokens_sized(a.value):
                self.report(node, self.INVARIANT.render(field=a.keyword.value, name="Sample"))


class GetattrOnGroupElement(Rule):
    """No ``getattr(x, "status" | "reward", default)``: iterate leaves with ``iter_samples``.

    ## What it does
    Reports three-argument ``getattr`` calls that read ``status`` or ``reward``.

    ## Why is this bad?
    A group element may be a list of samples (fan-out); ``getattr`` with a default then
    answers the default, and a check such as "any sample aborted" is silently always false
    (failure kind: "aborted check false on nested group").

    ## Example
    ```python
    aborted = any(getattr(s, "status", None) == Sample.Status.ABORTED for s in group)
    ```

    ## Use instead
    ```python
    aborted = any(s.status == Sample.Status.ABORTED for s in iter_samples(group))
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM013"]
    VALID = [Valid("getattr(s, 'status')\n"), Valid("getattr(s, 'name', None)\n")]
    INVALID = [Invalid("x = getattr(s, 'status', None)\n", line=1, col=4),
               Invalid("x = [getattr(s, 'reward', 0.0) for s in group]\n", line=1, col=5)]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "getattr" \
                and len(node.args) == 3:
            attr = string_value(node.args[1].value)
            if attr in ("status", "reward"):
                self.report(node, self.INVARIANT.render(attr=attr))


_ARRAY_ROOTS = ("numpy.", "torch.")
_PLAIN = ("item", "tolist")


class TensorInMetadata(Rule):
    """No numpy or torch values stored in ``metadata`` / ``train_metadata``.

    ## What it does
    Reports ``x.metadata[key] = <numpy/torch call>`` (also for ``train_metadata``), resolving
    aliases such as ``import numpy as np`` by qualified name. ``.item()`` and ``.tolist()``
    results are fine. Runtime twin: VIM116.

    ## Why is this bad?
    Metadata is dumped as JSON with debug rollout data and sent between processes; arrays
    and tensors break ``json.dumps`` (failure kind: "metadata not JSON-serialisable").

    ## Example
    ```python
    sample.metadata["scores"] = np.array(scores)
    ```

    ## Use instead
    ```python
    sample.metadata["scores"] = np.array(scores).tolist()
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM014"]
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    VALID = [
        Valid("import numpy as np\nsample.metadata['s'] = np.array(x).tolist()\n"),
        Valid("sample.metadata['s'] = float(x)\n"),
    ]
    INVALID = [
        Invalid("import numpy as np\nsample.metadata['s'] = np.array(x)\n", line=2, col=0),
        Invalid("from torch import tensor\ns.train_metadata['t'] = tensor([1])\n", line=2,
                col=0),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        if isinstance(value.func, cst.Attribute) and value.func.attr.value in _PLAIN:
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Attribute) \
                    and tgt.value.attr.value in ("metadata", "train_metadata"):
                names = self.qualified(value.func)
                hit = next((n for n in names if n.startswith(_ARRAY_ROOTS)), None)
                if hit is not None:
                    self.report(node, self.INVARIANT.render(
                        problem=f"`.{tgt.value.attr.value}[...]` stores the result of `{hit}`, "
                        "which json.dumps cannot serialise"))
