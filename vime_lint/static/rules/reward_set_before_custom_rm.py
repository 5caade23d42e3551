"""VIM035: a custom generate function leaves ``reward`` to the configured reward model
(``--custom-rm-path``) of its launch.

See ``docs/contract.md`` §2, §5, §8 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static.rules._launch_tracker import GENERATE, LaunchTracker, launch_text

__all__ = ["RewardSetBeforeCustomRm"]


class RewardSetBeforeCustomRm(LaunchTracker):
    """A generate function leaves ``reward`` to the configured reward model.

    ## What it does
    For a custom generate function (``--custom-generate-function-path``) named by a launch
    file that also sets ``--custom-rm-path``, reports assignments of a value other than None
    to ``sample.reward``. Runtime twin: VIM141.

    ## Why is this bad?
    The default rollout only calls the reward model for samples whose ``reward`` is still
    None: a reward set by generate silently replaces the configured RM for every sample
    (failure kind: "custom RM silently skipped").

    ## Example
    ```python
    # run.sh: --custom-generate-function-path my.generate --custom-rm-path my.reward_func
    async def generate(args, sample, sampling_params):
        ...
        sample.reward = 1.0 if "\\boxed" in sample.response else 0.0
        return sample
    ```

    ## Use instead
    ```python
    async def generate(args, sample, sampling_params):
        ...
        sample.metadata["has_box"] = "\\boxed" in sample.response   # read it in the RM
        return sample
    ```

    ## Options
    The launch configuration: ``--custom-rm-path`` in a launch file that names the generate
    function (or in a config file it names).

    ## Fix safety
    No fix.
    """

    INVARIANT = INVARIANTS["VIM035"]
    ALIASES = ("VIM019",)
    VALID = [
        Valid("async def generate(args, sample, sampling_params):\n"
              "    sample.reward = 1.0\n    return sample\n",
              options={"hooks": {"generate": GENERATE},
                       "launch_flags": ["--custom-generate-function-path"]}),
        Valid("""
            async def generate(args, sample, sampling_params):
                sample.reward = None
                return sample
        """, options={"hooks": {"generate": GENERATE}, "launch_flags": ["--custom-rm-path"]}),
        Valid("""
            async def generate(args, sample, sampling_params):
                sample.reward = 1.0
                return sample
        """, options={"hooks": {"generate": GENERATE}}),
        # Through a local alias of the sample, the reward cleared for the RM.
        Valid("""
            async def generate(args, sample, sampling_params):
                cur = sample
                cur.response = (await post(url, sampling_params))['text']
                cur.reward = None
                return cur
        """,
              options={'hooks': {'generate': 'custom_generate_function_path'},
                       'launch_flags': ['--custom-rm-path']}),
        # A nested helper passes a score to the RM in metadata.
        Valid("""
            async def generate(args, sample, sampling_params):
                def _finish(sample, text):
                    sample.response = text
                    sample.metadata['hint_score'] = float(sample.label in text)
                _finish(sample, (await post(url, sampling_params))['text'])
                return sample
        """,
              options={'hooks': {'generate': 'custom_generate_function_path'},
                       'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    sample.reward = 1.0\n    return sample\n", line=2, col=4,
                options={"hooks": {"generate": GENERATE},
                         "launch_flags": ["--custom-generate-function-path",
                                          "--custom-rm-path"]}),
        Invalid("""
            async def gen(args, sample, sampling_params):
                for s in iter_samples([sample]):
                    s.reward += 1
                return sample
        """,
                line=3, col=8,
                options={"hooks": {"gen": GENERATE}, "launch_flags": ["--custom-rm-path"]}),
        # Through a local alias of the sample.
        Invalid("""
            async def generate(args, sample, sampling_params):
                cur = sample
                cur.response = (await post(url, sampling_params))['text']
                cur.reward = float(cur.label in cur.response)
                return cur
        """,
                line=4, col=4,
                options={'hooks': {'generate': 'custom_generate_function_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # In a helper nested in the generate function.
        Invalid("""
            async def generate(args, sample, sampling_params):
                def _finish(sample, text):
                    sample.response = text
                    sample.reward = float(sample.label in text)
                _finish(sample, (await post(url, sampling_params))['text'])
                return sample
        """,
                line=4, col=8,
                options={'hooks': {'generate': 'custom_generate_function_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the generate function: its __call__ sets the reward.
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    sample.reward = 1.0
                    return sample
            generate = Gen()
        """,
                line=3, col=8,
                options={'hooks': {'generate': 'custom_generate_function_path'},
                         'launch_flags': ['--custom-rm-path']}),
    ]

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest != GENERATE:
            return None
        return [f for f, flags in launches if "--custom-rm-path" in flags] or None

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression,
               value: cst.BaseExpression | None) -> None:
        active = self.active
        if active is None or not isinstance(target, cst.Attribute) \
                or target.attr.value != "reward" or not self.is_sample(target.value):
            return
        if isinstance(value, cst.Name) and value.value == "None":
            return
        binding, launches = active
        self.report(node, self.INVARIANT.render(
            problem=f"generate function `{binding.function}` sets `.reward`, but "
            f"{launch_text(launches)} also sets --custom-rm-path, which is then skipped for "
            "samples that already have a reward"),
            fix_hint="leave `reward` to the reward model (pass what it needs in "
            "`sample.metadata`), or drop --custom-rm-path")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        for t in node.targets:
            self._check(node, t.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node, node.target, None)
