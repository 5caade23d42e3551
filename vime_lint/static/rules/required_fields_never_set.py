"""Samples that reach a rollout's train output, or leave a custom generate function, with
required fields never set: VIM036.

The fields and the calls that set them come from the contract (``REQUIRED_TRAIN_FIELDS``,
``GENERATED_FIELDS``, ``FIELD_SETTERS``) and the semantic model
(:func:`vime_lint.static.analysis.fields_set`) over the hook and the module's own helpers it
reaches.

See ``docs/contract.md`` §2 (Sample fields), §4 and §6a.
"""

from __future__ import annotations

import sys

import libcst as cst

from vime.contract import INVARIANTS, Severity
from vime.contract.sample import UNSET_FIELD_SEVERITY
from vime_lint.static._model import HookBinding, Invalid, Valid
from vime_lint.static._rule import FunctionTracker
from vime_lint.static.analysis import GENERATED_FIELDS, REQUIRED_FIELDS, TRAIN_OUT, fields_set
from vime_lint.static.rules._signature_checks import ROLLOUT_DESTS

__all__ = ["RequiredFieldsNeverSet"]

_HEAD = ("from vime.rollout.base_types import RolloutFnTrainOutput\n"
         "from vime.utils.types import Sample\n")
_SIG = "def generate_rollout(args, rollout_id, data_source, evaluation=False):\n"
_GEN = "async def generate(args, sample, sampling_params):\n"
_GENERATE = "custom_generate_function_path"
_EVAL = ("from vime.rollout.base_types import RolloutFnEvalOutput\n"
         "def _eval_out(groups):\n"
         "    return RolloutFnEvalOutput(data={'toy': {'rewards': [], 'truncated': [], "
         "'samples': groups}})\n")
#: The start of a rollout that fills every sample's tokens, length and status (not the reward).
_FILLED = (_SIG + "    groups = data_source.get_samples(2)\n"
           "    for g in groups:\n        for s in g:\n"
           "            s.append_response_tokens(args, tokens=[1], log_probs=[-0.1], "
           "meta_info={'finish_reason': 'stop'})\n")



#: How each required field is usually set, for the fix of a finding that names it.
_HOW_TO_SET = {"tokens": "sample.tokens = prompt_ids + response_ids",
               "response_length": "sample.response_length = len(response_ids)",
               "reward": "sample.reward = float(score)",
               "status": "sample.status = Sample.Status.COMPLETED"}


def _severity(missing: list[str]) -> Severity:
    """The finding's severity: the worst of what each ``missing`` field left at its default
    does at run time (``vime.contract.sample.UNSET_FIELD_SEVERITY``: a status left PENDING
    only warns and trains as not truncated; no tokens, length or reward fails)."""
    return "error" if any(UNSET_FIELD_SEVERITY[f] == "error" for f in missing) else "warning"


#: Said of a finding whose only missing field is the status (UNSET_FIELD_SEVERITY).
_PENDING_NOTE = ("the status stays PENDING, which vime warns about (VIM111) and trains as not "
                 "truncated, so a response cut at the length limit trains as a finished one")


def _set_fields_fix(missing: list[str]) -> str:
    """The fix of a VIM036 finding on a rollout function: set exactly the ``missing`` fields."""
    how = "; ".join(_HOW_TO_SET.get(f, f"sample.{f} = ...") for f in missing)
    return (f"set {', '.join(missing)} on every sample before it is returned ({how}), or "
            "produce the samples with vime's generate / generate_and_rm, which set them")

