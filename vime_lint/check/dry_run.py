"""The ``vime-lint check`` stages: load the hooks, run them once, check every result.

Each hook result goes through the same check as in training (``boundary_problems`` of
``vime.contract.checks.boundaries.HOOK_BOUNDARIES``), and the report marks that boundary's
invariant ids as exercised. Every hook call is built from the contract's ``HookSpec``
(``HOOKS[hook].params``, ``vime_lint.check.calls.call_by_contract``): the generate step's
(``--custom-generate-function-path``, and the agent's and vime's built-in generate standing in
for it), the reward's (``hook_spec("custom_rm_path", group_rm=...)``), the rollout function's,
the data source's, and the B4 hooks', whose check values come from the same table
(``HookBoundary.inputs``, :meth:`DryRun._call_checked`).
The train and eval outputs go through ``collect_rollout_output`` (B5, B6). Generation the user's
code asks of vime (``--custom-generate-function-path`` unset) is served by a deterministic
built-in generator (:mod:`vime_lint.check.synthetic`).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import warnings
from typing import Any

from vime.contract.checks.boundaries import (
    HOOK_BOUNDARIES,
    boundary_problems,
    observed_boundaries,
)
from vime.contract.checks.failures import is_failed
from vime.contract.checks.field_reports import record_tokenizer_facts
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import ContractError, ContractWarning, Violation
from vime.contract.hooks import BUILTIN_GENERATE_PATH, HOOKS, hook_spec
from vime.contract.invariants import INVARIANTS
from vime.rollout.budget_refusals import BudgetRefusal, EngineCall, engine_calls
from vime.rollout.budget_refusals import recording as budget_recording
from vime_lint.check.arguments import DRY_RUN_DEFAULTS
from vime_lint.check.calls import (
    EngineFailure,
    HarnessError,
    StageFindings,
    call_by_contract,
    contract_findings,
    hook_label,
    in_context,
    warning_findings,
)
from vime_lint.check.code_watch import watching
from vime_lint.check.engine import STAND_IN_REPLIES
from vime_lint.check.finding_owners import owners
from vime_lint.check.hook_loading import load_hooks, located
from vime_lint.check.probe_run import ProbeOutcome
from vime_lint.check.probe_stage import (
    constant_reward_in_the_dry_run,
    constants_from_scripted_answers,
    constants_from_stand_in,
    probe_filter,
    probe_reward,
)
from vime_lint.check.report import Report
from vime_lint.check.synthetic import DRY_RUN_GENERATE, SyntheticDataSource, dry_run_generate

__all__ = ["DryRun"]


#: The generate step of ``--agent-function-path`` (vime.agent.generate.AGENT_GENERATE_PATH,
#: not imported here: vime.agent loads only when an agent is checked).
_AGENT_GENERATE = "vime.agent.generate.generate"


#: What each stage method checks, for the report's notes.
_STAGES = {"run_hooks": "hook stage (generate, reward, filters)",
           "train_stage": "train step", "eval_stage": "eval step"}


#: What each hook that a check's boundary calls is, for a "not run (no ...)" reason.
_HOOK_NOUNS = {"custom_generate_function_path": "custom generate",
               "agent_function_path": "agent", "custom_rm_path": "custom reward",
               "dynamic_sampling_filter_path": "filter", "buffer_filter_path": "filter",
               "rollout_sample_hook_path": "sample hook",
               "custom_reward_post_process_path": "reward post-process",
               "custom_convert_samples_to_train_data_path": "convert hook"}

#: The stage whose step checks each boundary (a stage that stopped leaves them not run).
_BOUNDARY_STAGES = {"B1": "train_stage", "B5": "train_stage", "B6": "eval_stage",
                    "B2": "run_hooks", "B3": "run_hooks", "B4": "run_hooks"}


def _ids(*boundaries: str) -> list[str]:
    """Runtime/load invariant ids checked at any of ``boundaries``."""
    return [i for i, inv in INVARIANTS.items() if set(inv.boundaries) & set(boundaries)]


class DryRun:
    """One ``vime-lint check`` run: ``ns`` the parsed command line, ``args`` what the user's
    hooks see (vime's defaults overlaid with the command line)."""

    def __init__(self, ns: argparse.Namespace, args: argparse.Namespace) -> None:
        self.ns = ns
        self.args = args
        # the tokenizer's BOS/EOS facts on args, as the rollout manager puts them in training
        # (VIM170, VIM176, VIM177 read them)
        record_tokenizer_facts(self.args)
        self.settings = CheckSettings.from_args(self.args)
        self.report = Report()
        self.hooks: dict[str, Any] = {}
        #: ``(hook dest, dotted path)`` -> ``FILE:LINE`` of the hook's ``def`` (findings that
        #: concern the hook lead with it, :meth:`_located`).
        self.sources: dict[tuple[str, str], str] = {}
        #: What serves vime's built-in generate (vime_lint.check.engine), "" for none.
        self.engine_note = ""
        #: The reward probes' outcome (None: not run).
        self.reward_probe: ProbeOutcome | None = None
        #: The agent compiled or ran the stand-in's scripted answers as programs.
        self.ran_scripted_answers = False
        #: The stages that stopped where a hook raised or the engine failed (_STAGES keys).
        self.stopped: set[str] = set()

    def _check(self, name: str, dest: str, path: str, *values: Any,
               **options: Any) -> list[Violation]:
        """Boundary ``name`` on ``values``; the findings are recorded in the report."""
        ctx = CheckContext.for_hook(dest, path, 0)
        found = boundary_problems(name, *values, settings=self.settings, ctx=ctx, **options)
        self.report.add(in_context(found, dest, path), HOOK_BOUNDARIES[name].ids)
        return found

    def _hooks_of(self, name: str) -> list[tuple[str, Any]]:
        """The loaded ``(path, fn)`` of boundary ``name``'s hook (several for a hook that is
        given more than once), ``[]`` when it is not configured."""
        hook = self.hooks.get(HOOK_BOUNDARIES[name].hook)
        return [] if hook is None else hook if isinstance(hook, list) else [hook]

    def _call_checked(self, name: str, path: str, fn: Any, **inputs: Any) -> list[Violation]:
        """Call the hook of boundary ``name`` as the runtime does; check its result there.

        The call comes from the contract: ``HOOKS[hook].params`` in order (``args`` is the dry
        run's, each other one the value of that name in ``inputs``), plus those of the hook's
        optional keywords in ``inputs`` that it accepts (``call_by_contract``); the check's
        values are the result and the inputs that ``HOOK_BOUNDARIES[name].inputs`` names.

        Raises:
            StageFindings, HarnessError: the hook raised (see ``call_hook``).
        """
        bound = HOOK_BOUNDARIES[name]
        assert bound.inputs is not None, f"{name}: no inputs recorded in HOOK_BOUNDARIES"
        result = call_by_contract(hook_label(bound.hook, path), HOOKS[bound.hook], fn,
                                  self.args, **inputs)
        return self._check(name, bound.hook, path, result, *(inputs[k] for k in bound.inputs))

    # -- B2-B4: the hooks the default rollout calls --

    def _sampling_params(self) -> dict[str, Any]:
        a = self.args
        return {"temperature": a.rollout_temperature, "top_p": a.rollout_top_p,
                "top_k": a.rollout_top_k, "max_tokens": a.rollout_max_response_len,
                "skip_special_tokens": True, "logprobs": 1}

    def _generate_group(self, source: SyntheticDataSource) -> list[Any]:
        """One group generated by the user's generate function (checked, B2) or ours."""
        dest = "custom_generate_function_path"
        group = source.get_samples(1)[0]
        hook = self.hooks.get(dest)
        if hook is None and "agent_function_path" in self.hooks:
            # --agent-function-path: the default rollout's generate step runs the agent against
            # vime's endpoint, which the engine (stand-in or vllm) answers, as in training
            from vime.agent.generate import AGENT_GENERATE_PATH
            from vime.agent.generate import generate as agent_generate

            hook = (AGENT_GENERATE_PATH, agent_generate)
        elif hook is None and self.engine_note:
            # an engine was asked for (--dry-run-engine vllm): vime's built-in generate uses it,
            # as in training, with the model's tokenizer and chat template
            from vime.rollout.vllm_rollout import generate

            hook = (BUILTIN_GENERATE_PATH, generate)
        from vime.utils.async_utils import run

        out: list[Any] = []
        for sample in group:
            if hook is None:
                run(dry_run_generate(self.args, sample, self._sampling_params()))
                out.append(sample)
                continue
            path, fn = hook
            status, rl = sample.status, sample.response_length
            if path == _AGENT_GENERATE:
                label = hook_label("agent_function_path", self.hooks["agent_function_path"][0])
            elif dest not in self.hooks:   # not the user's: the default rollout's generate step
                label = f"vime's built-in generate `{path}`"
            else:
                label = hook_label(dest, path)
            # an agent that runs the stand-in's scripted answers as programs (a code tool):
            # they are no programs, so its rewards on them say nothing (VIM117 not judged)
            scripted = STAND_IN_REPLIES if path == _AGENT_GENERATE \
                and "stand-in" in self.engine_note else ()
            try:
                # the agent's generate step and vime's built-in one stand in for this hook:
                # each is called as the contract calls --custom-generate-function-path
                with watching(scripted, exact=True) as ran:
                    result = call_by_contract(label, HOOKS[dest], fn, self.args, sample=sample,
                                              sampling_params=self._sampling_params(),
                                              evaluation=False)
                self.ran_scripted_answers |= ran.ran
            except EngineFailure:   # not the hook's failure: never a FAILED sample
                raise
            except HarnessError as exc:
                if not self._fail_sample(sample, "generate", exc, path=label):
                    raise
                out.append(sample)
                continue
            if path != _AGENT_GENERATE:  # the agent's own result: VIM185-187, inside it
                self._check("generate_result", dest, path, status, result,
                            in_response_length=rl)
            if isinstance(result, list) and result:
                out.append(result)
            else:
                out.append(result if result is not None else sample)
        return out

    def run_hooks(self) -> None:
        """B2-B4: generate, sample hooks, reward, dynamic filter, buffer filter."""
        source = SyntheticDataSource(self.args)
        data = (f"the prompts of --prompt-data {self.args.prompt_data}"
                if getattr(self.args, "prompt_data", None) else "synthetic arithmetic prompts")
        self.report.notes.append(f"dry run: user hooks ran on the CPU on {data} (an in-memory "
                                 "data source); " + (self.engine_note or "no engine was contacted"))
        if "custom_generate_function_path" not in self.hooks and not self.engine_note:
            self.report.notes.append("the hook stage's samples (what the reward, sample "
                                     "hooks and filters are called on) are generated by the "
                                     f"built-in deterministic generator ({DRY_RUN_GENERATE}), "
                                     "whether or not the rollout function generates")
        group = self._generate_group(source)
        leaves = [x for item in group for x in (item if isinstance(item, list) else [item])]
        samples = [x for x in leaves if hasattr(x, "reward")]
        for path, fn in self._hooks_of("sample_hook_result"):
            for sample in samples[:1]:
                self._call_checked("sample_hook_result", path, fn, sample=sample, rollout_id=0,
                                   evaluation=False)
        self._reward(samples)
        self._dynamic_filter(samples)
        self._buffer_filter(source)

    def _reward(self, samples: list[Any]) -> None:
        dest = "custom_rm_path"
        hook = self.hooks.get(dest)
        if hook is None:
            for s in samples:
                if s.reward is None:
                    s.reward = 1.0 if s.response == (s.label or "ok") else 0.0
            return
        path, fn = hook
        label = hook_label(dest, path)
        # the call's parameters from the contract: (args, sample), or (args, samples) under
        # --group-rm (vime.contract.hooks.GROUP_RM_SPEC)
        spec = hook_spec(dest, group_rm=bool(self.ns.group_rm))
        if self.ns.group_rm:
            result = call_by_contract(label, spec, fn, self.args, samples=samples)
            found = self._check("batch_reward_result", dest, path, result, samples)
            values = list(result) if not found and isinstance(result, (list, tuple)) else []
        else:
            values = []
            for s in samples:
                try:
                    value = call_by_contract(label, spec, fn, self.args, sample=s)
                except HarnessError as exc:
                    if not self._fail_sample(s, "reward", exc, path=label):
                        raise
                    value = None
                if value is None and self._fail_sample(s, "reward", None):
                    values.append(None)
                    continue
                self._check("reward_result", dest, path, value, index=s.index)
                values.append(value)
        if len(values) == len(samples):
            for s, v in zip(samples, values, strict=True):
                if not is_failed(s):
                    s.reward = v

    def _fail_sample(self, sample: Any, hook: str, exc: HarnessError | None, *,
                     path: str | None = None) -> bool:
        """The runtime's ``--hook-failure`` decision (``vime.rollout.failures``) on a hook call
        that raised (``exc``) or a reward of None (``exc`` None): True when ``sample`` was
        marked FAILED as the runtime marks it (counted in the report), False under ``raise``."""
        from vime.rollout.failures import settle_failed_call, settle_unscored

        was_failed = is_failed(sample)
        if exc is None:
            failed = settle_unscored(self.args, sample, 0.0,
                                     message="the reward function returned None")
        else:
            failed = settle_failed_call(self.args, [sample], hook, exc.__cause__ or exc, 0.0,
                                        path=path) is None
        if failed and not was_failed:
            self.report.add_failures([sample])
        return failed

    def _dynamic_filter(self, samples: list[Any]) -> None:
        dest = "dynamic_sampling_filter_path"
        for path, fn in self._hooks_of("dynamic_filter_result"):
            found = self._check("group_rewards", dest, path, samples)
            if any(v.severity == "error" for v in found):
                self.report.notes.append(f"{hook_label(dest, path)} was not called: the group's "
                                         "rewards are invalid (VIM110)")
                return
            self._call_checked("dynamic_filter_result", path, fn, samples=samples)

    def _buffer_filter(self, source: SyntheticDataSource) -> None:
        for path, fn in self._hooks_of("buffer_filter_result"):
            self._call_checked("buffer_filter_result", path, fn, rollout_id=None,
                               buffer=source.get_samples(2), num_samples=1)

    # -- B1/B5/B6: the rollout function --

    def _data_source(self) -> Any:
        """The user's ``--data-source-path`` class instantiated with ``args``, else ours."""
        hook = self.hooks.get("data_source_path")
        if hook is None:
            return SyntheticDataSource(self.args)
        path, cls = hook
        return call_by_contract(hook_label("data_source_path", path), HOOKS["data_source_path"],
                                cls, self.args)

    def _rollout(self, evaluation: bool) -> Any:
        from vime.rollout.base_types import call_rollout_fn, check_vim101

        dest = "eval_function_path" if evaluation and "eval_function_path" in self.hooks \
            else "rollout_function_path"
        hook = self.hooks.get(dest)
        if hook is None:
            return None
        path, fn = hook
        source = self._data_source()
        raw = call_by_contract(hook_label(dest, path), HOOKS[dest], fn, self.args, rollout_id=0,
                               data_source=source, evaluation=evaluation)
        ids = ["VIM101", *_ids("B6" if evaluation else "B5"), "VIM119"]
        # a legacy bare list/dict: VIM101's warning (call_rollout_fn wraps it)
        found: list[Violation] = [v for v in check_vim101(raw, evaluation=evaluation, name=path,
                                                          where="output")
                                  if v.severity == "warning"]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                out = call_rollout_fn(functools.wraps(fn)(lambda *a, **k: raw), self.args, 0,
                                      source, evaluation=evaluation)
        except ContractError as exc:   # raised inside the rollout: by a hook it called too
            self.report.add([], ids)
            for (owner_dest, owner_path), some in owners(contract_findings(exc), dest, path,
                                                         self.hooks).items():
                self.report.add(in_context(some, owner_dest, owner_path), ids)
            return None
        found += collect_rollout_output(out, self.settings, evaluation=evaluation, name=path)
        if evaluation and getattr(self.args, "eval_datasets", None):
            # VIM131: not the training prompts (checked when eval sets are given: without
            # them the dry run's eval step has nothing held out to compare with)
            from vime.contract.checks.evaluation import check_vim131, eval_prompt_keys, prompt_key

            get = getattr(source, "training_prompts", None)
            keys = frozenset(map(prompt_key, (get() if callable(get) else None) or []))
            found += check_vim131(getattr(out, "data", None), keys, eval_prompt_keys(source))
        ids = self._eval_ids(out, ids, found) if evaluation else self._train_ids(out, ids)
        self.report.add([], ids)     # checked, with or without findings
        for (owner_dest, owner_path), some in owners(found, dest, path, self.hooks).items():
            self.report.add(in_context(some, owner_dest, owner_path), ids)
        self._save_samples(out, evaluation)
        return out

    def _train_ids(self, out: Any, ids: list[str]) -> list[str]:
        """``ids`` less the per-sample train checks when the train step returned no sample
        (VIM102 reports the empty list): shown as "not run (no train samples)", not "pass"."""
        from vime.rollout.base_types import iter_samples

        samples = getattr(out, "samples", None)
        if not isinstance(samples, list) or any(True for _ in iter_samples(samples)):
            return ids
        kept = ("VIM101", "VIM102", "VIM119")   # the output's type, shape and metrics
        for inv_id in ids:
            if inv_id not in kept:
                self.report.not_run.setdefault(inv_id, "no train samples")
        return [i for i in ids if i in kept]

    def _eval_ids(self, out: Any, ids: list[str], found: list[Violation]) -> list[str]:
        """``ids`` less the eval checks (B6) that had nothing to check: all of them when the
        eval step returned no sample, VIM131 when no eval sets were given (its reference);
        the report shows those as "not run" with the reason and a note names the flags. An id
        with a finding in ``found`` ran (an eval output of the wrong shape holds no sample
        but fails VIM130): it is neither "not run" nor in the note."""
        data = getattr(out, "data", None)
        n = sum(len(entry.get("samples") or []) for entry in data.values()
                if isinstance(entry, dict)) if isinstance(data, dict) else 0
        configured = bool(getattr(self.args, "eval_datasets", None))
        skip = set(_ids("B6")) if n == 0 else set() if configured else {"VIM131"}
        failed = {v.id for v in found}
        skip -= failed
        if not skip:
            return ids
        reason = "no eval datasets" if not configured else "no eval samples"
        for inv_id in sorted(skip):
            self.report.not_run[inv_id] = reason
        flags = ("--eval-datasets NAME gives the dry run a synthetic held-out set, "
                 "--eval-prompt-data NAME FILE your own")
        what = ("the eval step returned no sample" if n == 0 and "VIM130" not in failed
                else "the eval output has no held-out set to compare with the training prompts")
        why = ("no eval datasets configured" if not configured
               else "the eval output's datasets hold no samples" if "VIM130" not in failed
               else "no eval sample could be read from the eval output (VIM130 above)")
        self.report.notes.append(f"{', '.join(sorted(skip))} not run: {why}, so {what}"
                                 + (f" ({flags})" if not configured else ""))
        return [i for i in ids if i not in skip]

    def _save_samples(self, out: Any, evaluation: bool) -> None:
        """``--save-debug-rollout-data``: the step's samples written as ``vime train`` writes
        them (train step ``0``, eval step ``eval_0``); the report says where."""
        template = getattr(self.ns, "save_debug_rollout_data", None)
        if not template:
            return
        import time

        from vime.rollout.base_types import iter_samples
        from vime.rollout.debug_data import save_debug_rollout_data

        run_dir = str(getattr(self.args, "run_dir", None) or "runs/{time}")
        template = template.replace("{run_dir}", run_dir.replace(
            "{time}", time.strftime("%Y%m%d-%H%M%S")))
        if evaluation:
            flat = [s for entry in out.data.values() if isinstance(entry, dict)
                    for s in entry.get("samples", [])]
            rid: int | str = "eval_0"
        else:
            flat, rid = list(iter_samples(out.samples)), 0
        try:
            path = save_debug_rollout_data(template, rid, flat)
        except OSError as exc:  # a bad argument (status 2), not an error in user code
            raise OSError(f"--save-debug-rollout-data {template!r}: cannot write "
                          f"({exc})") from exc
        self.report.notes.append(f"--save-debug-rollout-data: wrote the {len(flat)} samples of "
                                 f"the dry run's {'eval' if evaluation else 'train'} step to "
                                 f"{path} (--load-debug-rollout-data replays it)")

    def eval_stage(self) -> None:
        """B1/B6: one eval step."""
        self._rollout(evaluation=True)

    def train_stage(self) -> None:
        """B1/B5 train step, then B4 reward post-process and convert on its samples."""
        out = self._rollout(evaluation=False)
        if out is None:
            return
        from vime.rollout.base_types import iter_samples

        flat = list(iter_samples(out.samples))
        self.report.add_failures(flat)
        for name in ("reward_post_process_result", "convert_result"):
            for path, fn in self._hooks_of(name) if flat else []:
                self._call_checked(name, path, fn, samples=flat)

    def _stage(self, stage: Any) -> None:
        try:
            stage()
        except (StageFindings, EngineFailure, HarnessError):
            self.stopped.add(stage.__name__)
            raise

    def _run_stage(self, stage: Any) -> None:
        try:
            self._stage(stage)
        except StageFindings as exc:
            found = exc.violations
            for dest, path in self.sources:   # the hook that raised: its context and def
                if hook_label(dest, path) == exc.label:
                    found = [w for (d, p), some in owners(found, dest, path, self.hooks).items()
                             for w in in_context(some, d, p)]
                    break
            self.report.add(found, [v.id for v in found])
            self.report.notes.append(f"{exc.label} raised a ContractError; the rest of that "
                                     "stage was skipped")
        except EngineFailure as exc:  # the engine failed, not the user's code (status 1)
            if str(exc) not in self.report.engine_failures:
                self.report.engine_failures.append(str(exc))
            self.report.notes.append(f"the {_STAGES[stage.__name__]} stopped where the engine "
                                     "failed; the stages after it still ran")
        except HarnessError as exc:  # user code raised: an error in it (status 1)
            message = self._crash_message(exc)
            if message not in self.report.crashes:
                self.report.crashes.append(message)
            self.report.notes.append(f"the {_STAGES[stage.__name__]} stopped where user code "
                                     "raised; the stages after it still ran")

    def _budget_notes(self, refused: list[BudgetRefusal]) -> None:
        """A note per kind of generate call that was never sent for lack of budget (vime's
        generate, the agent endpoint): those turns did not run, so no check saw them."""
        for where in ("generate", "agent"):
            mine = [r for r in refused if r.where == where]
            if not mine:
                continue
            first = mine[0]
            samples = len({r.index for r in mine})
            if where == "agent":
                label = hook_label("agent_function_path", self.hooks["agent_function_path"][0]) \
                    if "agent_function_path" in self.hooks else "the agent"
                what = (f"{label}: the endpoint refused {len(mine)} call(s) on {samples} "
                        "sample(s) for lack of response budget (answered finish_reason="
                        "'length' with no text, no engine call): the agent's later turns never "
                        "ran")
                split = "the agent's messages and tool results"
            else:
                dest = "custom_generate_function_path"
                label = hook_label(dest, self.hooks[dest][0]) if dest in self.hooks \
                    else "vime's built-in generate"
                what = (f"{label}: {len(mine)} generate call(s) on {samples} sample(s) were "
                        "never sent for lack of response budget (the sample came back "
                        "TRUNCATED): the turns they would have run were not exercised")
                split = "appended by the generate function"
            if first.flag == "--rollout-max-context-len":
                had = f"filled {first.flag}={first.budget} (prompt and response)"
            else:
                default = " (the check's default)" if first.budget == \
                    DRY_RUN_DEFAULTS["rollout_max_response_len"] else ""
                rest = first.used - first.generated
                had = (f"already held {first.used} response tokens ({first.generated} "
                       f"from the engine's turn(s) before" + (f", {rest} {split}" if rest > 0
                                                              else "")
                       + f") against {first.flag}={first.budget}{default}")
            self.report.notes.append(f"{what}; sample index={first.index} {had}; pass your "
                                     f"launch's {first.flag} (or a larger one) to run them")
            self.report.unexercised.append("turns refused for lack of budget did not run")

    def _first_call_note(self, calls: list[EngineCall], refused: list[BudgetRefusal]) -> None:
        """A note when the custom generate's first engine call used the whole response budget
        on every sample (finish reason length, TRUNCATED): a later turn had no room, whether
        vime refused it (:meth:`_budget_notes`) or the generate's own budget check skipped it,
        so the dry run never ran one; the verdict then says "clean as far as it ran"."""
        dest = "custom_generate_function_path"
        firsts = [c for c in calls if c.before == 0]
        if dest not in self.hooks or not firsts or not all(c.filled for c in firsts) \
                or any(r.where == "generate" for r in refused):   # that note says it
            return
        first = firsts[0]
        flag = first.flag
        budget = f"{flag}={first.budget}"
        if flag == "--rollout-max-response-len" and \
                "rollout_max_response_len" in getattr(self.ns, "dry_run_defaulted", ()):
            budget += " (the check's default: your launch did not pass one)"
        self.report.notes.append(
            f"{hook_label(dest, self.hooks[dest][0])}: its first engine call used the whole "
            f"response budget on every sample ({len(firsts)} call(s), finish reason length: "
            f"TRUNCATED at {budget}), so no later turn had room: the turns after the first "
            f"were not exercised; pass your launch's {flag} (or a larger one) to run them")
        self.report.unexercised.append("turns after a first call that filled the budget did "
                                       "not run")

    def _not_run_reasons(self) -> None:
        """The reason of each runtime check that neither ran nor has one yet (``not run
        (REASON)``): its hooks are not configured, its stage stopped, it is the trainer's."""
        report = self.report
        have = {v.id for v in report.findings} | report.checked | report.unjudged
        for inv_id, inv in INVARIANTS.items():
            if inv.scope in ("static", "template") or inv_id in have or inv_id in report.not_run:
                continue
            dests = [b.hook for b in HOOK_BOUNDARIES.values() if inv_id in b.ids and b.hook]
            stages = {_BOUNDARY_STAGES.get(b) for b in inv.boundaries}
            missing = bool(dests) and not any(d in self.hooks for d in dests)
            if inv.scope == "probe":
                reason = "not probed"
            elif "B7" in inv.boundaries:
                reason = "trainer hooks: vime train only"
            elif inv_id == "VIM128":
                reason = "seen only where code raises"
            elif inv_id == "VIM194" and getattr(self.args, "check_token_boundaries", 1) == 0:
                reason = "--check-token-boundaries 0"
            elif stopped := stages & self.stopped - ({"run_hooks"} if missing else set()):
                # a stage that stopped (not the hook stage for a hook that is not configured)
                stage = next(s for s in _STAGES if s in stopped)
                reason = f"the {_STAGES[stage].split(' (')[0]} stopped"
            elif missing:
                nouns = list(dict.fromkeys(_HOOK_NOUNS.get(d, d) for d in dests))
                reason = "no " + (nouns[0] if len(nouns) == 1
                                  else f"{', '.join(nouns[:-1])} or {nouns[-1]}")
            elif inv_id == "VIM194":    # compared in the rollout, on multi-turn samples only
                reason = ("the train step stopped" if "train_stage" in self.stopped
                          else "no multi-turn sample compared")
            else:
                reason = "not reached"
            report.not_run[inv_id] = reason

    def _crash_message(self, exc: HarnessError) -> str:
        """``exc``'s message, naming the user's hook whose file it came from when the hook
        called was vime's (the default rollout running an agent that raised): the same crash
        seen by the hook stage and the train step is then reported once."""
        if exc.origin is None or exc.detail is None:
            return str(exc)
        import os

        origin, line = os.path.realpath(exc.origin[0]), exc.origin[1]
        best: tuple[int, str] | None = None
        for (dest, path), where in self.sources.items():
            file, _, def_line = where.rpartition(":")
            if os.path.realpath(file) != origin or not def_line.isdigit():
                continue
            if hook_label(dest, path) == exc.label:   # the hook called is in that file
                return str(exc)
            rank = int(def_line) if int(def_line) <= line else -1
            if best is None or rank > best[0]:
                best = (rank, hook_label(dest, path))
        if best is None or best[1] == exc.label:
            return str(exc)
        return f"{best[1]} {exc.detail}"

    def _add_observed(self, seen: list[tuple[str, list[Violation]]]) -> set[str]:
        """The boundaries vime's own code checked while the stages ran (the default rollout's
        generate, reward and agent calls, with ``--contract-check warn``): their ids count as
        exercised, their findings are reported once (a finding also raised as a
        ``ContractError`` is not repeated). Returns their text as the runtime warned it."""
        have = {(v.id, v.where, v.message) for v in self.report.findings}
        texts: set[str] = set()
        for name, found in seen:
            texts.update(v.format() for v in found)
            new = [v for v in found if (v.id, v.where, v.message) not in have]
            have.update((v.id, v.where, v.message) for v in new)
            self.report.add([dataclasses.replace(v, context=f"{v.context} (vime-lint check dry "
                                                 "run)") for v in new], HOOK_BOUNDARIES[name].ids)
        return texts

    def run(self) -> Report:
        """Load, run every stage, return the report.

        A hook that raises while it runs is recorded in ``report.crashes`` (an error in the
        user's code, exit status 1); the later stages still run.

        Raises:
            HarnessError: a hook cannot be loaded.
            ValueError, OSError: ``--save-debug-rollout-data`` cannot be written (names it).
        """
        self.hooks, self.sources = load_hooks(self.ns, self.report)
        # vime's own checks inside the rollout log their findings too (--contract-check warn):
        # the report lists them once, so their log lines are held back while the stages run
        policy_log = logging.getLogger("vime.contract.checks")   # policy.enforce logs here
        level = policy_log.level
        policy_log.setLevel(logging.CRITICAL)
        try:
            with warnings.catch_warnings(record=True) as caught, \
                    observed_boundaries() as seen, budget_recording() as refused, \
                    engine_calls() as calls:
                warnings.simplefilter("always", ContractWarning)
                for stage in (self.run_hooks, self.train_stage, self.eval_stage):
                    self._run_stage(stage)
        finally:
            policy_log.setLevel(level)
        self._budget_notes(refused)
        self._first_call_note(calls, refused)
        shown = self._add_observed(seen) | {v.format() for v in self.report.findings}
        self.report.findings.extend(v for v in warning_findings(caught, "while running user code")
                                    if v.message.removeprefix("ContractWarning: ") not in shown)
        constants_from_stand_in(self.report, self.args, self.engine_note,
                                self.ran_scripted_answers,
                                refused=any(r.where == "agent" for r in refused))
        self.reward_probe = probe_reward(self.ns, self.args, self.report, self.hooks)
        constants_from_scripted_answers(self.report, self.reward_probe, self.args,
                                        self.engine_note, self.hooks)
        constant_reward_in_the_dry_run(self.report, self.args, self.engine_note, self.hooks)
        probe_filter(self.ns, self.args, self.report)
        self.report.findings = [located(v, self.sources) for v in self.report.findings]
        self._not_run_reasons()
        mode = getattr(self.ns, "contract_check", "raise")
        if mode != "raise":
            self.report.notes.append(f"--contract-check {mode} sets what vime train does with "
                                     "its run-time findings; vime-lint check runs every check "
                                     "regardless and reports each finding (errors exit 1)")
        if self.ns.rollout_external_engine_addrs and not self.engine_note:
            self.report.notes.append("--rollout-external-engine-addrs is passed through on args; "
                                     "without --custom-generate-function-path the dry run does "
                                     "not contact engines")
        return self.report
