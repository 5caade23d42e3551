"""Configuration and group handling: VIM010, VIM016, VIM017.

See ``docs/contract.md`` §4 (``args`` is configuration only), §7 (groups from ``get_samples``) and
§6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import dotted, string_value
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["ArgsMutation", "GroupExpandedTwice", "RewardArithmetic"]


def _has_args_param(fn: cst.FunctionDef | None) -> bool:
    if fn is None:
        return False
    return any(p.name.value == "args" for p in (*fn.params.posonly_params, *fn.params.params,
                                                 *fn.params.kwonly_params))


class ArgsMutation(FunctionTracker):
    """No attribute assignment on ``args``.

    ## What it does
    In modules that define hooks, reports ``args.x = ...``, ``args.x += ...`` and
    ``setattr(args, ...)`` inside functions that take an ``args`` parameter, also through a
    local name bound to ``args`` itself (``cfg = args``; a ``copy.copy(args)`` is fine).

    ## Why is this bad?
    ``args`` is the run's shared configuration, copied into every Ray actor. State stashed on
    it lives in one process only: other actors never see it, and a restart loses it (failure
    kind: "shared configuration").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        args.step_counter = rollout_id
    ```

    ## Use instead
    ```python
    _STATE = {"step": 0}

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        _STATE["step"] = rollout_id
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM016"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    n = args.rollout_batch_size\n"),
        Valid("args = parse()\nargs.x = 1\n"),
        # A copy of args (import copy) is the hook's own to change.
        Valid("import copy\n"
              "async def generate(args, sample, sampling_params):\n"
              "    local = copy.copy(args)\n"
              "    local.max_new_tokens = 16\n"
              "    return sample\n"),
        # A class hook keeps its state on self, reading args in __init__.
        Valid("class Rollout:\n"
              "    def __init__(self, args):\n"
              "        self.args = args\n"
              "        self.batch = args.rollout_batch_size\n"
              "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
              "        self.last = rollout_id\n"
              "        return data_source.get_samples(self.batch)\n"),
    ]
    INVALID = [
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    args.counter = rollout_id\n", line=2, col=4),
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    setattr(args, 'cache', {})\n    return sample\n", line=2, col=4),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    args.steps += 1\n", line=2, col=4),
        # An instance's __call__.
        Invalid("class Rollout:\n"
                "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
                "        args.last_rollout_id = rollout_id\n"
                "        return data_source.get_samples(1)\n"
                "generate_rollout = Rollout()\n", line=3, col=8),
        # In a module helper the hook calls with args.
        Invalid("def _setup(args):\n"
                "    args.tokenizer_loaded = True\n"
                "async def generate(args, sample, sampling_params):\n"
                "    _setup(args)\n"
                "    return sample\n", line=2, col=4),
        # Through a local alias of args (the same object, not a copy).
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    cfg = args\n"
                "    cfg.max_new_tokens = 16\n"
                "    return sample\n", line=3, col=4),
    ]

    def _is_args(self, expr: cst.BaseExpression) -> bool:
        """``args`` itself, or a local name every binding of which is plain ``args``
        (``cfg = args``: the same object, not a copy)."""
        if not isinstance(expr, cst.Name) or not _has_args_param(self.current):
            return False
        if expr.value == "args":
            return True
        assert self.current is not None
        values = self.context.semantic.facts(self.current).values.get(expr.value)
        return values is not None and len(values) > 0 and all(
            isinstance(v, cst.Name) and v.value == "args" for v in values)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and self._is_args(target.value):
            assert self.current is not None
            self.report(node, self.INVARIANT.render(attr=target.attr.value,
                                                    name=self.current.name.value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._check(node, t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node, node.target)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "setattr" \
                and len(node.args) >= 2 and self._is_args(node.args[0].value):
            assert self.current is not None
            attr = string_value(node.args[1].value) or "..."
            self.report(node, self.INVARIANT.render(attr=attr, name=self.current.name.value))


def _is_n_samples(expr: cst.BaseExpression) -> bool:
    """``args.n_samples_per_prompt`` (or ``self.args.…``: the same setting)."""
    name = dotted(expr) or ""
    return name == "args.n_samples_per_prompt" or name.endswith(".args.n_samples_per_prompt")


def _is_n_samples_range(node: cst.Call, values: dict[str, list[cst.BaseExpression | None]]
                        ) -> bool:
    """``range(args.n_samples_per_prompt)``, also through a local name bound only to it."""
    if not (isinstance(node.func, cst.Name) and node.func.value == "range"
            and len(node.args) == 1):
        return False
    arg = node.args[0].value
    if isinstance(arg, cst.Name):
        bound = values.get(arg.value)
        return bool(bound) and all(v is not None and _is_n_samples(v) for v in bound or ())
    return _is_n_samples(arg)


class GroupExpandedTwice(FunctionTracker):
    """Groups from ``get_samples`` are not expanded again by ``n_samples_per_prompt``.

    ## What it does
    Reports ``range(args.n_samples_per_prompt)`` (also ``self.args.…``, or a local name bound
    to it) in a function that also calls ``.get_samples(...)``. Runtime twin: VIM103.

    ## Why is this bad?
    ``get_samples`` already returns groups of ``n_samples_per_prompt`` copies of a prompt;
    copying each again makes groups of n² samples, which breaks group normalisation (failure
    kind: "group expanded twice").

    ## Example
    ```python
    groups = data_source.get_samples(args.rollout_batch_size)
    groups = [[copy.deepcopy(g[0]) for _ in range(args.n_samples_per_prompt)] for g in groups]
    ```

    ## Use instead
    ```python
    groups = data_source.get_samples(args.rollout_batch_size)
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM017"]
    VALID = [
        Valid("def f(args, ds):\n    return ds.get_samples(4)\n"),
        Valid("def f(args, prompts):\n    return [[p for _ in range(args.n_samples_per_prompt)]"
              " for p in prompts]\n"),
        # A class hook that checks the group size on self.args, without copying.
        Valid("class Rollout:\n"
              "    def __init__(self, args):\n"
              "        self.args = args\n"
              "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
              "        groups = data_source.get_samples(self.args.rollout_batch_size)\n"
              "        assert all(len(g) == self.args.n_samples_per_prompt for g in groups)\n"
              "        return groups\n"),
        # A local alias of the setting used for arithmetic; the loop is over the group.
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    n = args.n_samples_per_prompt\n"
              "    groups = data_source.get_samples(args.rollout_batch_size)\n"
              "    for group in groups:\n"
              "        for i in range(len(group)):\n"
              "            group[i].metadata['index'] = i % n\n"
              "    return groups\n"),
    ]
    INVALID = [
        Invalid("def f(args, ds):\n    groups = ds.get_samples(4)\n"
                "    return [[g[0] for _ in range(args.n_samples_per_prompt)] for g in groups]\n",
                line=3, col=27),
        # An instance's __call__ reading the setting through self.args.
        Invalid("import copy\n"
                "class Rollout:\n"
                "    def __init__(self, args):\n"
                "        self.args = args\n"
                "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
                "        groups = data_source.get_samples(self.args.rollout_batch_size)\n"
                "        return [[copy.deepcopy(g[0]) for _ in range(self.args.n_samples_per_prompt)]\n"
                "                for g in groups]\n", line=7, col=46),
        # Through a local alias of the setting, under an aliased import.
        Invalid("import copy as cp\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    n = args.n_samples_per_prompt\n"
                "    out = []\n"
                "    for group in data_source.get_samples(args.rollout_batch_size):\n"
                "        out.append([cp.copy(group[0]) for _ in range(n)])\n"
                "    return out\n", line=6, col=47),
        # A flattening comprehension that repeats every group.
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = data_source.get_samples(args.rollout_batch_size)\n"
                "    flat = [s for g in groups for _ in range(args.n_samples_per_prompt) for s in g]\n"
                "    return flat\n", line=3, col=39),
        # Inside a lambda given to map over the groups.
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = data_source.get_samples(args.rollout_batch_size)\n"
                "    return list(map(lambda g: [g[0] for _ in range(args.n_samples_per_prompt)], groups))\n",
                line=3, col=45),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.state: list[tuple[list[cst.Call], list[bool]]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.state.append(([], [False]))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        ranges, calls = self.state.pop()
        if calls[0]:
            for r in ranges:
                self.report(r, self.INVARIANT.render(name=original_node.name.value))
        super().leave_FunctionDef(original_node)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.state:
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "get_samples":
            self.state[-1][1][0] = True
        else:
            fn = next((f for f in reversed(self.functions) if f is not None), None)
            values = self.context.semantic.facts(fn).values if fn is not None else {}
            if _is_n_samples_range(node, values):
                self.state[-1][0].append(node)


_REWARD_HOOKS = frozenset({
    "dynamic_sampling_filter_path", "custom_reward_post_process_path",
    "custom_rollout_log_function_path", "custom_eval_rollout_log_function_path",
    "rollout_sample_filter_path", "rollout_all_samples_process_path", "buffer_filter_path",
    "custom_convert_samples_to_train_data_path",
})
_AGGREGATES = ("sum", "max", "min", "mean", "std", "var", "median", "fmean", "pstdev",
               "stdev", "tensor", "array")


def _is_reward(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "reward"


class RewardArithmetic(FunctionTracker):
    """Filters, post-processing and loggers read rewards through ``get_reward_value(args)``.

    ## What it does
    In dynamic/buffer/sample filters, reward post-processing, conversion and logging hooks,
    reports ``x.reward`` used as a number: an operand of arithmetic or of a comparison other
    than ``is None``, or the items of ``sum``/``mean``/``std``/``max``/``min``/``np.array``;
    also in the module's own helpers (and ``self`` methods) such a hook calls, reported in the
    helper under its name. Runtime twin: VIM110.

    ## Why is this bad?
    ``Sample.reward`` may be a dict read through ``--reward-key``; arithmetic on it raises,
    and comparisons silently answer wrong (failure kind: "filter assumes numeric reward").

    ## Example
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        return len({s.reward for s in samples}) > 1 and sum(s.reward for s in samples) > 0
    ```

    ## Use instead
    ```python
    def dynamic_sampling_filter(args, samples, **kwargs):
        rewards = [s.get_reward_value(args) for s in samples]
        return len(set(rewards)) > 1 and sum(rewards) > 0
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM010"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    return sum(s.get_reward_value(args) for s in samples) > 0\n"),
        Valid("def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    return all(s.reward is not None for s in samples)\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n    return sample.reward + 1\n"),
        # An instance's __call__ under an aliased import, through get_reward_value.
        Valid("import numpy as np\n"
              "class KeepMixed:\n"
              "    def __call__(self, args, samples, **kwargs):\n"
              "        return np.std([s.get_reward_value(args) for s in samples]) > 0\n"
              "dynamic_sampling_filter = KeepMixed()\n"),
        # A module helper the hook calls, through get_reward_value.
        Valid("def _mean(args, group):\n"
              "    return sum(s.get_reward_value(args) for s in group) / len(group)\n"
              "def dynamic_sampling_filter(args, samples, **kwargs):\n"
              "    return 0 < _mean(args, samples) < 1\n"),
    ]
    INVALID = [
        Invalid("def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    return sum(s.reward for s in samples) > 0\n", line=2, col=11),
        Invalid("def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    return samples[0].reward > 0.5\n", line=2, col=11),
        # An aliased import aggregating a list comprehension.
        Invalid("import numpy as np\n"
                "def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    return np.std([s.reward for s in samples]) > 0\n", line=3, col=11),
        # An instance's __call__, on a local alias of one group element.
        Invalid("class KeepMixed:\n"
                "    def __call__(self, args, samples, **kwargs):\n"
                "        best = max(samples, key=lambda s: s.get_reward_value(args))\n"
                "        return best.reward > 0.5\n"
                "dynamic_sampling_filter = KeepMixed()\n", line=4, col=15),
        # In a module helper the hook calls, reported there under the helper's name.
        Invalid("def _mean(group):\n"
                "    return sum(s.reward for s in group) / len(group)\n"
                "def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    return 0 < _mean(samples) < 1\n", line=2, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.active = 0
        self.active_stack: list[bool] = []
        #: Module-level helpers already checked for some hook (each is reported once).
        self.helpers_seen: set[int] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        b = self.hook_of(node)
        hook = b is not None and b.spec.dest in _REWARD_HOOKS
        if hook:
            self.active += 1
            self._check_helpers(node)
        self.active_stack.append(hook)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self.active_stack.pop():
            self.active -= 1
        super().leave_FunctionDef(original_node)

    def _check_helpers(self, hook: cst.FunctionDef) -> None:
        """The module's own functions the hook calls (not nested in it: the walk reaches
        those), each checked once, reported in the helper under the helper's name."""
        for helper in self.context.semantic.closure(hook, self.owner)[1:]:
            if id(helper) in self.helpers_seen or _inside(helper, hook):
                continue
            b = self.hook_of(helper)
            if b is not None and b.spec.dest in _REWARD_HOOKS:
                continue  # checked as a hook of its own
            self.helpers_seen.add(id(helper))
            collector = _RewardMath()
            helper.body.visit(collector)
            for found in collector.found:
                self.report(found, self.INVARIANT.render(name=helper.name.value))

    def _name(self) -> str:
        fn = self.functions[0] if self.functions else None
        return fn.name.value if fn is not None else "?"

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self.active and _reward_binop(node):
            self.report(node, self.INVARIANT.render(name=self._name()))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if self.active and _reward_comparison(node):
            self.report(node, self.INVARIANT.render(name=self._name()))

    def visit_Call(self, node: cst.Call) -> None:
        if self.active and _reward_aggregate(node):
            self.report(node, self.INVARIANT.render(name=self._name()))


def _inside(inner: cst.CSTNode, outer: cst.FunctionDef) -> bool:
    """True when ``inner`` is a node of ``outer``'s body (a nested ``def``)."""
    found = False

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal found
            if node is inner:
                found = True
            return not found

    outer.body.visit(_Find())
    return found


def _reward_binop(node: cst.BinaryOperation) -> bool:
    return _is_reward(node.left) or _is_reward(node.right)


def _reward_comparison(node: cst.Comparison) -> bool:
    operands = [node.left, *(c.comparator for c in node.comparisons)]
    identity = all(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn))
                   for c in node.comparisons)
    return not identity and any(_is_reward(o) for o in operands)


def _reward_aggregate(node: cst.Call) -> bool:
    if not node.args:
        return False
    name = (dotted(node.func) or "").rpartition(".")[2]
    if name not in _AGGREGATES:
        return False
    arg = node.args[0].value
    return isinstance(arg, (cst.GeneratorExp, cst.ListComp)) and _is_reward(arg.elt)


class _RewardMath(cst.CSTVisitor):
    """The reward arithmetic in one helper's body (the rule's three shapes)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[cst.CSTNode] = []

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if _reward_binop(node):
            self.found.append(node)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if _reward_comparison(node):
            self.found.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if _reward_aggregate(node):
            self.found.append(node)
