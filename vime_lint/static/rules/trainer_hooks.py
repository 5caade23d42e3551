"""The trainer hooks' results where the code shows them: VIM055, VIM056; how they group the
flat samples: VIM057.

:class:`CustomLossReturnsPair` reports a ``--custom-loss-function-path`` function that returns
a bare loss instead of ``(loss, log_dict)``; :class:`AdvantageHookStoresAdvantages` an
``--custom-advantage-function-path`` function that returns its advantages, or never stores
``rollout_data["advantages"]``. Their runtime twins (VIM190, VIM191) check the values the
trainer receives, at boundary B7.

:class:`PositionalGroups` reports a post-processing hook that cuts the flat samples into rows
of ``n_samples_per_prompt`` by position instead of grouping them by ``group_index``.

Each of the first two rules reads only the function the hook binding names (its own statements, not nested
functions), from the semantic model's facts of that function.

See ``docs/contract.md`` §5 and §6a, and ``docs/en/training.md`` ("Trainer hooks").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import Semantic

__all__ = ["AdvantageHookStoresAdvantages", "CustomLossReturnsPair", "PositionalGroups"]


@dataclass(slots=True)
class _Body:
    """The returns, name assignments, subscript stores and call arguments of one function's
    own body (nested functions and lambdas left out), read from the semantic model."""

    returns: list[cst.Return] = field(default_factory=list)
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    stored_keys: set[str] = field(default_factory=set)
    call_args: set[str] = field(default_factory=set)


def _body(semantic: Semantic, node: cst.FunctionDef) -> _Body:
    facts = semantic.facts(node)
    body = _Body([r.node for r in facts.returns])
    for target, value, stmt in facts.bindings:
        if isinstance(stmt, cst.AugAssign):
            continue
        if isinstance(target, cst.Name):
            body.assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, cst.Subscript) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) \
                    and isinstance(index.value.evaluated_value, str):
                body.stored_keys.add(index.value.evaluated_value)
    for site in facts.calls:
        for a in site.node.args:
            if isinstance(a.value, cst.Name):
                body.call_args.add(a.value.value)
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("update", "setdefault"):
            body.call_args.add("<update>")
    return body


def _tensor_like(value: cst.BaseExpression) -> bool:
    """Arithmetic, a method call (``x.mean()``) or an attribute call (``torch.sum(...)``,
    ``F.cross_entropy(...)``): a tensor, never a ``(loss, log_dict)`` pair."""
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)


def _describe(value: cst.BaseExpression | None) -> str | None:
    """Why a returned expression is not a pair, or None when it may be one."""
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        return "None"
    if isinstance(value, cst.Tuple):
        n = len(value.elements)
        starred = any(isinstance(e, cst.StarredElement) for e in value.elements)
        return None if n == 2 or starred else f"a {n}-tuple"
    if _tensor_like(value):
        return "a bare tensor"
    return None


class CustomLossReturnsPair(FunctionTracker):
    """A custom loss returns ``(loss, log_dict)``.

    ## What it does
    Reports a ``return`` in a ``--custom-loss-function-path`` function whose value is a bare
    tensor (arithmetic, ``x.mean()``, ``torch.sum(...)``, a local name only ever assigned
    such a value), a tuple of another length, or None.

    ## Why is this bad?
    The trainer unpacks ``loss, log_dict = custom_loss(args, batch, logits,
    sum_of_sample_mean)``: a bare scalar tensor fails to unpack, a vector silently unpacks its
    first two elements. Either happens at the first micro-batch, after a whole rollout was
    generated. Runtime twin: VIM190.

    ## Example
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        return sum_of_sample_mean(per_token_loss(logits, batch))
    ```

    ## Use instead
    ```python
    def my_loss(args, batch, logits, sum_of_sample_mean):
        loss = sum_of_sample_mean(per_token_loss(logits, batch))
        return loss, {"my_loss": loss.detach()}
    ```

    ## Fix safety
    No fix: the log values are the author's choice.
    """

    INVARIANT = INVARIANTS["VIM055"]
    NEEDS_HOOKS = True
    _HOOK = {"hooks": {"my_loss": "custom_loss_function_path"}}
    VALID = [
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    loss = logits.mean()\n    return loss, {'loss': loss.detach()}\n",
              options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    result = helper(logits)\n    return result\n", options=_HOOK),
        Valid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
              "    def inner(x):\n        return x.mean()\n"
              "    return inner(logits), {}\n", options=_HOOK),
        Valid("def other(args, batch, logits, sum_of_sample_mean):\n    return logits.mean()\n"),
    ]
    INVALID = [
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    return logits.mean()\n", line=2, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = -sum_of_sample_mean(logits[:, :, 0])\n    return loss\n",
                line=3, col=11, options=_HOOK),
        Invalid("def my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    loss = logits.mean()\n    return loss, {}, 0\n", line=3, col=11,
                options=_HOOK),
        Invalid("import torch\n\ndef my_loss(args, batch, logits, sum_of_sample_mean):\n"
                "    if logits is None:\n        return\n    return torch.sum(logits), {}\n",
                line=5, col=8, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_loss_function_path":
            return
        body = _body(self.context.semantic, node)
        for ret in body.returns:
            problem = _describe(ret.value)
            if problem is None and isinstance(ret.value, cst.Name):
                values = body.assigned.get(ret.value.value, [])
                if values and all(_tensor_like(v) for v in values):
                    problem = "a bare tensor"
            if problem is not None:
                self.report(ret.value if ret.value is not None else ret,
                            self.INVARIANT.render(name=node.name.value, actual=problem))


class AdvantageHookStoresAdvantages(FunctionTracker):
    """An advantage hook stores ``rollout_data["advantages"]`` and returns None.

    ## What it does
    Reports a ``--custom-advantage-function-path`` function that returns a value, or whose
    body never assigns ``<dict>["advantages"] = ...`` (nor passes ``rollout_data`` on to
    another function, nor calls ``.update``/``.setdefault``, which may store it).

    ## Why is this bad?
    The trainer calls ``advantage_fn(args, rollout_data)`` for its side effect, as upstream
    does, and reads ``rollout_data["advantages"]`` afterwards: a returned list is thrown away
    and the step stops with a missing key. Runtime twin: VIM191.

    ## Example
    ```python
    def my_advantages(args, rollout_data):
        return [torch.ones_like(m) * r for r, m in zip(rollout_data["rewards"],
                                                     rollout_data["loss_masks"])]
    ```

    ## Use instead
    ```python
    def my_advantages(args, rollout_data):
        rollout_data["advantages"] = [torch.ones_like(m) * r for r, m in zip(
            rollout_data["rewards"], rollout_data["loss_masks"])]
    ```

    ## Fix safety
    No fix: where the value goes is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM056"]
    NEEDS_HOOKS = True
    _HOOK = {"hooks": {"adv": "custom_advantage_function_path"}}
    VALID = [
        Valid("def adv(args, rollout_data):\n"
              "    rollout_data['advantages'] = [m * 1.0 for m in rollout_data['loss_masks']]\n"
              "    rollout_data['returns'] = rollout_data['advantages']\n", options=_HOOK),
        Valid("def adv(args, rollout_data):\n    fill(args, rollout_data)\n", options=_HOOK),
        Valid("def adv(args, rollout_data):\n    rollout_data.update(advantages=[])\n"
              "    return None\n", options=_HOOK),
        Valid("def other(args, rollout_data):\n    return []\n"),
    ]
    INVALID = [
        Invalid("def adv(args, rollout_data):\n"
                "    return [m * 1.0 for m in rollout_data['loss_masks']]\n", line=2, col=11,
                options=_HOOK),
        Invalid("def adv(args, rollout_data):\n"
                "    advantages = [m * 1.0 for m in rollout_data['loss_masks']]\n",
                line=1, col=4, options=_HOOK),
        Invalid("def adv(args, rollout_data):\n    rollout_data['advantage'] = []\n",
                line=1, col=4, options=_HOOK),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != "custom_advantage_function_path":
            return
        body = _body(self.context.semantic, node)
        name = node.name.value
        for ret in body.returns:
            if _describe(ret.value) != "None":
                assert ret.value is not None
                self.report(ret.value, self.INVARIANT.render(
                    name=name, problem="returns a value; it is thrown away: store it in "
                    "rollout_data['advantages'] and return None"))
        params = [p.name.value for p in node.params.params]
        data = params[1] if len(params) > 1 else "rollout_data"
        if ("advantages" not in body.stored_keys and data not in body.call_args
                and "<update>" not in body.call_args):
            self.report(node.name, self.INVARIANT.render(
                name=name, problem=f"never sets {data}['advantages']"))


#: Hooks that get the step's flat samples (or the columns made from them).
_FLAT_HOOKS = frozenset({"custom_reward_post_process_path",
                         "custom_convert_samples_to_train_data_path",
                         "custom_advantage_function_path"})
#: Methods (and ``torch``/``numpy`` functions) that cut a flat sequence into rows by size.
_ROW_METHODS = frozenset({"view", "reshape", "unflatten", "split"})
_ROW_FUNCTIONS = frozenset({"torch.reshape", "numpy.reshape", "torch.split", "numpy.split",
                            "numpy.array_split", "torch.unflatten"})
_GROUP_SIZE = "n_samples_per_prompt"

#: A reward post-process hook that normalises ``rows`` of its rewards (VALID/INVALID).
_POST = ("import torch\ndef reward_post_process(args, samples):\n"
         "    raw = [s.get_reward_value(args) for s in samples]\n"
         "    r = torch.tensor(raw)\n    rows = {rows}\n"
         "    return raw, (rows - rows.mean(dim=-1, keepdim=True)).flatten().tolist()\n")


class PositionalGroups(FunctionTracker):
    """Post-processing hooks find a sample's group by ``group_index``, not by position.

    ## What it does
    In a ``--custom-reward-post-process-path``, ``--custom-convert-samples-to-train-data-path``
    or ``--custom-advantage-function-path`` function (and the module's helpers it calls),
    reports cutting the flat samples (or values made from them) into rows of
    ``n_samples_per_prompt`` by position: ``x.view(-1, n)``, ``.reshape``, ``.unflatten``,
    ``.split``, ``torch.reshape``/``np.reshape``/``np.split`` with a size that is
    ``args.n_samples_per_prompt`` (also through ``getattr``, ``vime.config.arg`` or a local
    name, and arithmetic on it), and ``range(start, stop, n)`` stepping by it. Runtime twins:
    VIM103 and VIM113 check the rollout's groups, not the hook's grouping.

    ## Why is this bad?
    The hook gets the step's flat samples. Rows of ``n_samples_per_prompt`` by position are
    the prompt groups only when every rollout is one sample and every group arrives whole
    and in order: the segments of a fan-out rollout (several samples sharing a
    ``rollout_id``) or uneven groups put samples of different prompts in one row, and the
    advantages computed from its mean are silently wrong (THUDM/slime#1414,
    radixark/miles#1573; failure kind: "uneven group sizes silently change GRPO
    advantages"). A warning: for even groups of one-sample rollouts the rows are right.

    ## Example
    ```python
    def reward_post_process(args, samples):
        raw = [s.get_reward_value(args) for s in samples]
        rows = torch.tensor(raw).view(-1, args.n_samples_per_prompt)
        return raw, (rows - rows.mean(dim=-1, keepdim=True)).flatten().tolist()
    ```

    ## Use instead
    ```python
    def reward_post_process(args, samples):
        raw = [s.get_reward_value(args) for s in samples]
        groups = defaultdict(list)
        for i, s in enumerate(samples):
            groups[s.group_index].append(i)
        rewards = list(raw)
        for idx in groups.values():
            mean = sum(raw[i] for i in idx) / len(idx)
            for i in idx:
                rewards[i] = raw[i] - mean
        return raw, rewards
    ```

    ## Known problems
    A size passed in from another module, or computed from ``len(samples)``, is not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM057"]
    NEEDS_HOOKS = True
    VALID = [
        # By group_index.
        Valid("from collections import defaultdict\n"
              "def reward_post_process(args, samples):\n"
              "    raw = [s.get_reward_value(args) for s in samples]\n"
              "    groups = defaultdict(list)\n"
              "    for i, s in enumerate(samples):\n"
              "        groups[s.group_index].append(i)\n"
              "    out = list(raw)\n    for idx in groups.values():\n"
              "        m = sum(raw[i] for i in idx) / len(idx)\n"
              "        for i in idx:\n            out[i] = raw[i] - m\n    return raw, out\n"),
        # A reshape by something else; a reshape in a hook that gets one group; another
        # function of the module that no flat hook calls.
        Valid(_POST.format(rows="r.view(1, -1)")),
        Valid("import torch\ndef dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    r = torch.tensor([s.get_reward_value(args) for s in samples])\n"
              "    return r.view(-1, args.n_samples_per_prompt).std() > 0\n"),
        Valid("def chunks(args, xs):\n"
              "    return [xs[i:i + args.n_samples_per_prompt]\n"
              "            for i in range(0, len(xs), args.n_samples_per_prompt)]\n"),
        # The group size used as a number, not a row size.
        Valid("def reward_post_process(args, samples):\n"
              "    raw = [s.get_reward_value(args) for s in samples]\n"
              "    scale = 1.0 / args.n_samples_per_prompt\n"
              "    return raw, [r * scale for r in raw]\n"),
    ]
    INVALID = [
        Invalid(_POST.format(rows="r.view(-1, args.n_samples_per_prompt)"), line=5, col=11),
        Invalid(_POST.format(rows="r.reshape(len(samples) // args.n_samples_per_prompt, "
                             "args.n_samples_per_prompt)"), line=5, col=11),
        # Through a local name and vime's config reader, with torch.reshape.
        Invalid("import torch\nfrom vime.config import arg\n"
                "def reward_post_process(args, samples):\n"
                "    raw = [s.get_reward_value(args) for s in samples]\n"
                "    n = arg(args, 'n_samples_per_prompt')\n"
                "    rows = torch.reshape(torch.tensor(raw), (-1, n))\n"
                "    return raw, (rows - rows.mean(-1, keepdim=True)).flatten().tolist()\n",
                line=6, col=11),
        # Chunks by range stepping, in a helper the hook calls.
        Invalid("def _normalise(raw, n):\n    out = []\n"
                "    for i in range(0, len(raw), n):\n        row = raw[i:i + n]\n"
                "        out += [x - sum(row) / len(row) for x in row]\n    return out\n"
                "def reward_post_process(args, samples):\n"
                "    raw = [s.get_reward_value(args) for s in samples]\n"
                "    return raw, _normalise(raw, args.n_samples_per_prompt)\n",
                line=3, col=13),
        # An advantage hook that splits the rewards by getattr's group size.
        Invalid("import torch\ndef adv(args, rollout_data):\n"
                "    g = getattr(args, 'n_samples_per_prompt', 1)\n"
                "    rows = torch.tensor(rollout_data['rewards']).split(g)\n"
                "    rollout_data['advantages'] = [r - r.mean() for r in rows]\n",
                line=4, col=11, options={"hooks": {"adv": "custom_advantage_function_path"}}),
    ]

    def _size(self, e: cst.BaseExpression, fn: cst.FunctionDef, depth: int = 0) -> bool:
        """``e`` is (or is computed from) ``n_samples_per_prompt``."""
        if depth > 4:
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value == _GROUP_SIZE
        if isinstance(e, cst.Call):
            names = self.qualified(e.func)
            reader = "builtins.getattr" in names or any(
                n.startswith("vime.") and n.endswith(".arg") for n in names)
            if reader and len(e.args) >= 2:
                v = e.args[1].value
                return isinstance(v, cst.SimpleString) and v.evaluated_value == _GROUP_SIZE
            if "builtins.int" in names and len(e.args) == 1:
                return self._size(e.args[0].value, fn, depth + 1)
            return False
        if isinstance(e, cst.BinaryOperation):
            return self._size(e.left, fn, depth + 1) or self._size(e.right, fn, depth + 1)
        if isinstance(e, cst.UnaryOperation):
            return self._size(e.expression, fn, depth + 1)
        if isinstance(e, cst.Tuple | cst.List):
            return any(self._size(el.value, fn, depth + 1) for el in e.elements)
        if isinstance(e, cst.Name):
            values = self.context.semantic.facts(fn).values.get(e.value, [])
            return any(v is not None and self._size(v, fn, depth + 1) for v in values)
        return False

    def _rows(self, call: cst.Call, fn: cst.FunctionDef) -> str | None:
        """What ``call`` does when it cuts rows of the group size by position."""
        func = call.func
        args = [a.value for a in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _ROW_METHODS \
                and any(self._size(a, fn) for a in args):
            return f".{func.attr.value}(...)"
        names = self.qualified(func)
        if names & _ROW_FUNCTIONS and any(self._size(a, fn) for a in args[1:]):
            return f"{code_of(func)}(...)"
        if "builtins.range" in names and len(args) == 3 and self._size(args[2], fn):
            return "range(..., step)"
        return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest not in _FLAT_HOOKS:
            return
        hook = node.name.value
        semantic = self.context.semantic
        flows = [node]
        for fn in semantic.closure(node):
            if fn is not node:
                flows.append(fn)
        # A helper called with the group size: its parameter stands for it there.
        sized: dict[int, set[str]] = {}
        for fn in flows:
            for site in semantic.facts(fn).calls:
                target = semantic.callee(site.node, fn)
                if target is None or target is fn:
                    continue
                params = [p.name.value for p in (*target.params.posonly_params,
                                                 *target.params.params)]
                for i, a in enumerate(site.node.args):
                    if a.keyword is None and not a.star and i < len(params) \
                            and self._size(a.value, fn):
                        sized.setdefault(id(target), set()).add(params[i])
                    elif a.keyword is not None and self._size(a.value, fn):
                        sized.setdefault(id(target), set()).add(a.keyword.value)
        for fn in flows:
            extra = sized.get(id(fn), set())
            for site in semantic.facts(fn).calls:
                call = site.node
                what = self._rows(call, fn) or (self._rows_by(call, extra) if extra else None)
                if what is None:
                    continue
                where = f"`{fn.name.value}`" + ("" if fn is node else f" (called by `{hook}`)")
                self.report(call, self.INVARIANT.render(problem=(
                    f"`{code_of(call)}` in {where} cuts the flat samples into rows of "
                    "n_samples_per_prompt by position: a fan-out rollout's segments or uneven "
                    "groups put samples of different prompts in one row, and the advantages "
                    "from its mean are wrong")))

    def _rows_by(self, call: cst.Call, params: set[str]) -> str | None:
        """``call`` cuts rows by one of ``params`` (a helper's parameter that the hook passes
        the group size to)."""
        def is_param(e: cst.BaseExpression) -> bool:
            return isinstance(e, cst.Name) and e.value in params or (
                isinstance(e, cst.BinaryOperation) and (is_param(e.left) or is_param(e.right)))
        func = call.func
        args = [a.value for a in call.args]
        if isinstance(func, cst.Attribute) and func.attr.value in _ROW_METHODS \
                and any(is_param(a) for a in args):
            return f".{func.attr.value}(...)"
        names = self.qualified(func)
        if names & _ROW_FUNCTIONS and any(is_param(a) for a in args[1:]):
            return f"{code_of(func)}(...)"
        if "builtins.range" in names and len(args) == 3 and is_param(args[2]):
            return "range(..., step)"
        return None
