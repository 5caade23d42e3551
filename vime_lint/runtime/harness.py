"""``vime-lint check``: a dry run of a user's hooks through every runtime contract check.

Imports the user's hooks (the one vime-lint command that runs user code), checks their
signatures at load time (VIM100), then on the CPU and without an engine runs one train step
and one eval step of the rollout function against a synthetic data source, and each
generate / reward / filter / hook result through its boundary check (B1-B6). Generation the
user's code asks of vime (``--custom-generate-function-path`` unset) is served by a built-in
deterministic generator; the report says it was a dry run.

Usage::

    vime-lint check --rollout-function-path my_pkg.rollout.generate_rollout \\
        --custom-rm-path my_pkg.rm.reward_func --n-samples-per-prompt 4
    python -m vime_lint.runtime.harness --rollout-function-path my_pkg.rollout.generate_rollout

Exit status: 0 clean; 1 any finding (errors and warnings alike); 2 the hooks cannot be loaded
or run (a message, never a traceback). ``--rollout-external-engine-addrs`` is accepted and
passed through on ``args``; the dry run itself does not contact engines.

Source: CONTRACT.md §6b (``vime-lint check``); ours.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import inspect
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from vime.contract.checks import hook_results as hc
from vime.contract.checks.rollout_output import collect_rollout_output
from vime.contract.checks.settings import CheckContext, CheckSettings
from vime.contract.errors import ContractError, ContractWarning, Violation
from vime.contract.hooks import HOOKS
from vime.contract.invariants import INVARIANTS
from vime_lint.runtime.synthetic import (
    DRY_RUN_GENERATE,
    SyntheticDataSource,
    dry_run_generate,
)

__all__ = ["HarnessError", "build_parser", "main"]

PROG = "vime-lint check"
_ID_RE = re.compile(r"\bVIM\d{3}\b")


class HarnessError(Exception):
    """The hooks cannot be loaded or run (exit status 2); the message says why."""


class StageFindings(Exception):
    """User code raised a ``ContractError`` with findings: the stage stops, the run goes on."""

    def __init__(self, violations: Sequence[Violation], label: str) -> None:
        super().__init__(label)
        self.violations = list(violations)
        self.label = label


@dataclass
class Report:
    """What the dry run found: findings, which invariants were exercised, stage notes."""

    findings: list[Violation] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def add(self, found: Sequence[Violation], ids: Sequence[str]) -> None:
        self.findings.extend(found)
        self.checked.update(ids)


def _ids(*boundaries: str) -> list[str]:
    """Runtime/load invariant ids checked at any of ``boundaries``."""
    return [i for i, inv in INVARIANTS.items() if set(inv.boundaries) & set(boundaries)]


# ---- arguments ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``vime-lint check`` parser: every ``--*-path`` of ``vime.contract.HOOKS`` plus the
    data, batch and reward arguments the dry run needs."""
    parser = argparse.ArgumentParser(
        prog=PROG, allow_abbrev=False,
        description="Dry-run a rollout function and its hooks through the runtime contract "
                    "checks (imports and runs the user's code on the CPU, no engine).")
    hooks = parser.add_argument_group("hooks (dotted paths)")
    for spec in HOOKS.values():
        if not spec.v1:
            continue
        hooks.add_argument(spec.arg, dest=spec.dest, default=None, metavar="PKG.MOD.NAME",
                           action="append" if spec.multiple else "store",
                           required=spec.dest == "rollout_function_path", help=spec.doc)
    data = parser.add_argument_group("data and batch")
    data.add_argument("--prompt-data", default=None, metavar="FILE.jsonl",
                      help="prompts (default: synthetic arithmetic prompts)")
    data.add_argument("--input-key", default="input")
    data.add_argument("--label-key", default=None)
    data.add_argument("--metadata-key", default="metadata")
    data.add_argument("--rollout-batch-size", type=int, default=2, metavar="M")
    data.add_argument("--n-samples-per-prompt", type=int, default=2, metavar="N")
    data.add_argument("--n-samples-per-eval-prompt", type=int, default=1)
    data.add_argument("--rollout-max-response-len", type=int, default=32)
    reward = parser.add_argument_group("reward")
    reward.add_argument("--reward-key", default=None)
    reward.add_argument("--eval-reward-key", default=None)
    reward.add_argument("--rm-type", default=None)
    reward.add_argument("--group-rm", action="store_true")
    data.add_argument("--eval-datasets", nargs="+", default=None, metavar="NAME",
                      help="eval dataset names the eval output must use (default: not checked)")
    other = parser.add_argument_group("other")
    other.add_argument("--use-rollout-logprobs", action="store_true")
    other.add_argument("--partial-rollout", action="store_true")
    other.add_argument("--rollout-external-engine-addrs", nargs="+", default=None,
                       metavar="HOST:PORT", help="passed through on args; the dry run does not "
                       "contact engines")
    return parser


