"""Hook signatures: the rollout function (VIM001), other hooks (VIM004), picklable targets (VIM015).

All signature judgements come from ``vime.contract.check_signature`` over ``Param`` tuples read
from the CST, the same function that ``load_function(..., hook=)`` runs at load time (VIM100).

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import GROUP_RM_SPEC, INVARIANTS, check_signature
from vime.contract.hooks import HookSpec
from vime_lint.static._cst import code_of
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import Fix, FunctionTracker, Rule
from vime_lint.static.analysis import HookTarget, Semantic

__all__ = ["HookSignature", "RolloutFunctionSignature", "UnpicklableHook"]

ROLLOUT_DESTS = ("rollout_function_path", "eval_function_path")


class _Rename(cst.CSTTransformer):
    """Rename a local name in a function (parameters and uses), not attributes or keywords."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        if self.depth == 1:
            return True
        names = {p.name.value for p in (*node.params.params, *node.params.posonly_params,
                                        *node.params.kwonly_params)}
        return self.old not in names

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.depth -= 1
        if self.depth == 0:
            return updated_node.with_changes(name=original_node.name)
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.old not in {p.name.value for p in node.params.params}

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if updated_node.value == self.old \
            else updated_node

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_ImportAlias(self, original_node: cst.ImportAlias,
                          updated_node: cst.ImportAlias) -> cst.ImportAlias:
        return original_node


def _rename_fix(semantic: Semantic, fn: cst.FunctionDef, old: str, new: str) -> Fix | None:
    if semantic.mentions(fn, new):
        return None  # the new name is taken in this function: a rename would change meaning
    renamed = fn.visit(_Rename(old, new))
    assert isinstance(renamed, cst.FunctionDef)
    return Fix(f"Rename `{old}` to `{new}`", True, ((fn, renamed),))


def _default_fix(fn: cst.FunctionDef, name: str, default: str) -> Fix | None:
    params = list(fn.params.params)
    for i, p in enumerate(params):
        if p.name.value == name and p.default is None:
            if any(q.default is None for q in params[i + 1:]):
                return None  # a default here would need defaults after it too
            new = p.with_changes(default=cst.parse_expression(default),
                                 equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                       cst.SimpleWhitespace("")))
            return Fix(f"Add the default `{name}={default}`", True, ((p, new),))
    return None


def _check(rule: Rule, target: HookTarget, binding: HookBinding, spec: HookSpec,
           invariant: str) -> None:
    """Report each ``check_signature`` violation of the code ``binding`` runs."""
    fn = target.function
    name = binding.function
    via = f" ({target.via})" if target.via else ""
    for v in check_signature(list(target.params), target.is_async, spec, where=name,
                             invariant=invariant):
        fix: Fix | None = None
        if isinstance(fn, cst.FunctionDef) and not target.via:
            for old, new in spec.renames.items():
                if f"`{old}`: did you mean `{new}`" in v.message:
                    fix = _rename_fix(rule.context.semantic, fn, old, new)
            for pname, default in spec.param_defaults.items():
                if f"`{pname}` without a default" in v.message:
                    fix = _default_fix(fn, pname, default)
        rule.report(target.node, v.message + via, severity=v.severity, fix_hint=v.fix, fix=fix)


def _hook_targets(rule: Rule, rollout: bool) -> list[tuple[HookBinding, HookTarget]]:
    """(first binding, target) of each hook name of the file, rollout/eval functions or the
    others; names whose code the module does not show are left out."""
    out = []
    for name, bindings in rule.context.hooks.items():
        mine = [b for b in bindings if (b.spec.dest in ROLLOUT_DESTS) == rollout]
        if not mine:
            continue
        b = mine[0]
        target = rule.context.semantic.target(name, class_hook=b.spec.kind == "class")
        if target is not None and target.function is not None:
            out.append((b, target))
    return out


