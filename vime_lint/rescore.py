"""``vime-lint rescore RUN_DIR``: score a finished run's dumped samples again with another reward.

Usage::

    vime-lint rescore runs/grpo --rm-type boxed_math
    vime-lint rescore runs/grpo --custom-rm-path my_pkg.rewards.strict --steps 10 11
    vime-lint rescore runs/grpo --custom-rm-path my_pkg.rewards.judge --group-rm --top 10

No engine runs: the samples are rebuilt from ``RUN_DIR/rollouts/step_N.parquet`` (written by
``vime train --dump-rollouts``, columns in docs/rollout_dumps.md) and handed to the new reward
exactly as the rollout hands them at reward time (``vime.rollout.rm_hub.async_rm``, or
``batched_async_rm`` per group with ``--group-rm``). The table says, per step, the mean reward
before and after, how many samples changed, and how many groups lost or gained reward spread
(a group whose rewards are all equal has zero advantages under GRPO: it teaches nothing); then
the samples whose reward moved most.

Samples whose generation failed (``fail_hook == "generate"``) have no response and are skipped
(counted); samples whose old reward failed are scored again. Prompts that were chat messages
are stored as JSON and given back to the reward as messages.

The new reward also gets the reward probes of ``vime-lint check`` (VIM300-VIM307, VIM310, VIM311,
:mod:`vime_lint.check.probes`) on the dumped prompts and labels; ``--no-probe`` skips them.

Exit status: 0 every sample scored and no probe finding; 1 the new reward raised or returned no
number for some sample (each kind shown once with its first sample), or a probe finding; 2 bad
arguments, no dumps, or a reward that cannot be loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from vime_lint.check.probe_run import reward_scalar

__all__ = ["Rescored", "StepSummary", "build_parser", "main", "rescore_rows", "summarise"]

PROG = "vime-lint rescore"
#: Rows with this ``fail_hook`` have no response to score.
UNSCORABLE_HOOK = "generate"


@dataclass(frozen=True)
class Rescored:
    """One sample scored again: ``new`` is None when the new reward failed (``error`` says why)."""

    step: int
    index: int | None
    group_index: int | None
    old: float | None
    new: float | None
    response: str
    error: str | None = None


@dataclass
class StepSummary:
    """One step's row of the table (rewards are means over the samples that have one)."""

    step: int
    scored: int = 0
    skipped: int = 0
    failed: int = 0
    old_mean: float | None = None
    new_mean: float | None = None
    changed: int = 0
    #: groups whose old rewards differed and whose new ones are all equal (they stop teaching)
    spread_lost: int = 0
    #: groups whose old rewards were all equal and whose new ones differ (they start teaching)
    spread_gained: int = 0
    lost_examples: list[int | None] = field(default_factory=list)
    gained_examples: list[int | None] = field(default_factory=list)


def build_parser() -> argparse.ArgumentParser:
    """The parser: ``RUN_DIR``, the rescore options, and every ``vime train`` flag (so the new
    reward sees the ``args`` it would see in training: ``--reward-key``, ``--rm-url``, ...)."""
    from vime.config.parser import add_arguments, add_config_argument

    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        usage=f"{PROG} RUN_DIR (--custom-rm-path PKG.MOD.FN | --rm-type TYPE) [options]",
        description="Score the samples dumped by `vime train --dump-rollouts` again with another "
                    "reward (no engine) and compare with the rewards they had.",
        epilog="exit status: 0 every sample scored; 1 the new reward failed on some samples; 2 "
               "bad arguments, no dumps, or a reward that cannot be loaded.")
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="the --run-dir of a run made with --dump-rollouts")
    own = parser.add_argument_group("vime-lint rescore")
    own.add_argument("--steps", type=int, nargs="+", default=None, metavar="N",
                     help="dumped steps to score (default: every dumped step)")
    own.add_argument("--top", type=int, default=5, metavar="N",
                     help="samples listed whose reward moved most (default 5; 0: none)")
    own.add_argument("--output-format", choices=("text", "json"), default="text")
    own.add_argument("--no-probe", dest="probe", action="store_false",
                     help="do not probe the new reward (by default it gets the reward probes of "
                          "`vime-lint check` on the dumped prompts and labels, VIM300-VIM307, VIM310, VIM311)")
    add_config_argument(parser)
    add_arguments(parser)
    return parser


