"""VIM015: a hook path names a module-level function or class instance that Ray can pickle,
not a nested function, a lambda or a factory's result.

See ``docs/contract.md`` §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis._bindings import has_wraps, wrapper_of

__all__ = ["UnpicklableHook"]


class UnpicklableHook(FunctionTracker):
    """A hook named by configuration is a module-level ``def`` or ``class``.

    ## What it does
    Reports a ``--*-path`` target (from launch scripts or ``[tool.vime_lint] hooks``) that the
    module binds to a ``lambda`` or a ``functools.partial`` instead of a ``def``, or to the
    value of a call of the module's own factory function that returns a nested ``def`` or a
    ``lambda`` (``reward_func = make_reward(0.5)``; the returned value is followed through
    local names and the module's helpers, as the shared analysis does). A lambda or partial
    reached through a module-level alias, ``partial`` imported under another name, and a
    ``def`` decorated by the module's own decorator whose wrapper has no ``functools.wraps``
    (the name is bound to ``timed.<locals>.wrapper``) are reported too.

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
        Valid("""
            async def rm(args, sample, **kwargs):
                return 1.0
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("rm = lambda args, sample: 1.0\n"),
        # A factory that returns a module-level function or an instance of a module-level
        # class: both are picklable by reference.
        Valid("""
            async def _scored(args, sample, **kwargs):
                return 1.0
            def make_reward(weight):
                return _scored
            rm = make_reward(0.5)
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("""
            class Judge:
                def __init__(self, weight):
                    self.weight = weight
                async def __call__(self, args, sample, **kwargs):
                    return self.weight
            def make_reward(weight):
                judge = Judge(weight)
                return judge
            rm = make_reward(0.5)
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        # The same decorator with functools.wraps (the wrapper takes the hook's qualified
        # name); a method of a module-level instance; partials and lambdas inside the hook;
        # an alias of a def.
        Valid("""
            import functools
            def timed(fn):
                @functools.wraps(fn)
                async def wrapper(*a, **k):
                    return await fn(*a, **k)
                return wrapper
            @timed
            async def rm(args, sample, **kwargs):
                return 1.0
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("""
            class Judge:
                async def score(self, args, sample, **kwargs):
                    return 1.0
            rm = Judge().score
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("""
            import functools
            async def rm(args, sample, **kwargs):
                f = functools.partial(max, 0.0)
                return [f(x) for x in (lambda: [1.0])()][0]
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        Valid("""
            async def _rm(args, sample, **kwargs):
                return 1.0
            rm = _rm
        """, options={"hooks": {"rm": "custom_rm_path"}}),
        # A factory's nested function used inside the module, not bound as a hook.
        Valid("""
            def make(weight):
                def inner(x):
                    return weight * x
                return inner
            scale = make(2)
            async def rm(args, sample, **kwargs):
                return scale(1.0)
        """, options={"hooks": {"rm": "custom_rm_path"}}),
    ]
    INVALID = [
        # Through a module-level alias; a partial imported under another name; a def
        # decorated by the module's decorator whose wrapper lacks functools.wraps.
        Invalid("""
            _score = lambda args, sample, **kw: 1.0
            rm = _score
        """, line=2, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("""
            from functools import partial as bind
            async def _rm(args, sample, scale=1.0, **kwargs):
                return scale
            rm = bind(_rm, scale=2.0)
        """, line=4, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("""
            def timed(fn):
                async def wrapper(*a, **k):
                    return await fn(*a, **k)
                return wrapper
            @timed
            async def rm(args, sample, **kwargs):
                return 1.0
        """, line=6, col=10, options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("rm = lambda args, sample: 1.0\n", line=1, col=0,
                options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("""
            import functools
            rm = functools.partial(f, scale=2)
        """, line=2, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
        # A factory's nested function (directly, through a local name), or its lambda.
        Invalid("""
            def make_reward(weight):
                async def scored(args, sample, **kwargs):
                    return weight
                return scored
            rm = make_reward(0.5)
        """, line=5, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
        Invalid("""
            def make_generate(turns):
                async def generate(args, sample, sampling_params):
                    return sample
                fn = generate
                return fn
            generate = make_generate(3)
        """, line=6, col=0, options={"hooks": {"generate": "custom_generate_function_path"}}),
        Invalid("""
            def _build(w):
                return lambda args, sample, **kw: w
            def make_reward(w):
                return _build(w)
            rm = make_reward(1.0)
        """, line=5, col=0, options={"hooks": {"rm": "custom_rm_path"}}),
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
            # A lambda or functools.partial (under any import name), also through a
            # module-level alias (rm = _scorer), as the shared binding resolution sees it.
            hook = self.context.semantic.target(t.value)
            what = (hook.unpicklable or None) if hook is not None else None
            if what is not None and hook is not None and hook.via.startswith("an alias"):
                what = f"{what} ({hook.via.split(',')[0]})"
            if what is None and isinstance(value, cst.Call):
                what = self._factory_result(value)
            if what is not None:
                self.report(node,
                            self.INVARIANT.render(name=t.value, problem=what))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A hook ``def`` decorated by the module's own decorator whose wrapper has no
        ``functools.wraps``: the name is bound to the nested wrapper, whose qualified name
        (``timed.<locals>.wrapper``) cannot be imported."""
        outer = bool(self.functions or self.class_depth)
        super().visit_FunctionDef(node)
        if outer or not node.decorators:
            return
        binding = self.context.binding(node.name.value)
        if binding is None or not binding.explicit:
            return
        semantic = self.context.semantic
        for d in node.decorators:
            if not isinstance(d.decorator, cst.Name):
                continue
            deco = semantic.definitions.get(d.decorator.value)
            wrapper = wrapper_of(deco) if isinstance(deco, cst.FunctionDef) else None
            if wrapper is not None and not has_wraps(wrapper, semantic.names):
                self.report(node.name, self.INVARIANT.render(
                    name=node.name.value,
                    problem=f"the nested function `{wrapper.name.value}` of its decorator "
                    f"`{d.decorator.value}` (no functools.wraps: only a module-level def or "
                    "class is picklable by reference)"))
                return

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