class RolloutFunctionSignature(Rule):
    """The rollout (or eval) function has the signature the manager calls.

    ## What it does
    Checks a function bound to ``--rollout-function-path`` or ``--eval-function-path``
    against ``vime.contract.HOOKS``: a module-level plain ``def`` taking
    ``(args, rollout_id, data_source, evaluation=False)`` in that order.

    ## Why is this bad?
    The manager calls ``fn(args, rollout_id, data_source, evaluation=...)`` synchronously.
    An ``async def`` returns a coroutine that never runs; a missing ``data_source`` or a
    missing ``evaluation`` default fails the first call, after the engines have started;
    ``data_buffer`` is the stale name of the third parameter (failure kind: "signature drift
    (async, no data_source)"). ``load_function`` raises the same at load time (VIM100).

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_buffer, evaluation):
        ...
    ```

    ## Use instead
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        ...
    ```

    ## Fix safety
    Adding ``evaluation=False`` is safe: the manager always passes ``evaluation``. Renaming
    ``data_buffer`` to ``data_source`` (in the body too) is safe: the argument is passed
    positionally; the fix is not offered when ``data_source`` is already used in the function.
    """

    INVARIANT = INVARIANTS["VIM001"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    pass\n"),
        Valid("def helper(args, rollout_id):\n    pass\n"),
        Valid("class C:\n    def generate_rollout(self, x):\n        pass\n"),
        Valid("def generate(prompt):\n    pass\n"),
        # An instance whose __call__ fits; a partial binding a keyword-only extra; an alias.
        Valid("class Runner:\n"
              "    def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
              "        pass\ngenerate_rollout = Runner()\n"),
        Valid("from functools import partial\n"
              "def _impl(args, rollout_id, data_source, evaluation=False, *, tokenizer):\n"
              "    pass\ngenerate_rollout = partial(_impl, tokenizer=None)\n"),
        Valid("def _impl(args, rollout_id, data_source, evaluation=False):\n    pass\n"
              "generate_rollout = _impl\n"),
        # Decorated with functools.wraps around a plain wrapper; and by an unknown decorator.
        Valid("import functools\ndef timed(fn):\n    @functools.wraps(fn)\n"
              "    def wrapper(*args, **kwargs):\n        return fn(*args, **kwargs)\n"
              "    return wrapper\n"
              "@timed\ndef generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    pass\n"),
        # A name known only from the launch configuration.
        Valid("def odd_name(args, rollout_id, data_source, evaluation=False):\n    pass\n",
              options={"hooks": {"odd_name": "rollout_function_path"}}),
    ]
    INVALID = [
        Invalid("def generate_rollout(args, rollout_id, data_buffer, evaluation=False):\n"
                "    return data_buffer.get_samples(1)\n",
                line=1, col=4,
                fixed="def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                      "    return data_source.get_samples(1)\n"),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation):\n    pass\n",
                line=1, col=4,
                fixed="def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                      "    pass\n"),
        Invalid("async def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    pass\n", line=1, col=10),
        Invalid("def generate_rollout(args, rollout_id, *, evaluation=False):\n    pass\n",
                line=1, col=4),
        Invalid("def generate_rollout(args, rollout_id, evaluation, data_source):\n    pass\n",
                line=1, col=4),
        Invalid("def my_rollout(args, rollout_id, data):\n    pass\n", line=1, col=4,
                options={"hooks": {"my_rollout": "rollout_function_path"}}),
        # An instance whose __call__ is async: vime calls it synchronously.
        Invalid("class Runner:\n"
                "    async def __call__(self, args, rollout_id, data_source, evaluation=False):\n"
                "        pass\ngenerate_rollout = Runner()\n", line=4, col=19),
        # An instance whose plain __call__ lacks data_source (named by the launch config).
        Invalid("class Runner:\n    def __call__(self, args, rollout_id, evaluation=False):\n"
                "        pass\nrun_me = Runner()\n", line=4, col=9,
                options={"hooks": {"run_me": "rollout_function_path"}}),
        # A module-level lambda without evaluation.
        Invalid("generate_rollout = lambda args, rollout_id, data_source: None\n",
                line=1, col=19),
        # functools.partial binding a slot the call site passes.
        Invalid("import functools\n"
                "def _impl(tokenizer, args, rollout_id, data_source, evaluation=False):\n"
                "    pass\ngenerate_rollout = functools.partial(_impl, None, None)\n",
                line=4, col=19),
        # An alias of an async def.
        Invalid("async def _impl(args, rollout_id, data_source, evaluation=False):\n    pass\n"
                "generate_rollout = _impl\n", line=3, col=19),
        # Decorated without functools.wraps: vime calls the async wrapper.
        Invalid("def timed(fn):\n    async def wrapper(*args, **kwargs):\n"
                "        return fn(*args, **kwargs)\n    return wrapper\n"
                "@timed\ndef generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    pass\n", line=6, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for binding, target in _hook_targets(self, rollout=True):
            _check(self, target, binding, binding.spec, "VIM001")


class HookSignature(Rule):
    """Every other hook matches its ``HookSpec``: ``def``/``async def``, arity, keywords.

    ## What it does
    Checks functions bound to a hook other than the rollout function (custom generate,
    reward function single and ``--group-rm`` batch, dynamic sampling filter, buffer filter,
    data source class, sample hook, ...) with ``vime.contract.check_signature``.

    ## Why is this bad?
    vime awaits ``--custom-generate-function-path`` and ``--custom-rm-path`` hooks and calls
    the filters synchronously. A plain ``def`` reward function returns a float that is then
    awaited (``TypeError``); an ``async def`` filter returns a coroutine, which is truthy and
    keeps every group; a missing parameter fails at the first call, often hours into a run
    (failure kinds: "signature vs call mode", "async reward not awaited").

    ## Example
    ```python
    def generate(args, sample, sampling_params):      # --custom-generate-function-path
        ...
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        ...
    ```

    ## Fix safety
    No fix: changing ``def`` to ``async def`` changes every caller.
    """

    INVARIANT = INVARIANTS["VIM004"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def generate(args, sample, sampling_params):\n    return sample\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n    return 1.0\n"),
        Valid("async def reward_func(args, samples, **kwargs):\n    return [1.0]\n",
              options={"launch_flags": ["--group-rm"]}),
        Valid("def sample_hook(args, sample, rollout_id=None):\n    return None\n"),
        Valid("async def sample_hook(args, sample):\n    return None\n"),
        Valid("class Source:\n    def __init__(self, args):\n        self.args = args\n",
              options={"hooks": {"Source": "data_source_path"}}),
        Valid("class Judge:\n    async def __call__(self, args, sample, **kwargs):\n"
              "        return 1.0\nreward_func = Judge()\n"),
        Valid("import functools\nasync def _rm(args, sample, scale=1.0, **kwargs):\n"
              "    return scale\nreward_func = functools.partial(_rm, scale=2.0)\n"),
        Valid("async def _gen(args, sample, sampling_params):\n    return sample\n"
              "custom_generate = _gen\n"),
        # Positional parameters bind by position: a group reward's `samples` without a known
        # --group-rm, a generate's `params`, an instance's `batch`.
        Valid("async def reward_func(args, samples, **kwargs):\n    return [1.0 for _ in samples]\n"),
        Valid("async def generate(args, sample, params):\n    return sample\n"),
        Valid("class Judge:\n    async def __call__(self, args, batch, **kwargs):\n"
              "        return [1.0] * len(batch)\nreward_func = Judge()\n"),
        Valid("def dynamic_sampling_filter(args, group):\n    return True\n"),
        # A group reward (--group-rm: `fn(args, samples, **kwargs)`) under any positional
        # name: a method, a launch-named function, a partial.
        Valid("class Judge:\n    async def __call__(self, args, samples, **kwargs):\n"
              "        return [1.0] * len(samples)\nreward_func = Judge()\n",
              options={"launch_flags": ["--group-rm"]}),
        Valid("async def score_group(args, batch, **kwargs):\n    return [0.0 for _ in batch]\n",
              options={"launch_flags": ["--group-rm"],
                       "hooks": {"score_group": "custom_rm_path"}}),
        Valid("import functools\nasync def _rm(args, samples, scale=1.0, **kwargs):\n"
              "    return [scale] * len(samples)\nreward_func = functools.partial(_rm, scale=2.0)\n",
              options={"launch_flags": ["--group-rm"]}),
    ]
    INVALID = [
        Invalid("def generate(args, sample, sampling_params):\n    return sample\n",
                line=1, col=4),
        Invalid("async def reward_func(args, sample):\n    return 1.0\n", line=1, col=10,
                options={"launch_flags": ["--group-rm"]}, severity="warning",
                fixed="async def reward_func(args, samples):\n    return 1.0\n"),
        Invalid("async def dynamic_sampling_filter(args, samples):\n    return True\n",
                line=1, col=10),
        Invalid("def buffer_filter(args, buffer, num_samples):\n    return []\n", line=1, col=4),
        Invalid("class Source:\n    def __init__(self):\n        pass\n", line=2, col=8,
                options={"hooks": {"Source": "data_source_path"}}),
        # A reward instance whose __call__ is a plain def (vime awaits it).
        Invalid("class Judge:\n    def __call__(self, args, sample, **kwargs):\n"
                "        return 1.0\nreward_func = Judge()\n", line=4, col=14),
        # A reward lambda (vime awaits it), named by the launch configuration.
        Invalid("score = lambda args, sample, **kw: 1.0\n", line=1, col=8,
                options={"hooks": {"score": "custom_rm_path"}}),
        # A partial of a generate function that binds `sample`.
        Invalid("import functools\nasync def _gen(args, sample, sampling_params):\n"
                "    return sample\ngenerate = functools.partial(_gen, None, None)\n",
                line=4, col=11),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for binding, target in _hook_targets(self, rollout=False):
            spec = binding.spec
            if spec.dest == "custom_rm_path" and "--group-rm" in self.context.options.launch_flags:
                spec = GROUP_RM_SPEC
            _check(self, target, binding, spec, "VIM004")


class UnpicklableHook(FunctionTracker):
    """A hook named by configuration is a module-level ``def`` or ``class``.

    ## What it does
    Reports a ``--*-path`` target (from launch scripts or ``[tool.vime_lint] hooks``) that the
    module binds to a ``lambda`` or a ``functools.partial`` instead of a ``def``, or to the
    value of a call of the module's own factory function that returns a nested ``def`` or a
    ``lambda`` (``reward_func = make_reward(0.5)``; the returned value is followed through
    local names and the module's helpers, as the shared analysis does).

    ## Why is this bad?
    Hooks are loaded by dotted path inside Ray actors and sent between processes; a lambda,
    partial or nested function has no importable qualified name and cannot be pickled by
    reference (failure kind: "user callable not picklable"; verl-project/verl#1296).

    ## Example
    ```python
    reward_func = lambda args, sample, **kw: 1.0
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        return 1.0
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM015"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("async def rm(args, sample, **kwargs):\n    return 1.0\n",
              options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("rm = lambda args, sample: 1.0\n"),
        # A factory that returns a module-level function or an instance of a module-level
        # class: both are picklable by reference.
        Valid("async def _scored(args, sample, **kwargs):\n    return 1.0\n"
              "def make_reward(weight):\n    return _scored\nrm = make_reward(0.5)\n",
              options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("class Judge:\n    def __init__(self, weight):\n        self.weight = weight\n"
              "    async def __call__(self, args, sample, **kwargs):\n"
              "        return self.weight\n"
              "def make_reward(weight):\n    judge = Judge(weight)\n    return judge\n"
              "rm = make_reward(0.5)\n", options={"hooks": {"rm": "custom_rm_path"}}),
        # A factory's nested function used inside the module, not bound as a hook.
        Valid("def make(weight):\n    def inner(x):\n        return weight * x\n"
              "    return inner\nscale = make(2)\n"
              "async def rm(args, sample, **kwargs):\n    return scale(1.0)\n",
              options={"hooks": {"rm": "custom_rm_path"}}),
    ]
    INVALID = [
        Invalid("rm = lambda args, sample: 1.0\n", line=1, col=0,
                options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("import functools\nrm = functools.partial(f, scale=2)\n", line=2, col=0,
                options={"hooks": {"rm": "custom_rm_path"}}),
        # A factory's nested function (directly, through a local name), or its lambda.
        Invalid("def make_reward(weight):\n    async def scored(args, sample, **kwargs):\n"
                "        return weight\n    return scored\nrm = make_reward(0.5)\n",
                line=5, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("def make_generate(turns):\n"
                "    async def generate(args, sample, sampling_params):\n"
                "        return sample\n    fn = generate\n    return fn\n"
                "generate = make_generate(3)\n", line=6, col=0,
                options={"hooks": {"generate": "custom_generate_function_path"}}),
        Invalid("def _build(w):\n    return lambda args, sample, **kw: w\n"
                "def make_reward(w):\n    return _build(w)\nrm = make_reward(1.0)\n",
                line=5, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
    ]

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.functions or self.class_depth:
            return
        for target in node.targets:
            t = target.target
            if not isinstance(t, cst.Name):
                continue
            binding = self.context.binding(t.value)
            if binding is None or not binding.explicit:
                continue
            value = node.value
            what = None
            if isinstance(value, cst.Lambda):
                what = "a lambda"
            elif isinstance(value, cst.Call):
                func = value.func
                name = func.attr.value if isinstance(func, cst.Attribute) else (
                    func.value if isinstance(func, cst.Name) else "")
                if name == "partial":
                    what = "a functools.partial"
            if what is None and isinstance(value, cst.Call):
                what = self._factory_result(value)
            if what is not None:
                self.report(node,
                            self.INVARIANT.render(name=t.value, problem=what))

    def _factory_result(self, call: cst.Call) -> str | None:
        """What the module's own factory called by ``call`` returns when it is a nested
        ``def`` or a ``lambda`` (followed through local names and the module's helpers)."""
        made = f"`{code_of(call)}`"
        leaf = self._made(call, None, 0)
        if leaf == "<lambda>":
            return f"a lambda returned by {made}"
        if leaf is not None:
            return (f"the nested function `{leaf}` returned by {made} (only a module-level "
                    "def or class is picklable by reference)")
        return None

    def _made(self, expr: cst.BaseExpression | None, fn: cst.FunctionDef | None, depth: int
              ) -> str | None:
        """The nested ``def``'s name (``"<lambda>"`` for a lambda) that ``expr`` in ``fn``
        (None: module level) evaluates to, else None."""
        semantic = self.context.semantic
        if expr is None or depth > 6:
            return None
        if isinstance(expr, cst.Lambda):
            return "<lambda>" if fn is not None else None
        if isinstance(expr, cst.Await):
            return self._made(expr.expression, fn, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self._made(expr.body, fn, depth + 1) or self._made(expr.orelse, fn, depth + 1)
        if isinstance(expr, cst.Name) and fn is not None:
            facts = semantic.facts(fn)
            values = facts.values.get(expr.value, [])
            if expr.value in facts.nested and all(v is None for v in values):
                return expr.value
            for v in values:
                hit = self._made(v, fn, depth + 1)
                if hit is not None:
                    return hit
            return None
        if isinstance(expr, cst.Call):
            target = semantic.callee(expr, fn)
            if target is None or target is fn:
                return None
            for r in semantic.facts(target).returns:
                hit = self._made(r.value, target, depth + 1)
                if hit is not None:
                    return hit
        return None
