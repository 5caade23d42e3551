"""Async code in hooks: blocking calls (VIM005), un-awaited coroutines (VIM021) and event
loops made per call (VIM029).

See ``docs/contract.md`` §4, §5 and §6a.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from vime.contract import INVARIANTS
from vime.contract.errors import Severity
from vime.contract.hooks import ASYNC_API
from vime_lint.static._cst import code_of
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FileContext, FunctionTracker
from vime_lint.static.analysis import Semantic

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


#: Iterations of a pure-Python loop that keep the event loop busy for tens of milliseconds
#: or more (a ``for`` over ``range(n)``): the loop is CPU-bound work for a thread.
_LONG_LOOP = 100_000


def _int_value(semantic: Semantic, expr: cst.BaseExpression, fn: cst.FunctionDef
               ) -> int | None:
    """The value of an integer literal, of a parameter of ``fn`` with one as its default, or
    of a module-level constant bound once to one; else None."""
    if isinstance(expr, cst.Integer):
        value = expr.evaluated_value
        return value if isinstance(value, int) else None
    if not isinstance(expr, cst.Name):
        return None
    params = (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
    for p in params:
        if p.name.value == expr.value:
            return _int_value(semantic, p.default, fn) \
                if isinstance(p.default, cst.Integer) else None
    if expr.value in semantic.facts(fn).values:
        return None  # a local name
    bound = [stmt for stmt in semantic.module.body
             if isinstance(stmt, cst.SimpleStatementLine) for a in stmt.body
             if isinstance(a, (cst.Assign, cst.AnnAssign)) and any(
                 isinstance(t, cst.Name) and t.value == expr.value
                 for t in ([x.target for x in a.targets] if isinstance(a, cst.Assign)
                           else [a.target]))]
    if len(bound) == 1:
        a = bound[0].body[0]
        bound_value = a.value if isinstance(a, (cst.Assign, cst.AnnAssign)) else None
        if isinstance(bound_value, cst.Integer):
            n = bound_value.evaluated_value
            return n if isinstance(n, int) else None
    return None


def _long_loop(semantic: Semantic, loop: cst.For, fn: cst.FunctionDef) -> int | None:
    """The iteration count of ``for ... in range(...)`` when it is a known number of at least
    ``_LONG_LOOP``; else None."""
    it = loop.iter
    if not isinstance(it, cst.Call) or "builtins.range" not in semantic.qualified(it.func):
        return None
    args = [a for a in it.args if a.keyword is None and not a.star]
    if not 1 <= len(args) <= 2 or len(args) != len(it.args):
        return None
    stop = _int_value(semantic, args[-1].value, fn)
    start = _int_value(semantic, args[0].value, fn) if len(args) == 2 else 0
    if stop is None or start is None or stop - start < _LONG_LOOP:
        return None
    return stop - start


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
    directly inside an ``async def`` (resolving ``from time import sleep`` and aliases),
    a ``for`` loop over ``range(n)`` of at least 100000 iterations there (``n`` a literal, a
    parameter's default or a module constant), and a call of one of the module's own sync
    functions that does either (itself or through the sync helpers it calls). Passing the
    function to ``asyncio.to_thread`` or an executor is fine.

    ## Why is this bad?
    Generate and reward hooks share one event loop per process; a blocking call, or seconds
    of CPU-bound checking in plain Python, stalls every concurrent request and serialises the
    whole rollout (failure kind: "blocking work on the event loop"; redai-studio/Relax#181).

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

    ## Known problems
    A loop bound read from a parameter's default counts even where the call passes a smaller
    value; a loop bound computed at run time is not seen.

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM005"]
    VALID = [
        Valid("import asyncio, time\nasync def f():\n    await asyncio.sleep(1)\n"),
        Valid("import time\ndef f():\n    time.sleep(1)\n"),
        Valid("import asyncio, requests\nasync def f(u):\n"
              "    return await asyncio.to_thread(requests.get, u)\n"),
        Valid("import time\nasync def f():\n    def g():\n        time.sleep(1)\n"
              "    return g\n"),
        # A short loop, a loop of unknown length, CPU work handed to a thread, an async
        # helper (awaited: its own body is checked where it is defined).
        Valid("def norm(text):\n    for _ in range(10):\n        text = text.strip()\n"
              "    return text\nasync def reward_func(args, sample, **kwargs):\n"
              "    return float(norm(sample.response) == sample.label)\n"),
        Valid("def check(answer, rounds):\n    for i in range(rounds):\n        pass\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return float(check(sample.response, len(sample.response)))\n"),
        Valid("import asyncio\ndef check(answer, rounds=1_000_000):\n"
              "    for i in range(rounds):\n        pass\n    return True\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return float(await asyncio.to_thread(check, sample.response))\n"),
        Valid("import asyncio\nasync def fetch(u):\n    await asyncio.sleep(0)\n"
              "async def f(u):\n    return await fetch(u)\n"),
    ]
    INVALID = [
        Invalid("import time\nasync def f():\n    time.sleep(1)\n", line=3, col=4),
        Invalid("from time import sleep\nasync def f():\n    sleep(1)\n", line=3, col=4),
        Invalid("import requests as rq\nasync def f(u):\n    return rq.get(u)\n", line=3,
                col=11),
        Invalid("import subprocess\nasync def f():\n    subprocess.run(['ls'])\n", line=3,
                col=4),
        # CPU-bound work in a sync helper (a default parameter, a module constant, one
        # helper further), or a long loop in the async def itself.
        Invalid("def equivalent(a, b, rounds=200_000):\n    acc = 0\n"
                "    for i in range(rounds):\n        acc = (acc * 31 + i) % 7\n"
                "    return a == b\nasync def reward_func(args, sample, **kwargs):\n"
                "    return float(equivalent(sample.response, sample.label))\n",
                line=7, col=17),
        Invalid("ROUNDS = 500_000\ndef _mix(a):\n    for i in range(1, ROUNDS):\n"
                "        a = hash((a, i))\n    return a\ndef verify(a):\n"
                "    return _mix(a) > 0\nasync def reward_func(args, sample, **kwargs):\n"
                "    ok = verify(sample.response)\n    return float(ok)\n", line=9, col=9),
        Invalid("async def reward_func(args, sample, **kwargs):\n    acc = 0\n"
                "    for i in range(1_000_000):\n        acc += i\n    return 0.0\n",
                line=3, col=4),
        # A blocking call in a sync helper.
        Invalid("import requests\ndef score(text):\n"
                "    return requests.post(URL, json={'t': text}).json()['score']\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return score(sample.response)\n", line=5, col=11),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        #: id(sync function) -> what blocks in it (or in the sync helpers it calls), or None.
        self._blocks: dict[int, str | None] = {}

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.current
        if fn is None or fn.asynchronous is None:
            return
        name = fn.name.value
        hit = _blocking(self.qualified(node.func))
        if hit is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"blocking call `{hit}` inside async def `{name}`"))
            return
        target = self.context.semantic.callee(node, fn, self.owner)
        if target is None or target.asynchronous is not None:
            return
        what = self._helper_blocks(target)
        if what is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"`{code_of(node.func)}(...)` inside async def `{name}` blocks the "
                f"event loop: it {what}"))

    def visit_For(self, node: cst.For) -> None:
        fn = self.current
        if fn is None or fn.asynchronous is None:
            return
        n = _long_loop(self.context.semantic, node, fn)
        if n is not None:
            self.report(node, self.INVARIANT.render(
                problem=f"a pure-Python loop of {n} iterations inside async def "
                f"`{fn.name.value}` runs on the event loop"))

    def _helper_blocks(self, target: cst.FunctionDef) -> str | None:
        """What blocks the loop in the sync function ``target`` or the sync helpers of the
        module it calls: a blocking call, or a loop of at least ``_LONG_LOOP`` iterations."""
        if id(target) in self._blocks:
            return self._blocks[id(target)]
        self._blocks[id(target)] = None
        semantic = self.context.semantic
        found: str | None = None
        for helper in semantic.closure(target, self.owner):
            if helper.asynchronous is not None:
                continue
            where = f"`{helper.name.value}`"
            for site in semantic.facts(helper).calls:
                hit = _blocking(self.qualified(site.node.func))
                if hit is not None:
                    found = f"makes the blocking call `{hit}` (in {where})"
                    break
            if found is None:
                for loop in m.findall(helper.body, m.For()):
                    assert isinstance(loop, cst.For)
                    n = _long_loop(semantic, loop, helper)
                    if n is not None:
                        found = f"runs a pure-Python loop of {n} iterations (in {where})"
                        break
            if found is not None:
                break
        self._blocks[id(target)] = found
        return found


class UnawaitedCoroutine(FunctionTracker):
    """A call of an async function is awaited or scheduled.

    ## What it does
    Reports calls of an ``async def`` of the same module (also a nested one, an alias, an
    instance with an async ``__call__``), an async method of the same class (``self.fetch()``),
    or a known async function of vime (``generate``, ``generate_and_rm``, ``async_rm``, ...)
    whose coroutine never runs: a bare statement, a comprehension statement, a value
    (``f().x``, ``f()[0]``, ``f() + 1``, ``if f():``, ``print(f())``), or a coroutine bound to
    a name or collected into a list that is never awaited or gathered. Awaiting it, passing it
    (or a list of them) to ``asyncio.gather``/``create_task``/``asyncio.run``/vime's ``run``,
    returning it, or handing it to a function the module does not show is fine; so are
    ``await asyncio.to_thread(f)`` and ``loop.run_in_executor(None, f)``, which get a function,
    not a coroutine.

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
    VALID = [
        Valid("async def f():\n    pass\nasync def g():\n    await f()\n"),
        Valid("import asyncio\nasync def f(x):\n    pass\nasync def g(xs):\n"
              "    await asyncio.gather(*[f(x) for x in xs])\n"),
        Valid("async def f():\n    pass\ndef g():\n    f = len\n    f([])\n"),
        Valid("async def f():\n    pass\nasync def g():\n    task = f()\n    await task\n"),
        # Collected, then gathered.
        Valid("import asyncio\nasync def f(x):\n    pass\nasync def g(xs):\n    tasks = []\n"
              "    for x in xs:\n        tasks.append(f(x))\n"
              "    return await asyncio.gather(*tasks)\n"),
        # A task group, a loop's create_task, to_thread and run_in_executor.
        Valid("import asyncio\nasync def f(x):\n    pass\ndef slow(x):\n    pass\n"
              "async def g(loop, xs):\n    t = loop.create_task(f(1))\n"
              "    await asyncio.to_thread(slow, 2)\n"
              "    await loop.run_in_executor(None, slow, 3)\n    await t\n"),
        # vime's run() from sync code; a dict comprehension of coroutines handed to gather.
        Valid("import asyncio\nfrom vime.utils.async_utils import run\nasync def f(x):\n    pass\n"
              "def g(xs):\n    coros = {x: f(x) for x in xs}\n"
              "    return run(asyncio.gather(*coros.values()))\n"),
        # A sync method named like a module coroutine is not one.
        Valid("async def fetch():\n    pass\nclass A:\n    def fetch(self):\n        pass\n"
              "    def run(self):\n        self.fetch()\n"),
    ]
    INVALID = [
        Invalid("async def f():\n    pass\nasync def g():\n    f()\n", line=4, col=4),
        Invalid("from vime.rollout.rm_hub import async_rm\nasync def g(args, s):\n"
                "    s.reward = async_rm(args, s) + 1\n", line=3, col=15),
        Invalid("class A:\n    async def fetch(self):\n        pass\n"
                "    async def run(self):\n        if self.fetch():\n            pass\n",
                line=5, col=11),
        # Inside a list comprehension used as a statement.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n"
                "    [score(s) for s in samples]\n", line=4, col=5),
        # Inside a dict comprehension bound to a name that is never gathered.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n"
                "    pending = {s.index: score(s) for s in samples}\n    return len(pending)\n",
                line=4, col=24),
        # Collected into a list that is never gathered.
        Invalid("async def score(s):\n    pass\nasync def g(samples):\n    tasks = []\n"
                "    for s in samples:\n        tasks.append(score(s))\n    return None\n",
                line=6, col=21),
        # A nested coroutine, and an instance whose __call__ is async.
        Invalid("async def g(samples):\n    async def one(s):\n        pass\n"
                "    one(samples[0])\n", line=4, col=4),
        Invalid("class Judge:\n    async def __call__(self, s):\n        return 1.0\n"
                "judge = Judge()\nasync def g(s):\n    s.reward = judge(s)\n", line=6, col=15),
        # Passed to a builtin that does not await it.
        Invalid("async def f():\n    pass\nasync def g():\n    print(f())\n", line=4, col=10),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.known = frozenset(KNOWN_ASYNC)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        for call, callee, problem in self.context.semantic.unawaited(node, self.owner,
                                                                     self.known):
            self.report(call, self.INVARIANT.render(call=callee) + f": {problem}")


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
        # An instance's async __call__ awaiting gather (aliased import), no new loop.
        Valid("import asyncio as aio\n"
              "class Judge:\n"
              "    async def __call__(self, args, sample, **kwargs):\n"
              "        scores = await aio.gather(*[judge(sample, k) for k in range(3)])\n"
              "        return sum(scores) / len(scores)\n"
              "reward_func = Judge()\n"),
        # An aliased asyncio.run only under __main__; the hook awaits the helper.
        Valid("from asyncio import run as arun\n"
              "async def _score_all(args, samples):\n"
              "    return [await score(args, s) for s in samples]\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return (await _score_all(args, [sample]))[0]\n"
              "if __name__ == '__main__':\n"
              "    print(arun(_score_all(None, [])))\n"),
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
        # The thread's own loop, reused by every call from the thread: it works (a warning).
        Invalid("import asyncio\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    try:\n        loop = asyncio.get_event_loop()\n"
                "    except RuntimeError:\n        loop = asyncio.new_event_loop()\n"
                "        asyncio.set_event_loop(loop)\n"
                "    return loop.run_until_complete(go(args))\n", line=8, col=11,
                severity="warning"),
        Invalid("import asyncio\n"
                "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    return asyncio.get_event_loop().run_until_complete(go(args))\n",
                line=3, col=11, severity="warning"),
        # ... but not inside an async hook, where that loop is already running.
        Invalid("import asyncio\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return asyncio.get_event_loop().run_until_complete(judge(sample))\n",
                line=3, col=11, severity="error"),
        # An instance bound as the hook: in its __call__, inside a comprehension.
        Invalid("import asyncio as aio\n"
                "class Judge:\n"
                "    def __call__(self, args, samples, **kwargs):\n"
                "        return [aio.run(judge(s)) > 0 for s in samples]\n"
                "dynamic_sampling_filter = Judge()\n", line=4, col=16),
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
