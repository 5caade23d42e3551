"""VIM026: hook functions, and the module's functions a hook calls, have no mutable default
arguments.

See ``docs/contract.md`` §2 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["MutableDefaultArgument"]


_MUTABLE_CALLS = frozenset({"builtins.dict", "builtins.list", "builtins.set",
                            "builtins.bytearray", "collections.defaultdict",
                            "collections.OrderedDict", "collections.Counter",
                            "collections.deque"})


class MutableDefaultArgument(FunctionTracker):
    """Hook functions, and the module's functions a hook calls, have no mutable default
    arguments.

    ## What it does
    Reports a parameter whose default is a list, dict or set display, a comprehension, or a
    call of ``dict``/``list``/``set``/``collections.defaultdict``/``OrderedDict``/``Counter``/
    ``deque`` (resolved by qualified name), in a hook function (any ``--*-path`` binding) or
    in a function of the module that a hook reaches: the semantic model's closure of the hook
    (module-level helpers, nested ``def``s, ``self.method`` of a hook class), and the
    functions they hand to ``map``/``filter``/``sorted(key=...)`` or call through
    ``functools.partial``, transitively.
    A helper no hook calls is not reported.

    ## Why is this bad?
    A default is evaluated once, when the module is imported: every call of the hook (and of
    each helper it calls without that argument), for every sample of every step in that
    process, shares the same object and sees what earlier calls put in it, while other Ray
    actors hold their own copy (NovaSky-AI/SkyRL#1189; failure kind: "template object shared
    between samples"). A warning: a deliberate per-process cache is legitimate, but it reads
    better at module level.

    ## Example
    ```python
    async def reward_func(args, sample, seen={}, **kwargs):
        seen[sample.index] = sample.response
        ...
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        seen: dict[int, str] = {}
        ...
    ```

    ## Known problems
    A ``lambda``'s mutable default (``_norm = lambda x, seen=[]: x``) is not reported.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM026"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def reward_func(args, sample, scale=1.0, names=('a', 'b'), **kwargs):
                return scale
        """),
        Valid("""
            def helper(x, cache={}):
                return cache
        """),
        Valid("""
            async def reward_func(args, sample, cache=None, **kwargs):
                cache = {} if cache is None else cache
                return 1.0
        """),
        # A helper with a mutable default that no hook calls; a hook's helper without one.
        Valid("""
            def _unused(x, seen=[]):
                return x
            def _score(text, names=('a',)):
                return len(text)
            async def reward_func(args, sample, **kwargs):
                return _score(sample.response)
        """),
        # An immutable default (frozenset) of a helper mapped over the batch; a None default
        # on a method of an instance bound as the hook.
        Valid("""
            def _score(text, names=frozenset()):
                return len(text)
            async def reward_func(args, samples, **kwargs):
                return list(map(_score, [s.response for s in samples]))
        """),
        Valid("""
            class Judge:
                async def score(self, args, sample, seen=None, **kwargs):
                    return 1.0
            reward_func = Judge().score
        """),
        # A local function of the same name as a module-level helper is another function.
        Valid("""
            def _norm(x, seen=[]):
                return x
            async def reward_func(args, sample, **kwargs):
                def _norm(x):
                    return x
                return _norm(1.0)
        """),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample, seen={}, **kwargs):
                return 1.0
        """, line=1, col=41),
        Invalid("""
            from collections import defaultdict as dd
            async def generate(args, sample, sampling_params, counts=dd(int)):
                return sample
        """, line=2, col=57),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False, history=[]):
                pass
        """, line=1, col=78),
        # A module-level helper the reward calls.
        Invalid("""
            def _score(text, cache={}):
                return cache.setdefault(text, len(text))
            async def reward_func(args, sample, **kwargs):
                return _score(sample.response)
        """, line=1, col=23),
        # ... reached through another helper.
        Invalid("""
            def _inner(x, seen=list()):
                seen.append(x)
                return x
            def _outer(x):
                return _inner(x)
            async def reward_func(args, sample, **kwargs):
                return _outer(1.0)
        """, line=1, col=19),
        # ... a nested def of the hook.
        Invalid("""
            async def generate(args, sample, sampling_params):
                def push(msg, log=[]):
                    log.append(msg)
                push(sample.prompt)
                return sample
        """, line=2, col=22),
        # ... a helper called in a comprehension, or handed to map(); a method of an
        # instance bound as the hook.
        Invalid("""
            def _score(text, cache={}):
                return len(text)
            async def reward_func(args, samples, **kwargs):
                return [_score(s.response) for s in samples]
        """, line=1, col=23),
        Invalid("""
            def _score(text, cache={}):
                return len(text)
            async def reward_func(args, samples, **kwargs):
                return list(map(_score, [s.response for s in samples]))
        """, line=1, col=23),
        Invalid("""
            class Judge:
                async def score(self, args, sample, seen=[], **kwargs):
                    return 1.0
            reward_func = Judge().score
        """, line=2, col=45),
        # ... a method of a hook class that its __call__ calls.
        Invalid("""
            class Judge:
                def _cached(self, text, memo={}):
                    return memo
                async def __call__(self, args, sample, **kwargs):
                    return len(self._cached(sample.response))
            reward_func = Judge()
        """, line=2, col=33),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        semantic = self.context.semantic
        #: id(function) -> how a hook reaches it (the hooks themselves: "hook `name`").
        self.reached: dict[int, str] = {}
        for binding, target in self.context.targets.values():
            fn = target.function
            if not isinstance(fn, cst.FunctionDef):
                continue
            self.reached[id(fn)] = f"hook `{binding.function}`"
            # the closure (calls), and what the functions in it hand to map/filter/sorted's
            # key= or call through functools.partial (the model's invocations), transitively
            todo = list(semantic.closure(fn, target.owner))
            seen = {id(f) for f in todo}
            i = 0
            while i < len(todo) and len(todo) < 64:
                for inv in semantic.invocations(todo[i]).found:
                    callee = inv.callee
                    if isinstance(callee, cst.FunctionDef) and id(callee) not in seen:
                        seen.add(id(callee))
                        todo += [h for h in semantic.closure(callee, target.owner)
                                 if id(h) not in seen or h is callee]
                        seen.update(id(h) for h in todo)
                i += 1
            for helper in todo[1:]:
                self.reached.setdefault(
                    id(helper), f"`{helper.name.value}` (called by hook `{binding.function}`)")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        where = f"hook `{binding.function}`" if binding is not None \
            else self.reached.get(id(node))
        if where is None:
            return
        for p in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            default = p.default
            if default is None:
                continue
            mutable = isinstance(default, (cst.List, cst.Dict, cst.Set, cst.ListComp,
                                           cst.DictComp, cst.SetComp))
            if isinstance(default, cst.Call):
                mutable = bool(self.qualified(default.func) & _MUTABLE_CALLS)
            if mutable:
                self.report(default, self.INVARIANT.render(
                    where=where, param=p.name.value, code=code_of(default)))
