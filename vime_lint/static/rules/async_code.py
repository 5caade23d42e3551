"""Async code in hooks: blocking calls (VIM005), un-awaited coroutines (VIM021) and event
loops made per call (VIM029).

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from vime.contract import INVARIANTS
from vime.contract.hooks import ASYNC_API
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker

__all__ = ["AsyncioRunInHook", "BlockingCallInAsync", "UnawaitedCoroutine"]

#: Blocking callables by qualified name (prefix match when the entry ends with ".").
BLOCKING = (
    "time.sleep", "requests.", "urllib.request.urlopen", "urllib3.request",
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "os.system", "httpx.get", "httpx.post", "httpx.put", "httpx.patch", "httpx.delete",
    "httpx.head", "httpx.request", "socket.create_connection",
)

#: Async functions by qualified name: vime's public async API and ``asyncio.sleep``.
KNOWN_ASYNC = ASYNC_API | {"asyncio.sleep"}


def _blocking(names: set[str]) -> str | None:
    for n in names:
        for b in BLOCKING:
            if n == b or (b.endswith(".") and n.startswith(b) and n.count(".") == 1):
                return n
    return None


class BlockingCallInAsync(FunctionTracker):
    """No blocking calls inside ``async def``.

    ## What it does
    Reports calls of ``time.sleep``, ``requests.*``, ``urllib.request.urlopen``,
    ``subprocess.run``/``call``/``check_output``, ``os.system`` and sync ``httpx`` functions
    directly inside an ``async def`` (resolving ``from time import sleep`` and aliases).
    Passing the function to ``asyncio.to_thread`` or an executor is fine.

    ## Why is this bad?
    Generate and reward hooks share one event loop per process; a blocking call stalls every
    concurrent request and serialises the whole rollout (failure kind: "blocking work on the
    event loop").

    ## Example
    ```python
    async def reward_func(args, sample, **kwargs):
        r = requests.post(URL, json={"text": sample.response})
        return r.json()["score"]
    ```

    ## Use instead
    ```python
    async def reward_func(args, sample, **kwargs):
        r = await asyncio.to_thread(requests.post, URL, json={"text": sample.response})
        return r.json()["score"]
    ```

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM005"]
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    VALID = [
        Valid("import asyncio, time\nasync def f():\n    await asyncio.sleep(1)\n"),
        Valid("import time\ndef f():\n    time.sleep(1)\n"),
        Valid("import asyncio, requests\nasync def f(u):\n"
              "    return await asyncio.to_thread(requests.get, u)\n"),
        Valid("import time\nasync def f():\n    def g():\n        time.sleep(1)\n"
              "    return g\n"),
    ]
    INVALID = [
        Invalid("import time\nasync def f():\n    time.sleep(1)\n", line=3, col=4),
        Invalid("from time import sleep\nasync def f():\n    sleep(1)\n", line=3, col=4),
        Invalid("import requests as rq\nasync def f(u):\n    return rq.get(u)\n", line=3,
                col=11),
        Invalid("import subprocess\nasync def f():\n    subprocess.run(['ls'])\n", line=3,
                col=4),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.current
        if fn is None or fn.asynchronous is None:
            return
        hit = _blocking(self.qualified(node.func))
        if hit is not None:
            self.report(node, self.INVARIANT.render(call=hit, name=fn.name.value))


class UnawaitedCoroutine(FunctionTracker):
    """A call to a known async function is awaited (or scheduled).

    ## What it does
    Reports calls to an ``async def`` of the same module, an async method of the same class
    (``self.fetch()``), or a known async function of vime (``generate``,
    ``generate_and_rm``, ``async_rm``, ...) whose coroutine is thrown away or used as a value:
    a bare statement, ``f().x``, ``f()[0]``, ``f() + 1``, ``if f():``. Passing the coroutine to
    ``asyncio.gather``/``create_task``/``run`` or assigning it is fine.

    ## Why is this bad?
    An un-awaited call returns a coroutine: the work never runs (Python only warns
    "coroutine was never awaited" at garbage collection), and code that uses the result gets
    a coroutine object (failure kinds: "coroutine returned instead of value", "async reward
    not awaited").

    ## Example
    ```python
    async def generate(args, sample, sampling_params):
        fetch_tools(sample)
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        await fetch_tools(sample)
        return sample
    ```

    ## Fix safety
    No fix: ``await`` is only valid inside ``async def``.
    """

    INVARIANT = INVARIANTS["VIM021"]
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    VALID = [
        Valid("async def f():\n    pass\nasync def g():\n    await f()\n"),
        Valid("import asyncio\nasync def f(x):\n    pass\nasync def g(xs):\n"
              "    await asyncio.gather(*[f(x) for x in xs])\n"),
        Valid("async def f():\n    pass\ndef g():\n    f = len\n    f([])\n"),
        Valid("async def f():\n    pass\nasync def g():\n    task = f()\n    await task\n"),
    ]
    INVALID = [
        Invalid("async def f():\n    pass\nasync def g():\n    f()\n", line=4, col=4),
        Invalid("from vime.rollout.rm_hub import async_rm\nasync def g(args, s):\n"
                "    s.reward = async_rm(args, s) + 1\n", line=3, col=15),
        Invalid("class A:\n    async def fetch(self):\n        pass\n"
                "    async def run(self):\n        if self.fetch():\n            pass\n",
                line=5, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.class_async: list[set[str]] = []
        self.known = KNOWN_ASYNC | context.async_defs

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        names: set[str] = set()
        if isinstance(node.body, cst.IndentedBlock):
            for stmt in node.body.body:
                if isinstance(stmt, cst.FunctionDef) and stmt.asynchronous is not None:
                    names.add(stmt.name.value)
        self.class_async.append(names)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_async.pop()
        super().leave_ClassDef(original_node)

    def _async_name(self, expr: cst.BaseExpression) -> str | None:
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.value.value == "self" and self.class_async \
                and func.attr.value in self.class_async[-1]:
            return f"self.{func.attr.value}"
        if isinstance(func, cst.Name) or isinstance(func, cst.Attribute):
            if isinstance(func, cst.Name) and func.value not in self.context.async_defs \
                    and not any(k.endswith("." + func.value) for k in KNOWN_ASYNC):
                return None
            for q in self.qualified(func):
                if q in self.known:
                    return q
        return None

    def _check(self, expr: cst.BaseExpression | None) -> None:
        if expr is None:
            return
        name = self._async_name(expr)
        if name is not None:
            self.report(expr, self.INVARIANT.render(call=name))

    def visit_Expr(self, node: cst.Expr) -> None:
        self._check(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self._check(node.value)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node.left)
        self._check(node.right)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._check(node.left)
        for c in node.comparisons:
            self._check(c.comparator)

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)



#: Calls that make (and, for ``asyncio.run``, close) an event loop per call.
_RUN_LOOP = frozenset({"asyncio.run", "asyncio.runners.run"})
_LOOP_FACTORIES = frozenset({"asyncio.new_event_loop", "asyncio.get_event_loop",
                             "asyncio.events.new_event_loop", "asyncio.events.get_event_loop"})


class AsyncioRunInHook(FunctionTracker):
    """Hooks and the helpers they call never call ``asyncio.run(...)``.

    ## What it does
    In every hook (functions bound by configuration, annotation or conventional name, and the
    methods of a hook class) and the module-level helpers it calls, transitively, reports
    ``asyncio.run(...)`` (also ``from asyncio import run``, ``import asyncio as aio``) and
    ``loop.run_until_complete(...)`` on a loop from ``asyncio.new_event_loop()`` /
    ``asyncio.get_event_loop()``. Code under ``if __name__ == "__main__":`` and functions no
    hook reaches are not hook code and are left alone.

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
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)
    NEEDS_HOOKS = True
    VALID = [
        Valid("from vime.utils.async_utils import run\n"
              "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    return run(go(args, data_source))\n"),
        Valid("import asyncio\n"
              "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
              "    pass\n"
              "def main():\n    asyncio.run(smoke_test())\n"
              "if __name__ == '__main__':\n    asyncio.run(smoke_test())\n"),
        Valid("import asyncio\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return await asyncio.wait_for(judge(sample), 10)\n"),
    ]
    INVALID = [
        Invalid("import asyncio\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    groups = data_source.get_samples(args.rollout_batch_size)\n"
                "    asyncio.run(generate_all(args, groups))\n", line=4, col=4),
        Invalid("from asyncio import run as arun\n"
                "def _score_all(args, samples):\n"
                "    return arun(score(args, samples))\n"
                "def dynamic_sampling_filter(args, samples, **kwargs):\n"
                "    return _score_all(args, samples)\n", line=3, col=11),
        Invalid("import asyncio as aio\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return aio.run(judge(sample))\n", line=3, col=11),
        Invalid("import asyncio\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    loop = asyncio.new_event_loop()\n"
                "    return loop.run_until_complete(go(args))\n", line=4, col=11),
        Invalid("import asyncio\nclass Source:\n    def __init__(self, args):\n"
                "        self.rows = asyncio.run(load(args))\n", line=4, col=20,
                options={"hooks": {"Source": "data_source_path"}}),
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
            return self.hook_class[-1] if self.hook_class else None
        top = self.functions[0]
        hook = self.reached.get(id(top))
        if hook is None:
            return None
        return hook if top.name.value in self.context.hooks \
            else f"`{top.name.value}`, called by {hook}"

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
        if fn is not None and fn.asynchronous is not None:
            problem = ("this async function already runs on an event loop, so the call raises "
                       "RuntimeError (cannot be called from a running event loop)")
        else:
            problem = ("each call runs the coroutine on a new event loop that asyncio.run "
                       "closes afterwards: clients and connections made on it fail on the next "
                       "call with \"Event loop is closed\"")
        call = "asyncio.run(...)" if run_loop else "loop.run_until_complete(...)"
        self.report(node, self.INVARIANT.render(call=call, where=where, problem=problem))
