"""What runs after the dry run's stages: the reward and filter probes, and the constant rewards (VIM117, VIM171) that scripted answers leave unjudged.

The stages' rewards score scripted answers (the engine stand-in's, or the built-in
generator's), not a model's: equal rewards there say nothing about the reward when the
answers cannot match the user's labels (:func:`constants_from_stand_in`) or when the reward
probes show the reward pays only for a format the scripted answers do not use
(:func:`constants_from_scripted_answers`).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from vime.contract.errors import ContractError
from vime.contract.hooks import HOOKS
from vime_lint.check.calls import HarnessError
from vime_lint.check.engine import STAND_IN_REPLIES
from vime_lint.check.probe_run import ANSWER_PROBES, ProbeOutcome
from vime_lint.check.report import Report

__all__ = ["constant_reward_in_the_dry_run", "constants_from_scripted_answers",
           "constants_from_stand_in", "probe_filter", "probe_reward"]


def constants_from_stand_in(report: Report, args: argparse.Namespace, engine_note: str,
                            ran_scripted_answers: bool, *, refused: bool = False) -> None:
    """Under the engine stand-in, the constant rewards of the stages: not judged when the
    stand-in's scripted answers cannot match the labels of ``--prompt-data`` or the agent ran
    them as programs (``ran_scripted_answers``), else a note that they can come from them.
    ``refused``: the agent endpoint refused calls for lack of budget, the likelier cause (the
    note says so, whatever the engine)."""
    constant = [v for v in report.findings if v.id in ("VIM117", "VIM171")]
    unjudged = "stand-in" in engine_note and bool(getattr(args, "prompt_data", None)
                                                  or ran_scripted_answers)
    if refused and constant and not unjudged:
        flag = "--rollout-max-response-len"
        report.notes.append(
            f"constant rewards (VIM117, VIM171) can come from the refused calls above: the "
            f"agent's turns after the budget was used up got no text, so its answers were cut "
            f"short; judge the reward again with your launch's {flag}")
        return
    if "stand-in" in engine_note and constant:
        replies = " / ".join(repr(r) for r in STAND_IN_REPLIES)
        if getattr(args, "prompt_data", None) or ran_scripted_answers:
            # the scripted answers cannot match the labels of the user's own rows, nor are
            # they programs for an agent that runs the answer as code, so equal rewards
            # say nothing about the reward (the reward probes judge it)
            dropped = {id(v) for v in constant}
            report.findings = [v for v in report.findings if id(v) not in dropped]
            report.unjudged.update(("VIM117", "VIM171"))
            against = ("against the labels of --prompt-data" if not ran_scripted_answers
                       else "and the agent ran them as programs, which they are not")
            report.notes.append(
                f"constant rewards (VIM117, VIM171) not judged: the rewards score the "
                f"stand-in's scripted answers ({replies}), not a model's, {against}; "
                "--hf-checkpoint MODEL runs a real engine")
        else:
            report.notes.append(
                f"the rewards above score the stand-in's scripted answers ({replies}), not "
                "a model's: constant rewards (VIM117, VIM171) can come from them; "
                "--hf-checkpoint MODEL runs a real engine")


def probe_reward(ns: argparse.Namespace, args: argparse.Namespace, report: Report,
                 hooks: dict[str, Any]) -> ProbeOutcome | None:
    """The reward probes (:mod:`vime_lint.check.probe_run`) when the launch has a reward
    and ``--no-probe`` is not given, on ``--prompt-data`` rows (else the synthetic prompts),
    at most 6 (about 170 reward calls); their outcome, None when not run."""
    from vime_lint.check.probes import FILTER_PROBES, PROBES

    reward_ids = [p.id for p in PROBES if p.id not in FILTER_PROBES]
    if not getattr(ns, "probe", True) or not (args.custom_rm_path or args.rm_type):
        why = "--no-probe" if not getattr(ns, "probe", True) else "no reward function to probe"
        report.not_run.update(dict.fromkeys(reward_ids, why))
        return None
    if args.rm_type == "random":
        report.notes.append("reward probes: --rm-type random is a control reward "
                            "(0 or 1 at random); not probed")
        report.not_run.update(dict.fromkeys(reward_ids, "--rm-type random"))
        return None
    from vime_lint.check.probe_run import run_probes
    from vime_lint.check.probes import ProbeRow
    from vime_lint.check.synthetic import load_prompts, synthetic_prompts

    prompts = (load_prompts(args.prompt_data, args.input_key, args.label_key,
                            args.metadata_key)
               if args.prompt_data and args.label_key else synthetic_prompts(8))
    rows = [ProbeRow(p if isinstance(p, str) else str(p), str(label),
                     meta if isinstance(meta, dict) else None)
            for p, label, meta in prompts[:6] if label is not None]
    extra = None
    if ns.probe_responses_path:
        from vime.utils.misc import load_function

        try:
            extra = load_function(ns.probe_responses_path)
        except ContractError as exc:
            raise HarnessError(f"--probe-responses-path: {exc}") from None

    # the user's own hooks (the dry run's stand-in generate is not one)
    own_rollout = (args.rollout_function_path != HOOKS["rollout_function_path"].default
                   or "custom_generate_function_path" in hooks
                   or "agent_function_path" in hooks)
    try:
        outcome = run_probes(args, rows, max_calls=ns.probe_max_calls, extra=extra,
                             metadata_from_hooks=own_rollout)
    except ContractError as exc:
        raise HarnessError(str(exc)) from None
    # an id counts as checked only when some prompt was judged (else it stays "not run")
    report.add(outcome.findings, [p.id for p in PROBES
                                  if outcome.judged and p.id not in FILTER_PROBES
                                  and (p.id != "VIM307" or args.group_rm)
                                  and not (outcome.code_reward
                                           and p.id in ANSWER_PROBES)])
    if not outcome.judged:
        report.not_run.update(dict.fromkeys(reward_ids, "no prompt judged: see the notes"))
    elif not args.group_rm:
        report.not_run["VIM307"] = "no --group-rm"
    if outcome.code_reward:
        report.unjudged.update(ANSWER_PROBES)
    report.notes.extend(outcome.notes)
    return outcome


def _scripted(args: argparse.Namespace, engine_note: str, hooks: dict[str, Any]) -> bool:
    """The rewards of the stages scored scripted bare answers: the engine stand-in's, or
    the built-in generator's (the label or "no idea"), not a model's or the user's own."""
    if "stand-in" in engine_note:
        return True
    return (not engine_note and "custom_generate_function_path" not in hooks
            and "agent_function_path" not in hooks
            and args.rollout_function_path == HOOKS["rollout_function_path"].default)


