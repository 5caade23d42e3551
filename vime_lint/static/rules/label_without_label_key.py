"""VIM034: a reward function that reads ``label`` runs with a ``--label-key`` in its launch.

See ``docs/contract.md`` §2, §5, §7 and §6a.
"""

from __future__ import annotations

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._discovery import FORWARDED_ARGS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.rules._launch_tracker import RM, LaunchTracker, launch_text

__all__ = ["LabelWithoutLabelKey"]


#: Flags that give a sample a label: the dataset key, or a data source that may set it itself.
_LABEL_SOURCES = ("--label-key", "--eval-label-key", "--data-source-path")


class LabelWithoutLabelKey(LaunchTracker):
    """A reward function that reads ``label`` runs with a ``--label-key``.

    ## What it does
    For a reward function (``--custom-rm-path``) named by a launch file, reports its first
    read of ``sample.label`` when no launch file naming it sets ``--label-key`` (or
    ``--eval-label-key``, or a custom ``--data-source-path`` that may fill labels itself), and
    no launch script forwards its own arguments (``"$@"``). Runtime twin: VIM118.

    ## Why is this bad?
    Without ``--label-key`` the data source leaves every ``label`` None, so the reward
    function compares each response with None: every reward is 0 and the run learns
    nothing, without an error (failure kind: "label missing").

    ## Example
    ```python
    # run.sh: --custom-rm-path my_rm.reward_func        (no --label-key)
    async def reward_func(args, sample, **kwargs):
        return float(sample.response.strip() == sample.label)
    ```

    ## Use instead
    ```python
    # run.sh: --custom-rm-path my_rm.reward_func --label-key answer
    async def reward_func(args, sample, **kwargs):
        return float(sample.response.strip() == sample.label)
    ```

    ## Options
    The launch configuration: ``--label-key`` in the launch file naming the reward function
    (or in a config file it names, e.g. ``label_key:`` in an eval config).

    ## Fix safety
    No fix: the dataset key is the author's choice.
    """

    INVARIANT = INVARIANTS["VIM034"]
    ALIASES = ("VIM019",)
    VALID = [
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    return float(sample.response == sample.label)\n",
              options={"hooks": {"reward_func": RM},
                       "launch_flags": ["--custom-rm-path", "--label-key"]}),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                return float(sample.response == sample.label)
        """),
        Valid("""
            async def reward_func(args, sample, **kwargs):
                sample.label = 'x'
                return 1.0
        """, options={"hooks": {"reward_func": RM}, "launch_flags": ["--custom-rm-path"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    return float(sample.response == sample.label)\n",
              options={"hooks": {"reward_func": RM},
                       "launch_flags": ["--custom-rm-path", "--data-source-path"]}),
        # A set comprehension over the samples reading an answer from metadata, not the label.
        Valid("""
            async def reward_func(args, samples, **kwargs):
                wanted = {s.metadata.get('answer') for s in samples}
                return [float(s.response in wanted) for s in samples]
        """,
              options={'hooks': {'reward_func': 'custom_rm_path'},
                       'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                answer = sample.label
                return float(sample.response.strip() == sample.label)
        """,
                line=2, col=13,
                options={"hooks": {"reward_func": RM}, "launch_flags": ["--custom-rm-path"]}),
        Invalid("""
            async def score(args, samples, **kwargs):
                return [float(s.response == s.label) for s in samples]
        """, line=2, col=32, options={"hooks": {"score": RM}, "launch_flags": ["--group-rm"]}),
        # Through a local alias of the sample.
        Invalid("""
            async def reward_func(args, sample, **kwargs):
                cur = sample
                return 1.0 if cur.label in cur.response else 0.0
        """,
                line=3, col=18,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # In a set comprehension over the samples of a batch.
        Invalid("""
            async def reward_func(args, samples, **kwargs):
                wanted = {s.label for s in samples}
                return [float(s.response in wanted) for s in samples]
        """,
                line=2, col=14,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the reward function: its __call__ reads the label.
        Invalid("""
            class Judge:
                async def __call__(self, args, sample, **kwargs):
                    return {'acc': float(sample.response == sample.label)}
            reward_func = Judge()
        """,
                line=3, col=48,
                options={'hooks': {'reward_func': 'custom_rm_path'},
                         'launch_flags': ['--custom-rm-path']}),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.done: set[str] = set()
        self.targets: set[int] = set()

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest != RM or not launches:
            return None
        if any(flag in flags for _, flags in launches
               for flag in (*_LABEL_SOURCES, FORWARDED_ARGS)):
            return None
        return [f for f, _ in launches]

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        self.targets |= {id(t.target) for t in node.targets}

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.targets.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        active = self.active
        if active is None or node.attr.value != "label" or id(node) in self.targets \
                or not self.is_sample(node.value):
            return
        binding, launches = active
        if binding.function in self.done:
            return
        self.done.add(binding.function)
        self.report(node, self.INVARIANT.render(
            problem=f"reward function `{binding.function}` reads `.label`, but "
            f"{launch_text(launches)} sets no --label-key, so every label is None"),
            fix_hint=f"add `--label-key <dataset column>` to {launches[0]}")
