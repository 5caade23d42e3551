"""VIM001: the rollout function's signature is the contract's
(``generate_rollout(args, rollout_id, data_source, evaluation=False)``), judged by
``vime.contract.check_signature`` as at load time.

See ``docs/contract.md`` §4 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule
from vime_lint.static.rules._signature_checks import (
    _check,
    _hook_targets,
)

__all__ = ["RolloutFunctionSignature"]


class RolloutFunctionSignature(Rule):
    """The rollout (or eval) function has the signature the manager calls.

    ## What it does
    Checks a function bound to ``--rollout-function-path`` or ``--eval-function-path``
    against ``vime.contract.HOOKS``: a module-level plain ``def`` taking
    ``(args, rollout_id, data_source, evaluation=False)`` in that order. The name may be bound
    to a ``def``, an alias, a ``functools.partial`` (under any import name), a decorated
    function, an instance's ``__call__`` or a method of a module-level instance
    (``Runner().run``).

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
        Valid("""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
        """),
        Valid("""
            def helper(args, rollout_id):
                pass
        """),
        Valid("""
            class C:
                def generate_rollout(self, x):
                    pass
        """),
        Valid("""
            def generate(prompt):
                pass
        """),
        # An instance whose __call__ fits; a partial binding a keyword-only extra; an alias.
        Valid("""
            class Runner:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    pass
            generate_rollout = Runner()
        """),
        Valid("""
            from functools import partial
            def _impl(args, rollout_id, data_source, evaluation=False, *, tokenizer):
                pass
            generate_rollout = partial(_impl, tokenizer=None)
        """),
        Valid("""
            def _impl(args, rollout_id, data_source, evaluation=False):
                pass
            generate_rollout = _impl
        """),
        # Decorated with functools.wraps around a plain wrapper; and by an unknown decorator.
        Valid("""
            import functools
            def timed(fn):
                @functools.wraps(fn)
                def wrapper(*args, **kwargs):
                    return fn(*args, **kwargs)
                return wrapper
            @timed
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
        """),
        # A method of a module-level instance that fits; a sync function that runs an
        # async helper itself; evaluation keyword-only (the manager passes it by name).
        Valid("""
            class Runner:
                def run(self, args, rollout_id, data_source, evaluation=False):
                    pass
            _runner = Runner()
            generate_rollout = _runner.run
        """),
        Valid("""
            import asyncio
            async def _gen(args, rollout_id, data_source):
                return []
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return asyncio.run(_gen(args, rollout_id, data_source))
        """),
        Valid("""
            def generate_rollout(args, rollout_id, data_source, *, evaluation=False, **kwargs):
                pass
        """),
        # A name known only from the launch configuration.
        Valid("""
            def odd_name(args, rollout_id, data_source, evaluation=False):
                pass
        """, options={"hooks": {"odd_name": "rollout_function_path"}}),
    ]
    INVALID = [
        Invalid("""
            def generate_rollout(args, rollout_id, data_buffer, evaluation=False):
                return data_buffer.get_samples(1)
        """, line=1, col=4, fixed="""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return data_source.get_samples(1)
        """),
        Invalid("""
            def generate_rollout(args, rollout_id, data_source, evaluation):
                pass
        """, line=1, col=4, fixed="""
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
        """),
        Invalid("""
            async def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
        """, line=1, col=10),
        Invalid("""
            def generate_rollout(args, rollout_id, *, evaluation=False):
                pass
        """, line=1, col=4),
        Invalid("""
            def generate_rollout(args, rollout_id, evaluation, data_source):
                pass
        """, line=1, col=4),
        Invalid("""
            def my_rollout(args, rollout_id, data):
                pass
        """, line=1, col=4, options={"hooks": {"my_rollout": "rollout_function_path"}}),
        # An instance whose __call__ is async: vime calls it synchronously.
        Invalid("""
            class Runner:
                async def __call__(self, args, rollout_id, data_source, evaluation=False):
                    pass
            generate_rollout = Runner()
        """, line=4, col=19),
        # An instance whose plain __call__ lacks data_source (named by the launch config).
        Invalid("""
            class Runner:
                def __call__(self, args, rollout_id, evaluation=False):
                    pass
            run_me = Runner()
        """, line=4, col=9, options={"hooks": {"run_me": "rollout_function_path"}}),
        # A module-level lambda without evaluation.
        Invalid("generate_rollout = lambda args, rollout_id, data_source: None\n",
                line=1, col=19),
        # functools.partial binding a slot the call site passes.
        Invalid("""
            import functools
            def _impl(tokenizer, args, rollout_id, data_source, evaluation=False):
                pass
            generate_rollout = functools.partial(_impl, None, None)
        """, line=4, col=19),
        # An alias of an async def.
        Invalid("""
            async def _impl(args, rollout_id, data_source, evaluation=False):
                pass
            generate_rollout = _impl
        """, line=3, col=19),
        # A method of an instance (Runner().run), lacking data_source; partial imported
        # under another name.
        Invalid("""
            class Runner:
                def run(self, args, rollout_id, evaluation=False):
                    pass
            generate_rollout = Runner().run
        """, line=4, col=19),
        Invalid("""
            from functools import partial as bind
            def _impl(args, rollout_id, evaluation=False):
                pass
            generate_rollout = bind(_impl)
        """, line=4, col=19),
        # A method-shaped def at module level: self takes the args slot.
        Invalid("""
            def generate_rollout(self, args, rollout_id, data_source, evaluation=False):
                pass
        """, line=1, col=4),
        # Decorated without functools.wraps: vime calls the async wrapper.
        Invalid("""
            def timed(fn):
                async def wrapper(*args, **kwargs):
                    return fn(*args, **kwargs)
                return wrapper
            @timed
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                pass
        """, line=6, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for binding, target in _hook_targets(self, rollout=True):
            _check(self, target, binding, binding.spec, "VIM001")