class RequiredFieldsNeverSet(FunctionTracker):
    """A rollout's samples get ``tokens``, ``response_length``, ``reward`` and ``status``.

    ## What it does
    Follows the samples of a rollout function (built with ``Sample(...)``, or taken from
    ``data_source.get_samples(...)`` and then filled in) to the ``RolloutFnTrainOutput`` it
    returns, through the module's own helpers, and reports the required fields that no path
    sets: no attribute store, no
    ``Sample(...)`` keyword, no call that sets them (vime's generate, ``generate_and_rm``,
    ``rm_hub``, ``append_response_tokens``, a helper of the module that receives the sample).
    Code that hands the samples to a function the module does not show (an imported
    environment, another object's method) may set them there and is not reported, nor are
    samples returned untouched from a data source (a replay buffer may hold complete ones).
    Only the train path counts: a field set only under ``if evaluation:`` (or before an
    early ``if evaluation: return ...``), directly or by a helper called there, is not set
    for the ``RolloutFnTrainOutput``.

    For a ``--custom-generate-function-path`` function, reports a return when the sample
    (its second parameter, whatever its name, or the samples it builds) never gets
    ``tokens``, ``response_length`` and ``status`` on any path: no store (``+=`` and
    ``sample.tokens.extend(...)`` count), no ``Sample(...)`` keyword, no call of vime's
    generate, ``append_response_tokens`` (with ``meta_info`` for the status),
    ``update_from_meta_info`` or a helper of the module given the sample. The reward is not
    asked for: the reward function sets it after the generate step. A missing status alone is
    a warning (the generate boundary check warns on a PENDING sample); a missing response is
    an error (the boundary check fails the sample). Samples returned from a function imported
    from another module (a step sampler building them from an environment's trajectory) are
    made where the module does not show and are not followed; ``return []`` is reported as
    what it is, no sample at all, which the generate boundary check fails.

    ## Why is this bad?
    A sample without tokens, a response length or a reward cannot be converted to training
    data: the step fails after the engines and the trainer have started. A rollout that
    forgets ``reward`` looks fine until then (failure kind: "required field never set"). A
    status never set stays ``PENDING``: vime warns (VIM111) and trains the sample as not
    truncated, so a response cut at the length limit trains as a finished one; a finding
    whose only missing field is the status is a warning.

    ## Example
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        for group in groups:
            for s in group:
                s.append_response_tokens(args, tokens=[1, 2], log_probs=[-0.1, -0.2])
                s.status = Sample.Status.COMPLETED
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Use instead
    ```python
    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        groups = data_source.get_samples(args.rollout_batch_size)
        for group in groups:
            for s in group:
                s.append_response_tokens(args, tokens=[1, 2], log_probs=[-0.1, -0.2])
                s.status = Sample.Status.COMPLETED
                s.reward = score(s)
        return RolloutFnTrainOutput(samples=groups)
    ```

    ## Fix safety
    No fix: the value of the field is the author's to compute.
    """

    INVARIANT = INVARIANTS["VIM036"]
    NEEDS_HOOKS = True
    VALID = [
        # Every field set by attribute stores, in a helper that receives the sample.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def _finish(s, text):
                s.tokens = [1, 2]
                s.response_length = 1
                s.reward = float(text == s.label)
                s.status = Sample.Status.COMPLETED
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        _finish(s, 'x')
                return RolloutFnTrainOutput(samples=groups)
        """),
        # vime's generate_and_rm sets them all.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            from vime.rollout.vllm_rollout import generate_and_rm
            from vime.utils.async_utils import run
            import asyncio
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                run(asyncio.gather(*[generate_and_rm(args, s, {}) for g in groups for s in g]))
                return RolloutFnTrainOutput(samples=groups)
        """),
        # Sample(...) keywords, append_response_tokens with meta_info, rm_hub for the reward.
        Valid(_HEAD + "from vime.rollout.rm_hub import async_rm\nfrom vime.utils.async_utils import run\n"
              + _SIG + "    s = Sample(prompt='p', reward=None)\n"
              "    s.append_response_tokens(args, tokens=[1], log_probs=[-0.1], "
              "meta_info={'finish_reason': 'stop'})\n"
              "    s.reward = run(async_rm(args, s))\n"
              "    return RolloutFnTrainOutput(samples=[[s]])\n"),
        # Every field set, returned through vime's finalize_rollout_groups.
        Valid(_HEAD + "import vime.rollout.base_types as bt\n" + _SIG +
              "    groups = data_source.get_samples(2)\n    for g in groups:\n        for s in g:\n"
              "            s.append_response_tokens(args, tokens=[1], log_probs=[-0.1], "
              "meta_info={'finish_reason': 'stop'})\n"
              "            s.reward = 1.0\n"
              "    return bt.finalize_rollout_groups(args, rollout_id, groups)\n"),
        # A class rollout whose self method sets every field on each sample.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(2)
                    for g in groups:
                        for s in g:
                            self._finish(args, s)
                    return RolloutFnTrainOutput(samples=groups)
                def _finish(self, args, s):
                    s.append_response_tokens(args, tokens=[1], log_probs=[-0.1])
                    s.status = Sample.Status.COMPLETED
                    s.reward = 1.0
            generate_rollout = Rollout()
        """),
        # Untouched samples of a data source (a replay buffer may hold complete ones).
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                return RolloutFnTrainOutput(samples=data_source.get_samples(2))
        """),
        # Handed to an imported environment: it may set them; not reported.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            from my_env import play
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        play(s)
                return RolloutFnTrainOutput(samples=groups)
        """),
        # A custom generate function: append_response_tokens(meta_info=...) sets all three.
        Valid(_GEN + "    out = await post(URL, {'input_ids': sample.tokens, **sampling_params})\n"
              "    sample.append_response_tokens(args, tokens=out['token_ids'], "
              "log_probs=out['logprobs'],\n"
              "        meta_info={'finish_reason': {'type': out['finish_reason']}})\n"
              "    return sample\n"),
        # ... delegating to vime's generate under another name, the sample param renamed.
        Valid("""
            from vime.rollout.vllm_rollout import generate as vime_generate
            async def my_generate(args, smp, sampling_params):
                smp.metadata['turn'] = 1
                smp = await vime_generate(args, smp, sampling_params)
                return smp
        """, options={"hooks": {"my_generate": _GENERATE}}),
        # ... through a helper of the module (fields grown in place), as a __call__ instance.
        Valid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def _grow(s, ids):
                s.tokens.extend(ids)
                s.response_length += len(ids)
                s.status = Sample.Status.COMPLETED
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    _grow(sample, (await post(URL, {}))['token_ids'])
                    return sample
            generate = Gen()
        """),
        # ... handing the sample to an imported environment (it may set them): not reported.
        Valid("""
            from my_env import play
            async def generate(args, sample, sampling_params):
                await play(sample)
                return sample
        """),
        # ... delegating to miles' (or slime's) SGLang generate, vime's generate upstream; a
        # miles Sample built with every field.
        Valid("""
            from miles.rollout.sglang_rollout import generate as _generate
            async def generate(args, sample, sampling_params):
                sample = await _generate(args, sample, sampling_params)
                sample.metadata['kept'] = True
                return sample
        """),
        # The reward set on both sides of `if evaluation:`.
        Valid(_HEAD + _FILLED + "            if evaluation:\n                s.reward = 1.0\n"
              "            else:\n                s.reward = float(s.response == s.label)\n"
              "    return RolloutFnTrainOutput(samples=groups)\n"),
        # ... only under `evaluation == False` (the train path).
        Valid(_HEAD + _FILLED + "            if evaluation == False:\n"
              "                s.reward = 1.0\n"
              "    return RolloutFnTrainOutput(samples=groups)\n"),
        # ... after an early `if evaluation: return ...` (the rest is the train path).
        Valid(_HEAD + _EVAL + _SIG + "    groups = data_source.get_samples(2)\n"
              "    if evaluation:\n        return _eval_out(groups)\n"
              "    for g in groups:\n        for s in g:\n"
              "            s.append_response_tokens(args, tokens=[1], log_probs=[-0.1], "
              "meta_info={'finish_reason': 'stop'})\n"
              "            s.reward = 1.0\n"
              "    return RolloutFnTrainOutput(samples=groups)\n"),
        # ... by a helper called in the `else` of a one-line `if evaluation:`.
        Valid(_HEAD + "def _score(s):\n    s.reward = 1.0\n" + _FILLED
              + "            if evaluation: s.metadata['eval'] = True\n"
              "            else: _score(s)\n"
              "    return RolloutFnTrainOutput(samples=groups)\n"),
        # Samples built by an imported helper from the environment's trajectory (kekmodel/
        # slime's tau2 step sampler): made where this module cannot see, not reported.
        Valid("""
            from .steps import to_step_samples
            async def generate(args, sample, sampling_params):
                result = await play(args, sampling_params)
                samples = to_step_samples(result, sample.index)
                return samples
        """),
        Valid("""
            from tau_env.steps import to_step_samples
            async def generate(args, sample, sampling_params):
                return to_step_samples(await play(args, sampling_params))
        """),
        Valid("from miles.utils.types import Sample\ndef _to_sample(res):\n"
              "    return Sample(prompt=res.prompt, tokens=res.tokens, response_length=res.n,"
              " status=res.status)\n"
              "async def generate(args, sample, sampling_params):\n"
              "    res = await run_agent(sample)\n    return _to_sample(res)\n"),
    ]
    INVALID = [
        # The reward is never set (the guide's common mistake).
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        s.append_response_tokens(args, tokens=[1], log_probs=[-0.1])
                        s.status = Sample.Status.COMPLETED
                return RolloutFnTrainOutput(samples=groups)
        """, line=9, col=11),
        # ... returned through vime's finalize_rollout_groups (the guide's return).
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            from vime.rollout.base_types import finalize_rollout_groups
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = data_source.get_samples(2)
                for g in groups:
                    for s in g:
                        s.append_response_tokens(args, tokens=[1], log_probs=[-0.1])
                        s.status = Sample.Status.COMPLETED
                return finalize_rollout_groups(args, rollout_id, groups)
        """, line=10, col=11),
        # The reward set only under `if evaluation:`: the train path never sets it.
        Invalid(_HEAD + _FILLED + "            if evaluation:\n                s.reward = 1.0\n"
                "    return RolloutFnTrainOutput(samples=groups)\n", line=10, col=11),
        # ... before an early eval return: the train path after it has no reward.
        Invalid(_HEAD + _EVAL + _FILLED + "    if evaluation:\n"
                "        for g in groups:\n            for s in g:\n"
                "                s.reward = 1.0\n        return _eval_out(groups)\n"
                "    return RolloutFnTrainOutput(samples=groups)\n", line=16, col=11),
        # ... by a helper called only on a one-line `if evaluation is True:`.
        Invalid(_HEAD + "def _score(s):\n    s.reward = 1.0\n" + _FILLED
                + "            if evaluation is True: _score(s)\n"
                "    return RolloutFnTrainOutput(samples=groups)\n", line=11, col=11),
        # ... in the `else` of `if not evaluation:` (setattr counts as a store).
        Invalid(_HEAD + _FILLED + "            if not evaluation:\n"
                "                s.metadata['train'] = True\n"
                "            else:\n                setattr(s, 'reward', 1.0)\n"
                "    return RolloutFnTrainOutput(samples=groups)\n", line=12, col=11),
        # Built with Sample(...) keywords and a helper, but no tokens or response_length.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            def _score(s):
                s.reward = 1.0
                s.status = Sample.Status.COMPLETED
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                out = []
                for row in ['a', 'b']:
                    s = Sample(prompt=row, response='ok')
                    _score(s)
                    out.append([s])
                return RolloutFnTrainOutput(samples=out)
        """, line=12, col=11),
        # Aliased imports, samples built in a comprehension; a class rollout whose self
        # method forgets the reward; a class generate hook through a local alias.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput as Out
            from vime.utils.types import Sample as S
            def generate_rollout(args, rollout_id, data_source, evaluation=False):
                groups = [[S(prompt=p, response='ok')] for p in ['a', 'b']]
                return Out(samples=groups)
        """, line=5, col=11),
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = data_source.get_samples(2)
                    for g in groups:
                        for s in g:
                            self._finish(args, s)
                    return RolloutFnTrainOutput(samples=groups)
                def _finish(self, args, s):
                    s.append_response_tokens(args, tokens=[1], log_probs=[-0.1])
                    s.status = Sample.Status.COMPLETED
            generate_rollout = Rollout()
        """, line=9, col=15),
        Invalid("""
            class Gen:
                async def __call__(self, args, sample, sampling_params):
                    out = await post(URL, {'text': sample.prompt})
                    cur = sample
                    cur.response = out['text']
                    return cur
            generate = Gen()
        """, line=6, col=15),
        # An instance whose __call__ is the rollout builds samples and sets nothing.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            class Rollout:
                def __call__(self, args, rollout_id, data_source, evaluation=False):
                    groups = [[Sample(prompt=p)] for p in ['a', 'b']]
                    return RolloutFnTrainOutput(samples=groups)
            generate_rollout = Rollout()
        """, line=6, col=15),
        # Tokens, length and reward set, the status never: it stays PENDING, which vime only
        # warns about (VIM111) and trains as not truncated: a warning ...
        Invalid(_HEAD + _SIG + """\
    groups = data_source.get_samples(2)
    for g in groups:
        for s in g:
            s.tokens = [1, 2]
            s.response_length = 1
            s.reward = 1.0
    return RolloutFnTrainOutput(samples=groups)
""", line=10, col=11, severity="warning"),
        # ... and with the reward missing too, an error (a None reward fails conversion).
        Invalid(_HEAD + _SIG + """\
    groups = data_source.get_samples(2)
    for g in groups:
        for s in g:
            s.tokens = [1, 2]
            s.response_length = 1
    return RolloutFnTrainOutput(samples=groups)
""", line=9, col=11, severity="error"),
        # A custom generate function that stores only the text: no tokens, length or status.
        Invalid("""
            async def generate(args, sample, sampling_params):
                out = await post(URL, {'text': sample.prompt})
                sample.response = out['text']
                return sample
        """, line=4, col=11),
        # ... tokens without meta_info: the status stays PENDING (a warning).
        Invalid("""
            async def my_generate(args, smp, sampling_params):
                out = await post(URL, {'input_ids': smp.tokens})
                smp.append_response_tokens(args, tokens=out['token_ids'], log_probs=out['logprobs'])
                return smp
        """, line=4, col=11, severity="warning", options={"hooks": {"my_generate": _GENERATE}}),
        # An empty list: no sample, and the generate boundary fails the call (VIM140).
        Invalid("""
            from .steps import to_step_samples
            async def generate(args, sample, sampling_params):
                if sample.label is None:
                    return []
                return to_step_samples(await play(args, sampling_params))
        """, line=4, col=15),
        # ... a copy of the sample is still the sample: its fields are checked.
        Invalid("""
            import copy
            async def generate(args, sample, sampling_params):
                out = copy.deepcopy(sample)
                out.response = 'x'
                return out
        """, line=5, col=11),
        # ... a fan-out of new samples built from keywords without tokens or a length.
        Invalid("""
            from vime.rollout.base_types import RolloutFnTrainOutput
            from vime.utils.types import Sample
            async def generate(args, sample, sampling_params):
                kids = [Sample(prompt=sample.prompt, response=t, status=Sample.Status.COMPLETED)
                        for t in (await post(URL, {}))['texts']]
                return kids
        """, line=6, col=11),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        binding = self.hook_of(node)
        if binding is not None and binding.spec.dest == _GENERATE:
            self._generate(node, binding)
        if binding is None or binding.spec.dest not in ROLLOUT_DESTS:
            return
        sem = self.context.semantic
        returns = [r for r in sem.facts(node).returns if r.side != "eval" and r.value is not None
                   and any(k == TRAIN_OUT for k, _ in sem.returned_kinds(node, r.value, self.owner))]
        if not returns:
            return
        # What only the `if evaluation:` branch sets never reaches the train output.
        found = fields_set(sem, sem.closure(node, self.owner, side="train"), self.owner,
                           side="train")
        missing = [f for f in REQUIRED_FIELDS if f not in found.fields]
        if not found.sources or found.opaque or not missing or not (
                found.constructed or found.fields):
            return  # untouched samples from a data source may come back complete
        names = ", ".join(f"`{f}`" for f in missing)
        value = returns[0].value
        assert value is not None
        eval_only = [f for f in missing if f in fields_set(
            sem, sem.closure(node, self.owner, side="eval"), self.owner, side="eval").fields]
        only = ", ".join(f"`{f}`" for f in eval_only)
        self.report(value, self.INVARIANT.render(
            name=binding.function,
            problem=f"samples reach {TRAIN_OUT} here without {names} ever being set"
            + (" on the train path (evaluation=False)" if eval_only else "") + ": no "
            "attribute store, no `Sample(...)` keyword and no call that sets "
            f"{'them' if len(missing) > 1 else 'it'} (vime's generate / generate_and_rm, "
            "rm_hub, append_response_tokens, a helper of this module given the sample)"
            + (f"; {only} {'is' if len(eval_only) == 1 else 'are'} set only under "
               "`if evaluation:`, which never reaches the train output" if eval_only else "")
            + (f": {_PENDING_NOTE}" if _severity(missing) == "warning" else ""),
            hook="rollout function"), severity=_severity(missing),
            fix_hint=("set the field on the train path too (outside `if evaluation:`, or in "
                      "its else branch)" if eval_only else _set_fields_fix(missing)))

    def _made_elsewhere(self, value: cst.BaseExpression, fn: cst.FunctionDef,
                        depth: int = 0) -> bool:
        """Whether ``value`` is what a function imported from another (non-vime, non-stdlib)
        module returns, directly, awaited, or through a local name holding only such values."""
        if isinstance(value, cst.Await):
            value = value.expression
        sem = self.context.semantic
        if isinstance(value, cst.Call):
            qualified = sem.qualified(value.func)
            if not qualified or sem.callee(value, fn, self.owner) is not None:
                return False
            return all(not q.startswith(("vime.", "builtins."))
                       and q.lstrip(".").split(".")[0] not in sys.stdlib_module_names
                       for q in qualified)
        if isinstance(value, cst.Name) and depth < 4:
            values = sem.facts(fn).values.get(value.value, [])
            return bool(values) and all(v is not None and self._made_elsewhere(v, fn, depth + 1)
                                        for v in values)
        return False

    def _generate(self, node: cst.FunctionDef, binding: HookBinding) -> None:
        """A custom generate function returns its sample with the generated fields set."""
        sem = self.context.semantic
        returns = [r for r in sem.facts(node).returns if r.value is not None
                   and not (isinstance(r.value, cst.Name) and r.value.value == "None")]
        for r in returns:
            if isinstance(r.value, cst.List) and not r.value.elements:
                self.report(r.value, self.INVARIANT.render(
                    hook="custom generate function", name=binding.function,
                    problem="returns an empty list, which holds no sample: vime takes the "
                    "sample or a non-empty list of samples from a generate function and fails "
                    "the call at the generate boundary (VIM140)"),
                    fix_hint=("return the sample you were given (sample.status = "
                              "Sample.Status.ABORTED when there is nothing to generate), or "
                              "raise"))
        # Samples made by a function the module does not show (an imported helper that builds
        # them from an environment's trajectory) may come back complete: not followed.
        returns = [r for r in returns if r.value is not None
                   and not (isinstance(r.value, cst.List) and not r.value.elements)
                   and not self._made_elsewhere(r.value, node)]
        if not returns:
            return
        positional = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if self.owner is not None and positional and positional[0] in ("self", "cls"):
            positional = positional[1:]
        at = binding.spec.params.index("sample")
        sample = frozenset(positional[at:at + 1])
        found = fields_set(sem, sem.closure(node, self.owner), self.owner, sample)
        missing = [f for f in GENERATED_FIELDS if f not in found.fields]
        if found.opaque or not missing:
            return
        names = ", ".join(f"`{f}`" for f in missing)
        value = returns[0].value
        assert value is not None
        self.report(value, self.INVARIANT.render(
            hook="custom generate function", name=binding.function,
            problem=f"returns its sample without {names} ever being set: no attribute store, "
            "no `Sample(...)` keyword and no call that sets "
            f"{'them' if len(missing) > 1 else 'it'} (vime's generate, "
            "append_response_tokens, update_from_meta_info, a helper of this module given "
            "the sample)" + (f": {_PENDING_NOTE}" if _severity(missing) == "warning" else "")),
            severity=_severity(missing),
            fix_hint=("set sample.tokens / sample.response_length (append_response_tokens "
                      "does both) and sample.status from the finish reason, or call vime's "
                      "generate, which sets them"))
