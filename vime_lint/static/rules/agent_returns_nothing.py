"""VIM052: an agent function (``--agent-function-path``) returns its reward on every path.

See ``docs/contract.md`` §5 and §6a; the agent endpoint is ``vime/agent/``.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._cst import called, returns_nothing
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import FunctionTracker

__all__ = ["AgentReturnsNothing"]


_AGENT = "agent_function_path"


class AgentReturnsNothing(FunctionTracker):
    """An agent function returns its reward.

    ## What it does
    Reports an ``--agent-function-path`` function whose body has no ``return <value>`` (only
    bare ``return``, ``return None`` or none at all; a ``return helper(...)`` of the module's
    own function that itself returns no value counts as none).

    ## Why is this bad?
    The return value is the trajectory's reward; None means "unscored", and vime's reward
    function (``--rm-type`` / ``--custom-rm-path``) scores every trajectory instead. A body
    that never returns a value usually computed a reward and dropped it (failure kind:
    "reward fn returns None").

    ## Known problems
    ``return None`` on purpose (the run's reward function is meant to score) is reported too;
    suppress it with ``# noqa: VIM052`` on the ``def`` line.

    ## Example
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        answer = await solve(base_url, api_key, sample.prompt)
        reward = float(answer == sample.label)
    ```

    ## Use instead
    ```python
    async def run_agent(args, sample, base_url, api_key, **kwargs):
        answer = await solve(base_url, api_key, sample.prompt)
        return float(answer == sample.label)
    ```

    ## Fix safety
    No fix: only the author knows the reward.
    """

    INVARIANT = INVARIANTS["VIM052"]
    NEEDS_HOOKS = True
    VALID = [
        Valid("""
            async def run_agent(args, sample, base_url, api_key):
                if sample.label:
                    return 1.0
                return None
        """),
        Valid("""
            async def run_agent(args, sample, base_url, api_key):
                return {'score': 1.0}
        """),
        Valid("""
            async def run_agent(args, sample, base_url, api_key):
                raise NotImplementedError
        """),
        # Returns what a module helper returns, and the helper returns the score.
        Valid("""
            async def _episode(sample, base_url):
                reply = await chat(base_url, sample.prompt)
                return float(sample.label in reply)
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                return await _episode(sample, base_url)
        """),
        # An instance's __call__ returning a dict built from a comprehension.
        Valid("""
            class Agent:
                async def __call__(self, args, sample, base_url, api_key, **kwargs):
                    replies = [await chat(base_url, api_key, p) for p in sample.prompt]
                    return {'score': sum(sample.label in r for r in replies)}
            run_agent = Agent()
        """),
    ]
    INVALID = [
        Invalid("""
            async def run_agent(args, sample, base_url, api_key):
                reward = 1.0
        """, line=1, col=10),
        Invalid("""
            async def run_agent(args, sample, base_url, api_key):
                def helper():
                    return 1.0
                return None
        """, line=1, col=10),
        Invalid("""
            async def agent(args, sample, base_url, api_key):
                return
        """, line=1, col=10, options={"hooks": {"agent": _AGENT}}),
        # An instance's __call__ that sets the reward but returns nothing.
        Invalid("""
            class Agent:
                async def __call__(self, args, sample, base_url, api_key, **kwargs):
                    reply = await chat(base_url, api_key, sample.prompt)
                    sample.reward = float(sample.label in reply)
            run_agent = Agent()
        """, line=2, col=14),
        # Returns a module helper's result, and the helper returns nothing.
        Invalid("""
            async def _episode(sample, base_url):
                reply = await chat(base_url, sample.prompt)
                sample.metadata['reply'] = reply
            async def run_agent(args, sample, base_url, api_key, **kwargs):
                return await _episode(sample, base_url)
        """, line=4, col=10),
        # Behind an aliased functools.partial, a loop and no return.
        Invalid("""
            import functools as ft
            async def _agent(max_turns, args, sample, base_url, api_key, **kwargs):
                for _ in range(max_turns):
                    await chat(base_url, sample.prompt)
            run_agent = ft.partial(_agent, 3)
        """, line=2, col=10),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is None or binding.spec.dest != _AGENT:
            return
        values = [r for r in self.context.semantic.facts(node).returns
                  if not returns_nothing(r.value) and not self._valueless_call(node, r.value)]
        if not values and not _only_raises(node):
            self.report(node.name, self.INVARIANT.render(name=node.name.value))

    def _valueless_call(self, fn: cst.FunctionDef, value: cst.BaseExpression | None) -> bool:
        """``return [await] helper(...)`` of the module's own function (or ``self`` method)
        that itself never returns a value (and is not a stub that raises)."""
        call = called(value)
        if call is None:
            return False
        target = self.context.semantic.callee(call, fn, self.owner)
        if target is None or target is fn:
            return False
        facts = self.context.semantic.facts(target)
        return not facts.yields and not _only_raises(target) \
            and all(returns_nothing(r.value) for r in facts.returns)



def _only_raises(node: cst.FunctionDef) -> bool:
    """A body that ends in ``raise`` (a stub): no reward is expected from it."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    last = body[-1] if body else None
    return (isinstance(last, cst.SimpleStatementLine) and bool(last.body)
            and isinstance(last.body[-1], cst.Raise))
