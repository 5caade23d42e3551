"""VIM004: every other hook's signature is its ``HookSpec``'s, judged by
``vime.contract.check_signature`` as at load time.

See ``docs/contract.md`` §5 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import GROUP_RM_SPEC, INVARIANTS
from vime_lint.static._model import Invalid, Valid
from vime_lint.static._rule import Rule
from vime_lint.static.rules._signature_checks import (
    _check,
    _hook_targets,
)

__all__ = ["HookSignature"]


class HookSignature(Rule):
    """Every other hook matches its ``HookSpec``: ``def``/``async def``, arity, keywords.

    ## What it does
    Checks functions bound to a hook other than the rollout function (custom generate,
    reward function single and ``--group-rm`` batch, dynamic sampling filter, buffer filter,
    data source class, sample hook, ...) with ``vime.contract.check_signature``, through
    every binding form VIM001 follows (alias, ``functools.partial``, decorator, an instance's
    ``__call__``, a method of a module-level instance).

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
        Valid("""
            async def generate(args, sample, sampling_params):
                return sample
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return 1.0
        """),
        Valid("""
            async def reward_func(args, samples, **kwargs):
                return [1.0]
        """, options={"hooks": {"reward_func": "custom_rm_path"},
                      "launch_flags": ["--group-rm"]}),
        # A launch config sets --group-rm for another module's reward (`x.reward_func`, not
        # this file's): this file's single reward, found by its conventional name, keeps the
        # single-sample signature.
        Valid("""
            async def reward_func(args, sample):
                return 1.0
        """, options={"launch_flags": ["--group-rm"]}),
        Valid("""
            def sample_hook(args, sample, rollout_id=None):
                return None
        """),
        Valid("""
            async def sample_hook(args, sample):
                return None
        """),
        Valid("""
            class Source:
                def __init__(self, args):
                    self.args = args
        """, options={"hooks": {"Source": "data_source_path"}}),
        Valid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return 1.0
            reward_func = Judge()
        """),
        Valid("""
            import functools
            async def _rm(args, sample, scale=1.0, **kwargs):
                return scale
            reward_func = functools.partial(_rm, scale=2.0)
        """),
        Valid("""
            async def _gen(args, sample, sampling_params):
                return sample
            custom_generate = _gen
        """),
        # A method of a module-level instance; an instance whose async __call__ calls a
        # sync self method (only the hook itself is awaited).
        Valid("""
            class Judge:
                async def score(self, args, sample, **kwargs):
                    return 1.0
            _judge = Judge()
            reward_func = _judge.score
        """),
        Valid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    return self._go(sample)
                def _go(self, sample):
                    return sample
            generate = Gen()
        """),
        # Positional parameters bind by position: a group reward's `samples` without a known
        # --group-rm, a generate's `params`, an instance's `batch`.
        Valid("""
            async def reward_func(args, samples, **kwargs):
                return [1.0 for _ in samples]
        """),
        Valid("""
            async def generate(args, sample, params):
                return sample
        """),
        Valid("""
            class Judge:
                async def __call__(self, args, batch, **kwargs):
                    return [1.0] * len(batch)
            reward_func = Judge()
        """),
        Valid("""
            def dynamic_sampling_filter(args, group):
                return True
        """),
        # A group reward (--group-rm: `fn(args, samples, **kwargs)`) under any positional
        # name: a method, a launch-named function, a partial.
        Valid("""
            class Judge:
                async def __call__(self, args, samples, **kwargs):
                    return [1.0] * len(samples)
            reward_func = Judge()
        """, options={"hooks": {"reward_func": "custom_rm_path"},
                      "launch_flags": ["--group-rm"]}),
        Valid("async def score_group(args, batch, **kwargs):\n    return [0.0 for _ in batch]\n",
              options={"launch_flags": ["--group-rm"],
                       "hooks": {"score_group": "custom_rm_path"}}),
        Valid("""
            import functools
            async def _rm(args, samples, scale=1.0, **kwargs):
                return [scale] * len(samples)
            reward_func = functools.partial(_rm, scale=2.0)
        """, options={"hooks": {"reward_func": "custom_rm_path"},
                      "launch_flags": ["--group-rm"]}),
    ]
    INVALID = [
        Invalid("""
            def generate(args, sample, sampling_params):
                return sample
        """, line=1, col=4),
        Invalid("""
            async def reward_func(args, sample):
                return 1.0
        """, line=1, col=10, options={"hooks": {"reward_func": "custom_rm_path"},
                                      "launch_flags": ["--group-rm"]},
           severity="warning", fixed="""
            async def reward_func(args, samples):
                return 1.0
        """),
        Invalid("""
            async def dynamic_sampling_filter(args, samples):
                return True
        """, line=1, col=10),
        Invalid("""
            def buffer_filter(args, buffer, num_samples):
                return []
        """, line=1, col=4),
        Invalid("""
            class Source:
                def __init__(self):
                    pass
        """, line=2, col=8, options={"hooks": {"Source": "data_source_path"}}),
        # A reward instance whose __call__ is a plain def (vime awaits it).
        Invalid("""
            class Judge:
                def __call__(self, args, sample, **kwargs):
                    return 1.0
            reward_func = Judge()
        """, line=4, col=14),
        # A reward lambda (vime awaits it), named by the launch configuration.
        Invalid("score = lambda args, sample, **kw: 1.0\n", line=1, col=8,
                options={"hooks": {"score": "custom_rm_path"}}),
        # A plain method of an instance; a partial (imported under another name) of a plain
        # def; a filter instance whose __call__ is async; an alias lacking sampling_params.
        Invalid("""
            class Judge:
                def score(self, args, sample, **kwargs):
                    return 1.0
            reward_func = Judge().score
        """, line=4, col=14),
        Invalid("""
            from functools import partial as bind
            def _rm(args, sample, scale=1.0, **kwargs):
                return scale
            reward_func = bind(_rm, scale=2.0)
        """, line=4, col=14),
        Invalid("""
            class Filt:
                async def __call__(self, args, samples):
                    return True
            dynamic_sampling_filter = Filt()
        """, line=4, col=26),
        Invalid("""
            async def _gen(args, sample):
                return sample
            custom_generate = _gen
        """, line=3, col=18),
        # A partial of a generate function that binds `sample`.
        Invalid("""
            import functools
            async def _gen(args, sample, sampling_params):
                return sample
            generate = functools.partial(_gen, None, None)
        """, line=4, col=11),
        # Found by its conventional name alone, with a parameter the hook does not pass
        # (slime's own `log_rollout_data(rollout_id, args, rollout_data)`, which no launch
        # passes): a warning; named by a launch, the same function is an error.
        Invalid("""
            def log_rollout_data(rollout_id, args, rollout_data):
                return None
        """, line=1, col=4, severity="warning"),
        Invalid("""
            def log_eval_rollout_data(rollout_id, args, eval_data):
                return False
        """, line=1, col=4, severity="warning"),
        Invalid("""
            def log_rollout_data(rollout_id, args, rollout_data):
                return None
        """, line=1, col=4, options={"hooks": {"log_rollout_data":
                                              "custom_rollout_log_function_path"}}),
        # ... and the documented agent signature, whose `evaluation` is a keyword the hook is
        # passed (HookSpec.optional_kwargs), is not taken for one with extra parameters: a
        # plain def stays an error
        Invalid("""
            def run_agent(args, sample, base_url, api_key, evaluation=False):
                return 1.0
        """, line=1, col=4, severity="error"),
        # ... while one whose parameters are all the hook's stays an error by name alone
        Invalid("""
            def log_rollout_data(rollout_id, args, samples):
                return False
        """, line=1, col=4),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for binding, target in _hook_targets(self, rollout=False):
            spec = binding.spec
            if spec.dest == "custom_rm_path" and self.context.options.group_rm(binding):
                spec = GROUP_RM_SPEC
            _check(self, target, binding, spec, "VIM004")