def _base_namespace() -> dict[str, Any]:
    """vime's own argument defaults when ``vime.utils.arguments`` is importable, else {}."""
    try:
        from vime.utils.arguments import get_parser
    except Exception:  # an optional convenience: the harness works without it
        return {}
    try:
        return {a.dest: a.default for a in get_parser()._actions
                if a.dest != "help" and a.default is not argparse.SUPPRESS}
    except Exception:
        return {}


def make_args(ns: argparse.Namespace) -> argparse.Namespace:
    """The ``args`` the user's hooks see: vime's defaults, overlaid with the harness values.

    Generation falls back to the built-in dry-run generator (``--custom-generate-function-
    path`` unset); vime code that checks contracts itself logs instead of raising
    (``contract_check=warn``); ``eval_datasets`` holds ``--eval-datasets`` names (else None).
    """
    values = _base_namespace()
    values.update({k: v for k, v in vars(ns).items() if not (k in HOOKS and v is None)})
    values["contract_check"] = "warn"
    names = ns.eval_datasets or []
    values["eval_datasets"] = [argparse.Namespace(
        name=n, path=None, n_samples_per_eval_prompt=ns.n_samples_per_eval_prompt,
        rm_type=ns.rm_type, custom_rm_path=None, custom_generate_function_path=None,
        metadata_overrides={}) for n in names] or None
    values["over_sampling_batch_size"] = ns.rollout_batch_size
    values["rollout_global_dataset"] = True
    if not ns.custom_generate_function_path:
        values["custom_generate_function_path"] = DRY_RUN_GENERATE
    values.setdefault("rollout_temperature", 1.0)
    values.setdefault("rollout_top_p", 1.0)
    values.setdefault("rollout_top_k", -1)
    values.setdefault("rollout_seed", 42)
    return argparse.Namespace(**values)


# ---- running user code ----------------------------------------------------------------------


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" at {last.filename}:{last.lineno} in {last.name}"