def _prompt(text: Any) -> Any:
    """A dumped prompt back as the rollout had it: chat messages were written as JSON."""
    if isinstance(text, str) and text.startswith("[") and text.endswith("]"):
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, list) and all(isinstance(m, dict) and "role" in m for m in value):
            return value
    return text


def _sample(row: Mapping[str, Any]) -> Any:
    from vime.utils.types import Sample

    metadata = json.loads(row["metadata_json"]) if row.get("metadata_json") else {}
    status = row.get("status") or "completed"
    # A sample whose old reward failed goes back to the status the reward saw.
    if row.get("fail_hook") == "reward":
        status = "completed"
    return Sample.from_dict({
        "index": row.get("index"), "group_index": row.get("group_index"),
        "rollout_id": row.get("rollout_id"), "prompt": _prompt(row.get("prompt") or ""),
        "tokens": list(row.get("tokens") or []), "response": row.get("response") or "",
        "response_length": int(row.get("response_length") or 0), "label": row.get("label"),
        "loss_mask": None if row.get("loss_mask") is None else list(row["loss_mask"]),
        "rollout_log_probs": (None if row.get("rollout_log_probs") is None
                              else list(row["rollout_log_probs"])),
        "weight_versions": list(row.get("weight_versions") or []),
        "status": status, "metadata": metadata,
    })


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


async def _score_one(args: argparse.Namespace, sample: Any) -> tuple[float | None, str | None]:
    from vime.rollout.rm_hub import async_rm

    try:
        return reward_scalar(args, await async_rm(args, sample))
    except Exception as exc:  # noqa: BLE001 - reported per sample, the run goes on
        return None, _error(exc)


async def _score_group(args: argparse.Namespace, samples: list[Any]
                       ) -> list[tuple[float | None, str | None]]:
    from vime.rollout.rm_hub import batched_async_rm

    try:
        values = await batched_async_rm(args, samples)
    except Exception as exc:  # noqa: BLE001 - reported per sample, the run goes on
        return [(None, _error(exc))] * len(samples)
    return [reward_scalar(args, v) for v in values]


async def _score(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]]
                 ) -> list[tuple[float | None, str | None]]:
    samples = [_sample(r) for r in rows]
    if not getattr(args, "group_rm", False):
        return list(await asyncio.gather(*(_score_one(args, s) for s in samples)))
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[(r.get("rollout_id"), r.get("group_index"))].append(i)
    out: list[tuple[float | None, str | None]] = [(None, None)] * len(rows)
    results = await asyncio.gather(*(_score_group(args, [samples[i] for i in members])
                                     for members in groups.values()))
    for members, scored in zip(groups.values(), results, strict=True):
        for i, value in zip(members, scored, strict=True):
            out[i] = value
    return out


def rescore_rows(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]]
                 ) -> tuple[list[Rescored], int]:
    """Score dumped rows with the reward ``args`` names.

    Args:
        args: ``vime train`` arguments (``custom_rm_path`` or ``rm_type``, ``group_rm``,
            ``reward_key``).
        rows: dump rows (``vime.report.schema.COLUMNS`` keys), one or several steps.

    Returns:
        ``(rescored, skipped)``: one :class:`Rescored` per scorable row, in order, and the count
        of rows skipped because their generation failed.

    Raises:
        vime.contract.errors.ContractError: the custom reward cannot be loaded or has the wrong
            signature (VIM100).
    """
    from vime.utils.misc import load_function

    path = getattr(args, "custom_rm_path", None)
    if path:  # a load or signature error is the user's argument, not a per-sample failure
        load_function(path, hook="custom_rm_path", group_rm=bool(getattr(args, "group_rm", 0)))
    scorable = [r for r in rows if r.get("fail_hook") != UNSCORABLE_HOOK]
    scores = asyncio.run(_score(args, scorable))
    out = [Rescored(int(r["rollout_id"]), r.get("index"), r.get("group_index"), r.get("reward"),
                    new, r.get("response") or "", err)
           for r, (new, err) in zip(scorable, scores, strict=True)]
    return out, len(rows) - len(scorable)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _spread(values: Sequence[float]) -> bool:
    return len(values) > 1 and max(values) != min(values)


