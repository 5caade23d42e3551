"""VIM050: an agent function (``--agent-function-path``) is an ``async def``.

See ``docs/contract.md`` §5 and §6a; the agent endpoint is ``vime/agent/``.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["AgentFunctionSync"]


_AGENT = "agent_function_path"


class AgentFunctionSync(FunctionTracker):
    """An agent function is an ``async def``.

    ## What it does
    Reports a plain ``def`` bound to ``--agent-function-path`` (by configuration, a
    ``AgentFunction`` annotation, or the conventional name ``run_agent``).

    ## Why is this bad?
    vime awaits ``run(args, sample, base_url, api_key)`` on the rollout's event loop; a plain
    ``def`` hands back its return value where a coroutine is awaited, and the first sample
    fails after the engines have started (failure kind: "signature vs call mode").

    ## Known problems
    VIM004 reports the same definition against the hook's signature; VIM050 adds the agent's
    fix (an async client).

    ## Example
    ```python
    def run_agent(args, sample, base_url, api_key, **kwargs):
        ...
    ```

    ## Use instead
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        client = AsyncOpenAI(base_url=base_url, api_key=api_key)
        ...
    ```

    ## Fix safety
    No fix: the body's calls have to become awaited calls too.
    """

    INVARIANT = INVARIANTS["VIM050"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                return 1.0
        """),
        Valid("""
            def run_agent(x):
                return x
        """),
        Valid("""
            def helper(args, sample, base_url, api_key):
                return 1.0
        """),
        # An instance's async __call__; its sync helper method is not the hook.
        Valid("""
            class Agent:
                async def __call__(self, args, sample, base_url, api_key, **kwargs):
                    return self._score(sample)
                def _score(self, sample):
                    return 1.0
            run_agent = Agent()
        """),
        # An async function behind an aliased functools.partial, with a sync module helper.
        Valid("""
            from functools import partial as bind
            async def _run(max_turns, args, sample, base_url, api_key, **kwargs):
                return _score(sample)
            def _score(sample):
                return 1.0
            run_agent = bind(_run, 4)
        """),
    ]
    INVALID = [
        Invalid("""
            def run_agent(args, sample, base_url, api_key, **kwargs):
                return 1.0
        """, line=1, col=4),
        Invalid("""
            def run(args, sample, base_url, api_key):
                return None
        """, line=1, col=4, options={"hooks": {"run": _AGENT}}),
        # An instance bound as the agent function: its __call__ is a plain def.
        Invalid("""
            class Agent:
                def __call__(self, args, sample, base_url, api_key, **kwargs):
                    return 1.0
            run_agent = Agent()
        """, line=2, col=8),
        # A plain def behind functools.partial imported under an alias.
        Invalid("""
            from functools import partial as bind
            def _run(max_turns, args, sample, base_url, api_key, **kwargs):
                return 1.0
            run_agent = bind(_run, 4)
        """, line=2, col=4),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is not None and binding.spec.dest == _AGENT and node.asynchronous is None:
            self.report(node.name, self.INVARIANT.render(name=node.name.value),
                        fix_hint=self.INVARIANT.fix.format(name=node.name.value))