def _call(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a user hook (awaiting it when async); turn a crash into a HarnessError."""
    try:
        result = fn(*args, **kwargs)
        if inspect.iscoroutinefunction(fn) and inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return result
    except ContractError as exc:
        if not exc.violations:
            raise HarnessError(f"{label} raised ContractError: {exc}{_where(exc)}") from exc
        raise StageFindings(exc.violations, label) from exc
    except Exception as exc:
        raise HarnessError(f"{label} raised {type(exc).__name__}: {exc}{_where(exc)}") from exc


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


def _optional_kwargs(fn: Callable[..., Any], dest: str, **values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items()
            if k in HOOKS[dest].optional_kwargs and _accepts(fn, k)}


def _label(dest: str, path: str) -> str:
    return f"{HOOKS[dest].arg} `{path}`"


def _contract_findings(exc: ContractError) -> list[Violation]:
    if exc.violations:
        return list(exc.violations)
    raise HarnessError(str(exc)) from exc


def _warning_findings(caught: Sequence[warnings.WarningMessage], where: str
                      ) -> list[Violation]:
    """ContractWarnings raised while user code ran, as findings (id read from the text)."""
    out = []
    for w in caught:
        if issubclass(w.category, ContractWarning):
            text = str(w.message)
            match = _ID_RE.search(text)
            out.append(Violation(match.group(0) if match else "VIM100", "warning", where,
                                 f"ContractWarning: {text}"))
    return out


# ---- the dry run ----------------------------------------------------------------------------


class DryRun:
    """One ``vime-lint check`` run over loaded hooks (see the module docstring)."""

    def __init__(self, ns: argparse.Namespace) -> None:
        self.ns = ns
        self.args = make_args(ns)
        self.settings = CheckSettings.from_args(self.args)
        self.report = Report()
        self.hooks: dict[str, Any] = {}

    # -- loading --

    def load(self) -> None:
        """Import every given hook with its load-time signature check (VIM100).

        Raises:
            HarnessError: a module cannot be imported or an attribute is missing.
        """
        from vime.utils.misc import load_function

        cwd = os.getcwd()
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
        for spec in HOOKS.values():
            value = getattr(self.ns, spec.dest, None)
            if not spec.v1 or not value:
                continue
            paths = value if isinstance(value, list) else [value]
            loaded = []
            for path in paths:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        obj = load_function(path, hook=spec.dest,
                                            group_rm=bool(self.ns.group_rm)
                                            and spec.dest == "custom_rm_path")
                    except ContractError as exc:
                        if not exc.violations:
                            raise HarnessError(str(exc)) from exc
                        self.report.add(exc.violations, ["VIM100"])
                        self.report.notes.append(f"{spec.arg} `{path}` has signature errors; "
                                                 "the stages that call it were skipped")
                        obj = None
                    except Exception as exc:  # import-time crash inside load_function
                        raise HarnessError(f"cannot load {spec.arg} {path!r}: "
                                           f"{type(exc).__name__}: {exc}{_where(exc)}") from exc
                self.report.add(_warning_findings(caught, f"{spec.arg} {path}"), ["VIM100"])
                if obj is not None:
                    loaded.append((path, obj))
            if loaded:
                self.hooks[spec.dest] = loaded if spec.multiple else loaded[0]
        self.report.checked.add("VIM100")

    # -- stages --

    def _sampling_params(self) -> dict[str, Any]:
        a = self.args
        return {"temperature": a.rollout_temperature, "top_p": a.rollout_top_p,
                "top_k": a.rollout_top_k, "max_tokens": a.rollout_max_response_len,
                "skip_special_tokens": True, "logprobs": 1}

    def _generate_group(self, source: SyntheticDataSource) -> list[Any]:
        """One group generated by the user's generate function (checked, B2) or ours."""
        group = source.get_samples(1)[0]
        hook = self.hooks.get("custom_generate_function_path")
        out: list[Any] = []
        for sample in group:
            if hook is None:
                asyncio.run(dry_run_generate(self.args, sample, self._sampling_params()))
                out.append(sample)
                continue
            path, fn = hook
            status, rl = sample.status, sample.response_length
            kwargs = _optional_kwargs(fn, "custom_generate_function_path", evaluation=False)
            result = _call(_label("custom_generate_function_path", path), fn, self.args, sample,
                           self._sampling_params(), **kwargs)
            found = hc.generate_result_problems(status, result, self.settings,
                                                in_response_length=rl)
            self.report.add(_context(found, "custom_generate_function_path", path), _ids("B2"))
            if isinstance(result, list) and result:
                out.append(result)
            else:
                out.append(result if result is not None else sample)
        return out

    def run_hooks(self) -> None:
        """B2-B4: generate, sample hooks, reward, dynamic filter, buffer filter."""
        source = SyntheticDataSource(self.args)
        self.report.notes.append("dry run: user hooks ran on the CPU against a synthetic data "
                                 "source; no engine was contacted")
        if "custom_generate_function_path" not in self.hooks:
            self.report.notes.append("generation is served by the built-in deterministic "
                                     f"generator ({DRY_RUN_GENERATE})")
        group = self._generate_group(source)
        leaves = [x for item in group for x in (item if isinstance(item, list) else [item])]
        samples = [x for x in leaves if hasattr(x, "reward")]
        for path, fn in self.hooks.get("rollout_sample_hook_path", []):
            for sample in samples[:1]:
                kwargs = _optional_kwargs(fn, "rollout_sample_hook_path", rollout_id=0,
                                          evaluation=False)
                result = _call(_label("rollout_sample_hook_path", path), fn, self.args, sample,
                               **kwargs)
                found = hc.sample_hook_result_problems(result, path)
                self.report.add(_context(found, "rollout_sample_hook_path", path),
                                ["VIM162", "VIM165"])
        self._reward(samples)
        self._dynamic_filter(samples)
        self._buffer_filter(source)

    def _reward(self, samples: list[Any]) -> None:
        hook = self.hooks.get("custom_rm_path")
        if hook is None:
            for s in samples:
                if s.reward is None:
                    s.reward = 1.0 if s.response == (s.label or "ok") else 0.0
            return
        path, fn = hook
        label = _label("custom_rm_path", path)
        if self.ns.group_rm:
            result = _call(label, fn, self.args, samples)
            found = hc.batch_reward_result_problems(result, samples, self.settings)
            values = list(result) if not found and isinstance(result, (list, tuple)) else []
        else:
            found, values = [], []
            for s in samples:
                value = _call(label, fn, self.args, s)
                found.extend(hc.reward_result_problems(
                    value, self.settings, where=f"reward function result (index={s.index})"))
                values.append(value)
        self.report.add(_context(found, "custom_rm_path", path), ["VIM110", "VIM150"])
        if len(values) == len(samples):
            for s, v in zip(samples, values, strict=True):
                s.reward = v

    def _dynamic_filter(self, samples: list[Any]) -> None:
        hook = self.hooks.get("dynamic_sampling_filter_path")
        if hook is None:
            return
        path, fn = hook
        found = hc.group_reward_problems(samples, self.settings)
        ids = ["VIM110"]
        if not any(v.severity == "error" for v in found):
            result = _call(_label("dynamic_sampling_filter_path", path), fn, self.args, samples)
            found += hc.dynamic_filter_result_problems(result, path)
            ids += ["VIM160", "VIM165"]
        else:
            self.report.notes.append(f"{_label('dynamic_sampling_filter_path', path)} was not "
                                     "called: the group's rewards are invalid (VIM110)")
        self.report.add(_context(found, "dynamic_sampling_filter_path", path), ids)

    def _buffer_filter(self, source: SyntheticDataSource) -> None:
        hook = self.hooks.get("buffer_filter_path")
        if hook is None:
            return
        path, fn = hook
        buffer = source.get_samples(2)
        result = _call(_label("buffer_filter_path", path), fn, self.args, None, buffer, 1)
        found = hc.buffer_filter_result_problems(result, buffer, 1, self.settings, path)
        self.report.add(_context(found, "buffer_filter_path", path), ["VIM161", "VIM165"])

    def _data_source(self) -> Any:
        """The user's ``--data-source-path`` class instantiated with ``args``, else ours."""
        hook = self.hooks.get("data_source_path")
        if hook is None:
            return SyntheticDataSource(self.args)
        path, cls = hook
        return _call(_label("data_source_path", path), cls, self.args)

    def _rollout(self, evaluation: bool) -> Any:
        from vime.rollout.base_types import call_rollout_fn

        dest = "eval_function_path" if evaluation and "eval_function_path" in self.hooks \
            else "rollout_function_path"
        hook = self.hooks.get(dest)
        if hook is None:
            return None
        path, fn = hook
        source = self._data_source()
        raw = _call(_label(dest, path), fn, self.args, 0, source, evaluation=evaluation)
        legacy = isinstance(raw, dict) if evaluation else isinstance(raw, list)
        ids = ["VIM101", *_ids("B6" if evaluation else "B5"), "VIM119"]
        found: list[Violation] = []
        if legacy:
            kind = "dict" if evaluation else "list"
            found.append(INVARIANTS["VIM101"].violation(
                "output", severity="warning", name=path, mode="eval" if evaluation else "train",
                actual=f"a bare {kind}", hint="legacy form, wrapped with a DeprecationWarning"))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                out = call_rollout_fn(functools.wraps(fn)(lambda *a, **k: raw), self.args, 0,
                                      source, evaluation=evaluation)
        except ContractError as exc:
            self.report.add(_context(_contract_findings(exc), dest, path), ids)
            return None
        found += collect_rollout_output(out, self.settings, evaluation=evaluation, name=path)
        self.report.add(_context(found, dest, path), ids)
        return out

    def _eval_stage(self) -> None:
        """B1/B6: one eval step."""
        self._rollout(evaluation=True)

    def _train_stage(self) -> None:
        """B1/B5 train step, then B4 reward post-process and convert on its samples."""
        out = self._rollout(evaluation=False)
        if out is not None:
            from vime.rollout.base_types import iter_samples

            flat = list(iter_samples(out.samples))
            for dest, check in (("custom_reward_post_process_path",
                                 hc.reward_post_process_result_problems),
                                ("custom_convert_samples_to_train_data_path",
                                 hc.convert_result_problems)):
                hook = self.hooks.get(dest)
                if hook is None or not flat:
                    continue
                path, fn = hook
                result = _call(_label(dest, path), fn, self.args, flat)
                self.report.add(_context(check(result, flat, path), dest, path),
                                ["VIM162", "VIM165"])

    def run(self) -> Report:
        """Load, run every stage, return the report.

        Raises:
            HarnessError: a hook cannot be loaded or crashed.
        """
        self.load()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ContractWarning)
            for stage in (self.run_hooks, self._train_stage, self._eval_stage):
                try:
                    stage()
                except StageFindings as exc:
                    self.report.add(exc.violations, [v.id for v in exc.violations])
                    self.report.notes.append(f"{exc.label} raised a ContractError; the rest of "
                                             "that stage was skipped")
        self.report.findings.extend(_warning_findings(caught, "while running user code"))
        if self.ns.rollout_external_engine_addrs:
            self.report.notes.append("--rollout-external-engine-addrs is passed through on args; "
                                     "the dry run does not contact engines")
        return self.report


