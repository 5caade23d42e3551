"""VIM029: hooks and the helpers they call never make an event loop per call
(``asyncio.run(...)``, a new loop): the rollout runs on one event loop.

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime.contract.errors import Severity
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["AsyncioRunInHook"]


#: Calls that make (and, for ``asyncio.run``, close) an event loop per call.
_RUN_LOOP = frozenset({"asyncio.run", "asyncio.runners.run"})
_LOOP_FACTORIES = frozenset({"asyncio.new_event_loop", "asyncio.get_event_loop",
                             "asyncio.events.new_event_loop", "asyncio.events.get_event_loop"})
#: The thread's own loop: the same object on every call from one thread (set once).
_THREAD_LOOP = frozenset({"asyncio.get_event_loop", "asyncio.events.get_event_loop"})


class AsyncioRunInHook(FunctionTracker):
    """Hooks and the helpers they call never call ``asyncio.run(...)``.

    ## What it does
    In every hook (functions bound by configuration, annotation or conventional name, the
    methods of a hook class, the ``__call__`` of an instance bound as the hook) and the module-level helpers it calls, transitively, reports
    ``asyncio.run(...)`` (also ``from asyncio import run``, ``import asyncio as aio``) and
    ``loop.run_until_complete(...)`` on a loop from ``asyncio.new_event_loop()`` /
    ``asyncio.get_event_loop()``. In sync code, ``run_until_complete`` on the thread's own loop
    (``asyncio.get_event_loop()``, set once and reused by every call from the thread) works
    and is a warning. Code under ``if __name__ == "__main__":`` and functions no hook reaches
    are not hook code and are left alone.

    ## Why is this bad?
    ``asyncio.run`` makes a new event loop and closes it when the call returns. HTTP clients
    and engine connections made on one step's loop (vime's shared client, an
    ``httpx.AsyncClient`` at module level) are then used on a closed loop by the next step:
    "Event loop is closed", or a hang. Inside an ``async def`` hook, which already runs on a
    loop, it raises "asyncio.run() cannot be called from a running event loop" at the first
    call (NovaSky-AI/SkyRL#868; failure kind: "event loop closed between steps").

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        asyncio.run(generate_all(args, groups))
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Use instead
    ```python
    from vime.utils.async_utils import run

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        run(generate_all(args, groups))          # one background loop per process
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Known problems
    A nested function that runs ``asyncio.run`` in a thread of its own is reported too; when
    its coroutine shares no client with the rest of the process, silence it with
    ``# noqa: VIM029``.

    ## Fix safety
    No fix: replacing the call changes which loop the coroutine runs on.
    """

    INVARIANT = INVARIANTS["VIM029"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            from vime.utils.async_utils import run
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return run(go(args, data_source))
        """),
        Valid("""
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
            def main():
                asyncio.run(smoke_test())
            if __name__ == '__main__':
                asyncio.run(smoke_test())
        """),
        Valid("""
            import asyncio
            async def reward_func(args, sample, **kwargs):
                return await asyncio.wait_for(judge(sample), 10)
        """),
        # An instance's async __call__ awaiting gather (aliased import), no new loop.
        Valid("""
            import asyncio as aio
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    scores = await aio.gather(*[judge(sample, k) for k in range(3)])
                    return sum(scores) / len(scores)
            reward_func = Judge()
        """),
        # An aliased asyncio.run only under __main__; the hook awaits the helper.
        Valid("""
            from asyncio import run as arun
            async def _score_all(args, samples):
                return [await score(args, s) for s in samples]
            async def reward_func(args, sample, **kwargs):
                return (await _score_all(args, [sample]))[0]
            if __name__ == '__main__':
                print(arun(_score_all(None, [])))
        """),
    ]
    INVALID = [
        Invalid("""
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(args.rollout_batch_size)
                asyncio.run(generate_all(args, groups))
        """, line=4, col=4),
        Invalid("""
            from asyncio import run as arun
            def _score_all(args, samples):
                return arun(score(args, samples))
            def dynamic_sampling_filter(args, samples, **kwargs):
                return _score_all(args, samples)
        """, line=3, col=11),
        Invalid("""
            import asyncio as aio
            async def reward_func(args, sample, **kwargs):
                return aio.run(judge(sample))
        """, line=3, col=11),
        Invalid("""
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                loop = asyncio.new_event_loop()
                return loop.run_until_complete(go(args))
        """, line=4, col=11),
        Invalid("""
            import asyncio
            class Source:
                def __init__(self, args):
                    self.rows = asyncio.run(load(args))
        """, line=4, col=20, options={"hooks": {"Source": "data_source_path"}}),
        # The thread's own loop, reused by every call from the thread: it works (a warning).
        Invalid("""
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                try:
                    loop = asyncio.get_event_loop()
                except RuntimeError:
                    loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(loop)
                return loop.run_until_complete(go(args))
        """, line=8, col=11, severity="warning"),
        Invalid("""
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return asyncio.get_event_loop().run_until_complete(go(args))
        """, line=3, col=11, severity="warning"),
        # ... but not inside an async hook, where that loop is already running.
        Invalid("""
            import asyncio
            async def reward_func(args, sample, **kwargs):
                return asyncio.get_event_loop().run_until_complete(judge(sample))
        """, line=3, col=11, severity="error"),
        # An instance bound as the hook: in its __call__, inside a comprehension.
        Invalid("""
            import asyncio as aio
            class Judge:
                def __call__(self, args, samples, **kwargs):
                    return [aio.run(judge(s)) > 0 for s in samples]
            dynamic_sampling_filter = Judge()
        """, line=4, col=16),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: Module-level function -> the hook that reaches it (its own hook for a hook).
        self.reached: dict[int, str] = {}
        for name, bindings in context.hooks.items():
            node = context.definitions.get(name)
            if isinstance(node, cst.FunctionDef):
                for fn in context.semantic.closure(node):
                    self.reached.setdefault(id(fn), f"{bindings[0].spec.arg} hook `{name}`")
        self.hook_class: list[str | None] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self.class_depth and not self.functions:
            binding = self.context.binding(node.name.value)
            self.hook_class.append(f"{binding.spec.arg} class `{node.name.value}`"
                                   if binding is not None else None)
        super().visit_ClassDef(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        super().leave_ClassDef(original_node)
        if not self.class_depth and not self.functions:
            self.hook_class.pop()

    def _where(self) -> str | None:
        if not self.functions or self.functions[0] is None:
            return None
        if self.class_depth:
            if self.hook_class and self.hook_class[-1] is not None:
                return self.hook_class[-1]
            # An instance bound as the hook (``reward_func = Judge()``): its ``__call__``.
            method = self.functions[0]
            binding = self.hook_of(method) if method.name.value == "__call__" else None
            return f"{binding.spec.arg} hook `{binding.function}`" if binding else None
        top = self.functions[0]
        hook = self.reached.get(id(top))
        if hook is None:
            return None
        return hook if top.name.value in self.context.hooks \
            else f"`{top.name.value}`, called by {hook}"

    def _thread_loop(self, expr: cst.BaseExpression) -> bool:
        """Whether the loop ``expr`` is the thread's own: ``asyncio.get_event_loop()``, or a
        name one of whose values is (``try: loop = get_event_loop() except RuntimeError:
        loop = new_event_loop(); set_event_loop(loop)``)."""
        if isinstance(expr, cst.Call):
            return bool(self.qualified(expr.func) & _THREAD_LOOP)
        fn = self.current
        if isinstance(expr, cst.Name) and fn is not None:
            values = self.context.semantic.facts(fn).values.get(expr.value, [])
            return any(v is not None and self._thread_loop(v) for v in values)
        return False

    def _loop_factory(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            return bool(self.qualified(expr.func) & _LOOP_FACTORIES)
        fn = self.current
        if isinstance(expr, cst.Name) and fn is not None:
            values = self.context.semantic.facts(fn).values.get(expr.value, [])
            return bool(values) and all(v is not None and self._loop_factory(v) for v in values)
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        run_loop = bool(self.qualified(func) & _RUN_LOOP)
        until = isinstance(func, cst.Attribute) and func.attr.value == "run_until_complete" \
            and self._loop_factory(func.value)
        if not (run_loop or until):
            return
        where = self._where()
        if where is None:
            return
        fn = self.current
        severity: Severity | None = None
        if fn is not None and fn.asynchronous is not None:
            problem = ("this async function already runs on an event loop, so the call raises "
                       "RuntimeError (cannot be called from a running event loop)")
        elif until and isinstance(func, cst.Attribute) and self._thread_loop(func.value):
            # `asyncio.get_event_loop()` (with a new loop set only when the thread has none) is
            # the thread's loop, the same on every call: vime calls a sync hook from one
            # thread, so clients made on it stay usable. It works; vime's run() is the way
            # that needs no loop of the hook's own.
            severity = "warning"
            problem = ("the loop is the thread's own (asyncio.get_event_loop()), reused by "
                       "every call from the same thread, so this works; it depends on vime "
                       "calling the hook from one thread, and get_event_loop() without a set "
                       "loop is deprecated (RuntimeError from Python 3.14)")
        else:
            problem = ("each call runs the coroutine on a new event loop that asyncio.run "
                       "closes afterwards: clients and connections made on it fail on the next "
                       "call with \"Event loop is closed\"")
        call = "asyncio.run(...)" if run_loop else "loop.run_until_complete(...)"
        self.report(node, self.INVARIANT.render(call=call, where=where, problem=problem),
                    severity=severity)
