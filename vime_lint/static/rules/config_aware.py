"""Checks that need the launch configuration: VIM019.

The launch configuration is what hook discovery read from the repository's shell scripts and
YAML/JSON/TOML configs: the file that names a hook (``--custom-rm-path pkg.rm.score``) and the
``--flags`` it sets (with those of the config files it names). These rules only look at hooks
named by a launch file and stay quiet when none was found, so a module linted on its own never
gets a configuration-aware finding.

See ``docs/contract.md`` §2, §5, §7, §8 and §6a.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vime.contract import INVARIANTS
from vime_lint.static._discovery import FORWARDED_ARGS
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import FileContext
from vime_lint.static.rules._samples import SampleTracker

__all__ = ["DictRewardWithoutRewardKey", "LabelWithoutLabelKey", "RewardSetBeforeCustomRm"]

_RM = "custom_rm_path"
_GENERATE = "custom_generate_function_path"
_ROLLOUT = ("rollout_function_path", "eval_function_path")
#: Flags that give a sample a label: the dataset key, or a data source that may set it itself.
_LABEL_SOURCES = ("--label-key", "--eval-label-key", "--data-source-path")


def _launch_text(launches: Sequence[str]) -> str:
    more = f" (and {len(launches) - 1} more)" if len(launches) > 1 else ""
    return f"{launches[0]}{more}"


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


class _LaunchTracker(SampleTracker):
    """Knows the hook of the enclosing module-level function (or the ``__call__`` of a class
    whose instance is bound as the hook) and its launch files.

    ``self.active`` is the (binding, launch files) of the innermost hook function whose
    launches pass :meth:`wants`, or None.
    """

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.active_stack: list[tuple[HookBinding, list[str]] | None] = []

    @classmethod
    def applies(cls, context: FileContext) -> bool:
        return any(b.launches for bs in context.hooks.values() for b in bs)

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        """The launch files that make the rule apply to ``binding`` (None: it does not)."""
        raise NotImplementedError

    @property
    def active(self) -> tuple[HookBinding, list[str]] | None:
        return next((a for a in reversed(self.active_stack) if a is not None), None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        entry = None
        if len(self.functions) == 1 and not self.class_depth:
            for b in self.context.hooks.get(node.name.value, ()):
                chosen = self.wants(b, self.context.options.launches_of(b))
                if chosen:
                    entry = (b, chosen)
                    break
        elif len(self.functions) == 1 and self.class_depth == 1 \
                and node.name.value == "__call__":
            # The ``__call__`` of a module-level class whose instance is bound as the hook.
            binding = self.hook_of(node)
            if binding is not None:
                chosen = self.wants(binding, self.context.options.launches_of(binding))
                if chosen:
                    entry = (binding, chosen)
        self.active_stack.append(entry)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.active_stack.pop()
        super().leave_FunctionDef(original_node)


class DictRewardWithoutRewardKey(_LaunchTracker):
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
              options={"hooks": {"reward_func": _RM},
                       "launch_flags": ["--custom-rm-path", "--reward-key"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n    return {'acc': 1.0}\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n    return {'acc': 1.0}\n",
              options={"hooks": {"reward_func": _RM}}),
        Valid("async def reward_func(args, sample, **kwargs):\n    return 1.0\n",
              options={"hooks": {"reward_func": _RM}, "launch_flags": ["--custom-rm-path"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n    return {'acc': 1.0}\n",
              options={"hooks": {"reward_func": _RM},
                       "launch_flags": ["--custom-rm-path", FORWARDED_ARGS]}),
        # A module helper's dict, but the hook returns one float from it.
        Valid("def _score(sample):\n"
              "    return {'acc': float(sample.response == sample.label), 'len': len(sample.response)}\n"
              "async def reward_func(args, sample, **kwargs):\n"
              "    return _score(sample)['acc']\n",
              options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # An instance's __call__ that builds a dict but returns one float from it.
        Valid("class Judge:\n"
              "    async def __call__(self, args, sample, **kwargs):\n"
              "        scores = {'acc': float(sample.response == sample.label)}\n"
              "        return scores['acc']\n"
              "reward_func = Judge()\n",
              options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    return {'acc': 1.0, 'format': 0.0}\n", line=2, col=4,
                options={"hooks": {"reward_func": _RM}, "launch_flags": ["--custom-rm-path"]}),
        Invalid("async def batched(args, samples, **kwargs):\n"
                "    return [{'acc': float(s.response == s.label)} for s in samples]\n",
                line=2, col=4,
                options={"hooks": {"batched": _RM}, "launch_flags": ["--group-rm"]}),
        Invalid("def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
                "    for group in data_source.get_samples(1):\n"
                "        for s in group:\n"
                "            s.reward = {'acc': 1.0}\n", line=4, col=12,
                options={"hooks": {"generate_rollout": "rollout_function_path"},
                         "launch_flags": []}),
        # Through a local name bound to the dict.
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    scores = {'acc': float(sample.response == sample.label)}\n"
                "    return scores\n",
                line=3, col=4, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # The dict built by a module helper the hook returns.
        Invalid("def _score(sample):\n"
                "    return {'acc': float(sample.response == sample.label), 'len': len(sample.response)}\n"
                "async def reward_func(args, sample, **kwargs):\n"
                "    return _score(sample)\n",
                line=4, col=4, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # A dict comprehension.
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    checks = {'acc': sample.label, 'fmt': '</answer>'}\n"
                "    return {k: float(v in sample.response) for k, v in checks.items()}\n",
                line=3, col=4, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the reward function: its __call__ returns the dict.
        Invalid("class Judge:\n"
                "    async def __call__(self, args, sample, **kwargs):\n"
                "        return {'acc': float(sample.response == sample.label)}\n"
                "reward_func = Judge()\n",
                line=3, col=8, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest not in (_RM, _GENERATE, *_ROLLOUT) or not launches:
            return None
        if any("--reward-key" in flags or FORWARDED_ARGS in flags for _, flags in launches):
            return None
        return [f for f, _ in launches]

    def _report(self, node: cst.CSTNode, what: str) -> None:
        active = self.active
        assert active is not None
        binding, launches = active
        where = _launch_text(launches)
        self.report(node, self.INVARIANT.render(
            problem=f"`{binding.function}` {what}, but {where} (which names it for "
            f"{binding.spec.arg}) sets no --reward-key"),
            fix_hint=f"add `--reward-key <key>` to {launches[0]}, or return a float")

    def visit_Return(self, node: cst.Return) -> None:
        active = self.active
        fn = self.functions[-1] if len(self.functions) == 1 else None
        if active is None or active[0].spec.dest != _RM or fn is None or node.value is None:
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


class RewardSetBeforeCustomRm(_LaunchTracker):
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
              options={"hooks": {"generate": _GENERATE},
                       "launch_flags": ["--custom-generate-function-path"]}),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    sample.reward = None\n    return sample\n",
              options={"hooks": {"generate": _GENERATE}, "launch_flags": ["--custom-rm-path"]}),
        Valid("async def generate(args, sample, sampling_params):\n"
              "    sample.reward = 1.0\n    return sample\n",
              options={"hooks": {"generate": _GENERATE}}),
        # Through a local alias of the sample, the reward cleared for the RM.
        Valid("async def generate(args, sample, sampling_params):\n"
              "    cur = sample\n"
              "    cur.response = (await post(url, sampling_params))['text']\n"
              "    cur.reward = None\n"
              "    return cur\n",
              options={'hooks': {'generate': 'custom_generate_function_path'}, 'launch_flags': ['--custom-rm-path']}),
        # A nested helper passes a score to the RM in metadata.
        Valid("async def generate(args, sample, sampling_params):\n"
              "    def _finish(sample, text):\n"
              "        sample.response = text\n"
              "        sample.metadata['hint_score'] = float(sample.label in text)\n"
              "    _finish(sample, (await post(url, sampling_params))['text'])\n"
              "    return sample\n",
              options={'hooks': {'generate': 'custom_generate_function_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    sample.reward = 1.0\n    return sample\n", line=2, col=4,
                options={"hooks": {"generate": _GENERATE},
                         "launch_flags": ["--custom-generate-function-path",
                                          "--custom-rm-path"]}),
        Invalid("async def gen(args, sample, sampling_params):\n"
                "    for s in iter_samples([sample]):\n        s.reward += 1\n"
                "    return sample\n", line=3, col=8,
                options={"hooks": {"gen": _GENERATE}, "launch_flags": ["--custom-rm-path"]}),
        # Through a local alias of the sample.
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    cur = sample\n"
                "    cur.response = (await post(url, sampling_params))['text']\n"
                "    cur.reward = float(cur.label in cur.response)\n"
                "    return cur\n",
                line=4, col=4, options={'hooks': {'generate': 'custom_generate_function_path'}, 'launch_flags': ['--custom-rm-path']}),
        # In a helper nested in the generate function.
        Invalid("async def generate(args, sample, sampling_params):\n"
                "    def _finish(sample, text):\n"
                "        sample.response = text\n"
                "        sample.reward = float(sample.label in text)\n"
                "    _finish(sample, (await post(url, sampling_params))['text'])\n"
                "    return sample\n",
                line=4, col=8, options={'hooks': {'generate': 'custom_generate_function_path'}, 'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the generate function: its __call__ sets the reward.
        Invalid("class Gen:\n"
                "    async def __call__(self, args, sample, sampling_params):\n"
                "        sample.reward = 1.0\n"
                "        return sample\n"
                "generate = Gen()\n",
                line=3, col=8, options={'hooks': {'generate': 'custom_generate_function_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest != _GENERATE:
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
            f"{_launch_text(launches)} also sets --custom-rm-path, which is then skipped for "
            "samples that already have a reward"),
            fix_hint="leave `reward` to the reward model (pass what it needs in "
            "`sample.metadata`), or drop --custom-rm-path")

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        for t in node.targets:
            self._check(node, t.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node, node.target, None)


class LabelWithoutLabelKey(_LaunchTracker):
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
              options={"hooks": {"reward_func": _RM},
                       "launch_flags": ["--custom-rm-path", "--label-key"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    return float(sample.response == sample.label)\n"),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    sample.label = 'x'\n    return 1.0\n",
              options={"hooks": {"reward_func": _RM}, "launch_flags": ["--custom-rm-path"]}),
        Valid("async def reward_func(args, sample, **kwargs):\n"
              "    return float(sample.response == sample.label)\n",
              options={"hooks": {"reward_func": _RM},
                       "launch_flags": ["--custom-rm-path", "--data-source-path"]}),
        # A set comprehension over the samples reading an answer from metadata, not the label.
        Valid("async def reward_func(args, samples, **kwargs):\n"
              "    wanted = {s.metadata.get('answer') for s in samples}\n"
              "    return [float(s.response in wanted) for s in samples]\n",
              options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]
    INVALID = [
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    answer = sample.label\n"
                "    return float(sample.response.strip() == sample.label)\n", line=2, col=13,
                options={"hooks": {"reward_func": _RM}, "launch_flags": ["--custom-rm-path"]}),
        Invalid("async def score(args, samples, **kwargs):\n"
                "    return [float(s.response == s.label) for s in samples]\n", line=2, col=32,
                options={"hooks": {"score": _RM}, "launch_flags": ["--group-rm"]}),
        # Through a local alias of the sample.
        Invalid("async def reward_func(args, sample, **kwargs):\n"
                "    cur = sample\n"
                "    return 1.0 if cur.label in cur.response else 0.0\n",
                line=3, col=18, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # In a set comprehension over the samples of a batch.
        Invalid("async def reward_func(args, samples, **kwargs):\n"
                "    wanted = {s.label for s in samples}\n"
                "    return [float(s.response in wanted) for s in samples]\n",
                line=2, col=14, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
        # An instance bound as the reward function: its __call__ reads the label.
        Invalid("class Judge:\n"
                "    async def __call__(self, args, sample, **kwargs):\n"
                "        return {'acc': float(sample.response == sample.label)}\n"
                "reward_func = Judge()\n",
                line=3, col=48, options={'hooks': {'reward_func': 'custom_rm_path'}, 'launch_flags': ['--custom-rm-path']}),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.done: set[str] = set()
        self.targets: set[int] = set()

    def wants(self, binding: HookBinding,
              launches: list[tuple[str, frozenset[str]]]) -> list[str] | None:
        if binding.spec.dest != _RM or not launches:
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
            f"{_launch_text(launches)} sets no --label-key, so every label is None"),
            fix_hint=f"add `--label-key <dataset column>` to {launches[0]}")