def summarise(rescored: Sequence[Rescored], skipped: Mapping[int, int]) -> list[StepSummary]:
    """Per-step summaries of :func:`rescore_rows`' output (``skipped``: step -> rows skipped).

    A group counts for ``spread_lost``/``spread_gained`` only when every member has both an old
    and a new reward."""
    by_step: dict[int, list[Rescored]] = defaultdict(list)
    for r in rescored:
        by_step[r.step].append(r)
    out = []
    for step in sorted(set(by_step) | set(skipped)):
        items = by_step.get(step, [])
        s = StepSummary(step, scored=sum(r.new is not None for r in items),
                        skipped=skipped.get(step, 0), failed=sum(r.new is None for r in items))
        s.old_mean = _mean([r.old for r in items if r.old is not None])
        s.new_mean = _mean([r.new for r in items if r.new is not None])
        s.changed = sum(1 for r in items if r.new is not None and r.old != r.new)
        groups: dict[Any, list[Rescored]] = defaultdict(list)
        for r in items:
            groups[r.group_index].append(r)
        for g, members in groups.items():
            if any(m.old is None or m.new is None for m in members) or len(members) < 2:
                continue
            old = _spread([m.old for m in members if m.old is not None])
            new = _spread([m.new for m in members if m.new is not None])
            if old and not new:
                s.spread_lost += 1
                s.lost_examples.append(g)
            elif new and not old:
                s.spread_gained += 1
                s.gained_examples.append(g)
        out.append(s)
    return out


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 3] + "..."


def _render_text(summaries: Sequence[StepSummary], rescored: Sequence[Rescored], top: int,
                 out: TextIO) -> None:
    out.write(f"{'step':>5} {'scored':>7} {'skipped':>7} {'failed':>6} {'old mean':>9} "
              f"{'new mean':>9} {'changed':>7} {'spread lost':>11} {'spread gained':>13}\n")
    for s in summaries:
        out.write(f"{s.step:>5} {s.scored:>7} {s.skipped:>7} {s.failed:>6} "
                  f"{_num(s.old_mean):>9} {_num(s.new_mean):>9} {s.changed:>7} "
                  f"{s.spread_lost:>11} {s.spread_gained:>13}\n")
    lost = [(s.step, g) for s in summaries for g in s.lost_examples]
    gained = [(s.step, g) for s in summaries for g in s.gained_examples]
    if lost:
        out.write("groups whose rewards became all equal (zero advantages: they stop teaching): "
                  + ", ".join(f"step {st} group {g}" for st, g in lost[:10])
                  + (f" and {len(lost) - 10} more" if len(lost) > 10 else "") + "\n")
    if gained:
        out.write("groups whose rewards now differ (they start teaching): "
                  + ", ".join(f"step {st} group {g}" for st, g in gained[:10])
                  + (f" and {len(gained) - 10} more" if len(gained) > 10 else "") + "\n")
    moved = sorted((r for r in rescored if r.new is not None and r.old is not None
                    and r.old != r.new), key=lambda r: -abs((r.new or 0.0) - (r.old or 0.0)))
    if top and moved:
        out.write(f"\nmoved most (top {min(top, len(moved))} of {len(moved)}):\n")
        for r in moved[:top]:
            out.write(f"  step {r.step} index {r.index} group {r.group_index}: "
                      f"{_num(r.old)} -> {_num(r.new)}  {_short(r.response)!r}\n")
    errors: dict[str, Rescored] = {}
    counts: dict[str, int] = defaultdict(int)
    for r in rescored:
        if r.error:
            counts[r.error] += 1
            errors.setdefault(r.error, r)
    for err, first in errors.items():
        out.write(f"\nthe new reward failed on {counts[err]} sample(s): {err} (first: step "
                  f"{first.step} index {first.index}, response {_short(first.response)!r})\n")