def _context(found: Sequence[Violation], dest: str, path: str) -> list[Violation]:
    text = CheckContext(dest, path, 0).describe() + " (vime-lint check dry run)"
    return [dataclasses.replace(v, context=v.context or text) for v in found]


# ---- output ---------------------------------------------------------------------------------


def render(report: Report, out: TextIO) -> int:
    """Print the per-invariant table, the findings and the notes; return the exit status."""
    rows = []
    for inv_id, inv in INVARIANTS.items():
        if inv.scope == "static":
            continue
        mine = [v for v in report.findings if v.id == inv_id]
        errors = sum(v.severity == "error" for v in mine)
        warns = len(mine) - errors
        if errors:
            status = f"FAIL ({errors} error(s){f', {warns} warning(s)' if warns else ''})"
        elif warns:
            status = f"WARN ({warns} warning(s))"
        elif inv_id in report.checked:
            status = "pass"
        else:
            status = "not run"
        rows.append((inv_id, inv.slug, status))
    width = max(len(r[1]) for r in rows)
    print(f"{PROG}: runtime contract checks", file=out)
    print(f"{'id':<7} {'invariant':<{width}}  result", file=out)
    for inv_id, slug, status in rows:
        print(f"{inv_id:<7} {slug:<{width}}  {status}", file=out)
    if report.findings:
        print("", file=out)
        for v in report.findings:
            print(v.format(), file=out)
    for note in report.notes:
        print(f"note: {note}", file=out)
    errors = sum(v.severity == "error" for v in report.findings)
    warns = len(report.findings) - errors
    verdict = "clean" if not report.findings else f"{errors} error(s), {warns} warning(s)"
    print(f"{PROG}: {verdict}", file=out)
    return 1 if report.findings else 0


def main(argv: list[str] | None = None) -> int:
    """Run ``vime-lint check`` with ``argv`` (default ``sys.argv[1:]``); return the exit status
    (0 clean, 1 findings, 2 cannot load or run)."""
    parser = build_parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help)
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        report = DryRun(ns).run()
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:  # unreadable --prompt-data, bad settings
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    return render(report, sys.stdout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