def constants_from_scripted_answers(report: Report, outcome: ProbeOutcome | None,
                                    args: argparse.Namespace, engine_note: str,
                                    hooks: dict[str, Any]) -> None:
    """VIM117/VIM171 (constant rewards) are not judged when the reward probes (``outcome``)
    show the reward ranks the label's answer above a wrong one and an empty one only when it
    is written in a format (``\\boxed{}``, ``####``, ...) that the dry run's scripted bare
    answers do not use: the constant rewards then come from the scripted answers, not
    from the reward."""
    constant = [v for v in report.findings if v.id in ("VIM117", "VIM171")]
    if not constant or outcome is None or not outcome.judged or \
            not _scripted(args, engine_note, hooks):
        return
    formats = outcome.gold_kinds - {"bare"}
    if not formats or "bare" in outcome.gold_kinds \
            or any(v.id in ("VIM300", "VIM301") for v in outcome.findings):
        return
    dropped = {id(v) for v in constant}
    report.findings = [v for v in report.findings if id(v) not in dropped]
    report.unjudged.update(v.id for v in constant)
    from vime_lint.check.probes import RENDERINGS, render

    shown = ", ".join(repr(render(k, "ANSWER")) if k in RENDERINGS else k
                      for k in sorted(formats))
    report.notes.append(
        f"constant rewards ({', '.join(sorted({v.id for v in constant}))}) not judged: the "
        f"reward probes found that the reward pays for the answer written as {shown}, and "
        "the dry run's scripted answers are bare (the label or \"no idea\"), so every "
        "reward of the stages is the same; --hf-checkpoint MODEL runs a real engine")


#: VIM117's fix in the dry run of the built-in generator, which answers the label on half the
#: samples: there one constant batch is not a hard batch of a run, it is the reward's doing.
DRY_RUN_CONSTANT_FIX = ("the dry run's responses are the label on half the samples and \"no "
                        "idea\" on the others, so a constant reward here comes from the "
                        "reward, not from hard prompts: check the reward function and the "
                        "labels")


def constant_reward_in_the_dry_run(report: Report, args: argparse.Namespace, engine_note: str,
                                   hooks: dict[str, Any]) -> None:
    """VIM117 still reported after the dry run of the built-in generator (the label or "no
    idea", not the engine stand-in's replies) gets :data:`DRY_RUN_CONSTANT_FIX`, not the run's
    fix (a constant batch now and then is expected on hard prompts)."""
    if "stand-in" in engine_note or not _scripted(args, engine_note, hooks):
        return
    report.findings = [dataclasses.replace(v, fix=DRY_RUN_CONSTANT_FIX) if v.id == "VIM117"
                       else v for v in report.findings]


def probe_filter(ns: argparse.Namespace, args: argparse.Namespace, report: Report) -> None:
    """The dynamic sampling filter's probes (VIM308, VIM309;
    :func:`vime_lint.check.probe_run.run_filter_probes`) when the launch has
    ``--dynamic-sampling-filter-path`` and ``--no-probe`` is not given."""
    from vime_lint.check.probes import FILTER_PROBES

    if not getattr(ns, "probe", True) or not args.dynamic_sampling_filter_path:
        report.not_run.update(dict.fromkeys(FILTER_PROBES, "--no-probe" if not getattr(
            ns, "probe", True) else "no dynamic filter to probe"))
        return
    from vime_lint.check.probe_run import run_filter_probes

    try:
        outcome = run_filter_probes(args)
    except ContractError as exc:
        raise HarnessError(str(exc)) from None
    report.add(outcome.findings, list(FILTER_PROBES) if outcome.judged else [])
    if not outcome.judged:
        report.not_run.update(dict.fromkeys(FILTER_PROBES, "nothing judged: see the notes"))
    report.notes.extend(outcome.notes)