def _render_json(summaries: Sequence[StepSummary], rescored: Sequence[Rescored], top: int,
                 out: TextIO) -> None:
    from dataclasses import asdict

    moved = sorted((r for r in rescored if r.new is not None and r.old is not None
                    and r.old != r.new), key=lambda r: -abs((r.new or 0.0) - (r.old or 0.0)))
    json.dump({"steps": [asdict(s) for s in summaries],
               "moved": [asdict(r) for r in moved[:top]],
               "failed": [asdict(r) for r in rescored if r.error]}, out, indent=1)
    out.write("\n")


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """Run ``vime-lint rescore``; return the exit status (see the module docstring)."""
    from vime.config.command_line import parse_command_line
    from vime.contract.errors import ContractError
    from vime.report.dump import dumped_steps, read_step

    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        ns = parse_command_line(parser, list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    if not (ns.custom_rm_path or ns.rm_type):
        print(f"{PROG}: error: name the new reward: --custom-rm-path PKG.MOD.FN or --rm-type "
              "TYPE", file=err)
        return 2
    if ns.top < 0:
        print(f"{PROG}: error: argument --top: must be >= 0, got {ns.top}", file=err)
        return 2
    files = dumped_steps(ns.run_dir) if ns.run_dir.is_dir() else {}
    if not files:
        print(f"{PROG}: error: {ns.run_dir}: no rollouts/step_N.parquet (run `vime train "
              "--dump-rollouts --run-dir DIR`, then rescore DIR)", file=err)
        return 2
    steps = ns.steps if ns.steps is not None else sorted(files)
    missing = [s for s in steps if s not in files]
    if missing:
        print(f"{PROG}: error: argument --steps: {missing} not dumped under "
              f"{ns.run_dir / 'rollouts'}; dumped: {sorted(files)}", file=err)
        return 2
    from vime.config.defaults import parser_defaults

    args = argparse.Namespace(**{**parser_defaults(), **vars(ns)})
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # hook paths are resolved from the folder rescore runs in
        sys.path.insert(0, cwd)
    rows: list[dict[str, Any]] = []
    skipped: dict[int, int] = {}
    try:
        for s in steps:
            step_rows = read_step(files[s]).to_pylist()
            skipped[s] = sum(r.get("fail_hook") == UNSCORABLE_HOOK for r in step_rows)
            rows += step_rows
        rescored, _ = rescore_rows(args, rows)
    except (ValueError, ContractError) as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return 2
    summaries = summarise(rescored, skipped)
    (_render_json if ns.output_format == "json" else _render_text)(summaries, rescored, ns.top,
                                                                   out)
    probed = _probe(args, rows, out) if ns.probe and ns.output_format == "text" else 0
    return 1 if probed or any(r.new is None for r in rescored) else 0


def _probe(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]], out: TextIO) -> int:
    """The reward probes of ``vime-lint check`` on the new reward, with the dumped prompts and
    labels (at most 6); prints the findings and returns how many."""
    from vime_lint.check.probe_run import run_probes
    from vime_lint.check.probes import ProbeRow

    seen: dict[str, ProbeRow] = {}
    for r in rows:
        prompt, label = r.get("prompt"), r.get("label")
        if isinstance(prompt, str) and label is not None and prompt not in seen:
            seen[prompt] = ProbeRow(prompt, str(label))
    if not seen:
        return 0
    outcome = run_probes(args, list(seen.values())[:6])
    out.write("\nreward probes (as in vime-lint check; --no-probe turns them off):\n")
    for v in outcome.findings:
        out.write(v.format() + "\n")
    if not outcome.findings:
        out.write("  no finding\n")
    for note in outcome.notes:
        out.write(f"  note: {note}\n")
    return len(outcome.findings)
