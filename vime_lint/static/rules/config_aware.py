"""VIM019: a dict reward comes with a ``--reward-key`` in the launch configuration (through
:class:`vime_lint.static.rules._launch_tracker.LaunchTracker`: only hooks a launch file names).

See ``docs/contract.md`` §2, §5, §7, §8 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._discovery import FORWARDED_ARGS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static.rules._launch_tracker import GENERATE, RM, LaunchTracker, launch_text

__all__ = ["DictRewardWithoutRewardKey"]


_ROLLOUT = ("rollout_function_path", "eval_function_path")


def _is_dict_value(expr: cst.BaseExpression | None) -> bool:
    """A dict display, ``dict(...)``, or a list/comprehension of them (a batch RM's result)."""
    if isinstance(expr, cst.Dict | cst.DictComp):
        return True
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Name) and expr.func.value == "dict"
    if isinstance(expr, cst.ListComp | cst.GeneratorExp):
        return _is_dict_value(expr.elt)
    if isinstance(expr, cst.List) and expr.elements:
        return all(_is_dict_value(el.value) for el in expr.elements)
    return False


class DictRewardWithoutRewardKey(LaunchTracker):
    """A dict reward comes with a ``--reward-key`` in the launch configuration.

    ## What it does
    For a reward function (``--custom-rm-path``) named by a launch script or config, reports
    ``return {...}`` / ``return dict(...)`` (or a list of dicts from a batch RM; also a local
    name or a call of the module's own helper the dict comes from) when no launch file naming
    it sets ``--reward-key``. Also reports ``x.reward = {...}`` in rollout
    and generate functions named by such a launch. Quiet when no launch file names the hook,
    or when a launch script forwards its own arguments (``"$@"``). Runtime twin: VIM110.

    ## Why is this bad?
    Training reads a dict reward through ``args.reward_key``
    (``Sample.get_reward_value(args)``); without the key the first step fails with VIM110,
    after a whole rollout was generated (failure kind: "dict reward without reward_key").

    ## Example
    ```python
    # run.sh: --custom-rm-path my_rm.reward_func        (no --reward-key)
    async def reward_func(args, sample, **kwargs):
        return {"accuracy": 1.0, "format": 0.5}
    ```

    ## Use instead
    ```python
    # run.sh: --custom-rm-path my_rm.reward_func --reward-key accuracy
    async def reward_func(args, sample, **kwargs):
        return {"accuracy": 1.0, "format": 0.5}
    ```

    ## Options
    The launch configuration: ``--reward-key`` (or ``reward_key:`` in YAML) in the launch
    file naming the hook, or in a config file it names.

    ## Fix safety
    No fix: the key to train on is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM019"]
    VALID = [
        Valid("async def reward_func(args, sample, **kwargs):\n    return {'acc': 1.0}\n",
              options={"hooks": {"reward_func": RM},
                       "launch_flags": ["--custom-rm-path", "--reward-key"]}),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return {'acc': 1.0}
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return {'acc': 1.0}
        """, options={"hooks": {"reward_func": RM}}),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return 1.0
        """, options={"hooks": {"reward_func": RM}, "launch_flags": ["--custom-rm-path"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n    return {'acc': 1.0}\n",
              options={"hooks": {"reward_func": RM},
                       "launch_flags": ["--custom-rm-path", FORWARDED_ARGS]}),
        # A module helper's dict, but the hook returns one float from it.
        Valid("""
            def _score(sample):
                return {'acc': float(sample.response == sample.label), 'len': len(sample.response)}
            async def reward_func(args, sample, **kwargs):
                return _score(sample)['acc']
        """,
              options={'hooks': {'reward_func': 'custom_rm_path'},
                       'launch_flags': ['--custom-rm-path']}),
        # An instance's __call__ that builds a dict but returns one float from it.
        Valid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    scores = {'acc': float(sample.response == sample.label)}
                    return scores['acc']
            reward_func = Judge()
        """,
              options={'hooks': {'reward_func': 'custom_rm_path'},
                       'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                return {'acc': 1.0, 'format': 0.0}
        """,
                line=2, col=4,
                options={"hooks": {"reward_func": RM}, "launch_flags": ["--custom-rm-path"]}),
        Invalid("""
            async def batched(args, samples, **kwargs):
                return [{'acc': float(s.response == s.label)} for s in samples]
        """, line=2, col=4, options={"hooks": {"batched": RM}, "launch_flags": ["--group-rm"]}),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    for group in data_source.get_samples(1):\n"
                "        for s in group:\n"
                "            s.reward = {'acc': 1.0}\n", line=4, col=12,
                options={"hooks": {"generate_rollout": "rollout_function_path"},
                         "launch_flags": []}),
        # Through a local name bound to the dict.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                scores = {'acc': float(sample.response == sample.label)}
                return scores
        """,
                line=3, col=4,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # The dict built by a module helper the hook returns.
        Invalid("""
            def _score(sample):
                return {'acc': float(sample.response == sample.label), 'len': len(sample.response)}
            async def reward_func(args, sample, **kwargs):
                return _score(sample)
        """,
                line=4, col=4,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # A dict comprehension.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                checks = {'acc': sample.label, 'fmt': '</answer>'}
                return {k: float(v in sample.response) for k, v in checks.items()}
        """,
                line=3, col=4,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the reward function: its __call__ returns the dict.
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return {'acc': float(sample.response == sample.label)}
            reward_func = Judge()
        """,
                line=3, col=8,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
    ]

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest not in (RM, GENERATE, *_ROLLOUT) or not launches:
            return None
        if any("--reward-key" in flags or FORWARDED_ARGS in flags for _, flags in launches):
            return None
        return [f for f, _ in launches]

    def _report(self, node: cst.CSTNode, what: str) -> None:
        active = self.active
        assert active is not None
        binding, launches = active
        where = launch_text(launches)
        self.report(node, self.INVARIANT.render(
            problem=f"`{binding.function}` {what}, but {where} (which names it for "
            f"{binding.spec.arg}) sets no --reward-key"),
            fix_hint=f"add `--reward-key <key>` to {launches[0]}, or return a float")

    def visit_Return(self, node: cst.Return) -> None:
        active = self.active
        fn = self.functions[-1] if len(self.functions) == 1 else None
        if active is None or active[0].spec.dest != RM or fn is None or node.value is None:
            return
        if _is_dict_value(node.value):
            self._report(node, "returns a dict reward")
            return
        # A local name or the module's own helper that the dict comes from.
        if isinstance(node.value, cst.Name | cst.Call | cst.Await) and any(
                leaf is not None and leaf is not node.value and _is_dict_value(leaf)
                for leaf, _ in self.context.semantic.origins(fn, node.value)):
            self._report(node, "returns a dict reward")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        if self.active is None or not isinstance(node.value, cst.Dict | cst.Call):
            return
        for t in node.targets:
            tgt = t.target
            if isinstance(tgt, cst.Attribute) and tgt.attr.value == "reward" \
                    and self.is_sample(tgt.value) and _is_dict_value(node.value):
                self._report(node, "sets a dict reward")
