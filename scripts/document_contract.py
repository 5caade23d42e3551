"""Generate ``docs/contract.md``, the rollout contract, from its template and ``vime.contract``.

Usage::

    python scripts/document_contract.py            # rewrite the page
    python scripts/document_contract.py --check    # exit 1 if the page is out of date

The prose is ``scripts/templates/contract.md.in`` (:data:`TEMPLATE`), Markdown with one
paragraph or bullet a line; the page wraps them at 100 columns. Its placeholders
(``{{name}}``) are the parts built from data here (:func:`generated`): ``SAMPLE_FIELDS``,
``STATUS_VALUES``, ``FINISH_REASON_STATUS``, ``OPTIONAL_COLUMNS``, the output dataclasses of
``vime.rollout.base_types``, ``HOOKS``, ``INVARIANTS``, ``BOUNDARIES``, the argument parser and
the constants the prose quotes. Section numbers never change, so a reference such as
``docs/contract.md §7`` keeps its meaning. The page is never edited by hand: a unit test
regenerates it and compares.
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
#: The page's prose, with a ``{{name}}`` placeholder for each generated part.
TEMPLATE = Path(__file__).resolve().parent / "templates" / "contract.md.in"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

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


# ---- the generated parts, by section -------------------------------------------------------------

def _block(lines: list[str]) -> str:
    """Lines of a generated block, without the blank line the helpers end with."""
    return "\n".join(lines).rstrip("\n")


def _names(items: Iterable[object]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def _intro() -> dict[str, str]:
    return {"contract_version": str(CONTRACT_VERSION)}


def _section1() -> dict[str, str]:
    return {"module_map": _block(_table(
        ("Public names", "Module"),
        ((", ".join(f"`{n.strip()}`" for n in names.split(",")), f"`{mod}`")
         for names, mod in MODULE_MAP)))}


def _section2() -> dict[str, str]:
    from vime.utils.types import Sample

    rows = []
    for i, f in enumerate(SAMPLE_FIELDS, start=1):
        rows.append((i, _code(f.name), _code(f.hint), _code(f.default),
                     _code(f.length_rule) if f.length_rule else "",
                     "yes" if f.read_by_conversion else "",
                     f.doc + (" *Advanced.*" if f.advanced else "")))
    missing = [name for name, _ in STATUS_VALUES if name not in STATUS_MEANING]
    if missing:
        raise SystemExit(f"document_contract.py: STATUS_MEANING lacks {missing}")
    return {
        "sample_fields": _block(_table(
            ("#", "Field", "Type", "Default", "Length", "Conv.", "Meaning"), rows)),
        "status_values": _block(_table(
            ("Member", "Value", "Meaning"),
            ((f"`{n}`", f'`"{v}"`', STATUS_MEANING[n]) for n, v in STATUS_VALUES))),
        "finish_reason_status": _block(_table(
            ("finish_reason", "Status"),
            ((f"`{k}`", f"`{v}`") for k, v in FINISH_REASON_STATUS.items()))),
        "sample_methods": _block(_bullets([
            *(f"`{_signature(getattr(Sample, m))}`: {_summary(getattr(Sample, m))}"
              for m in SAMPLE_METHODS),
            "`effective_response_length` (property): " + _summary(
                Sample.effective_response_length.fget)])),
        "optional_columns": _names(OPTIONAL_COLUMNS),
    }


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


def _section3() -> dict[str, str]:
    from vime.contract.hooks import EVAL_DATASETS_VIEW as EVAL_VIEW
    from vime.contract.hooks import EVAL_ENTRY_KEYS as EVAL_KEYS
    from vime.rollout import base_types as bt
    try:
        from vime.rollout.rollout_metrics import BUILTIN_ROLLOUT_METRICS
    except ImportError:  # before the metrics moved out of logging_utils
        from vime.utils.logging_utils import BUILTIN_ROLLOUT_METRICS

    outputs: list[str] = []
    for cls in (bt.RolloutFnTrainOutput, bt.RolloutFnEvalOutput):
        outputs += [f"`{cls.__name__}`: {_summary(cls)}", ""]
        outputs += _table(("Field", "Type", "Default", "Notes"), _dataclass_rows(cls))
    return {
        "output_dataclasses": _block(outputs),
        "output_helpers": _block(_bullets(f"`{_signature(fn)}`: {_summary(fn)}"
                                          for fn in (bt.iter_samples, bt.finalize_rollout_groups))),
        "eval_entry_keys": ", ".join(f"{k!r}" for k in EVAL_KEYS),
        "eval_datasets_view": str(EVAL_VIEW),
        "builtin_rollout_metrics": _names(BUILTIN_ROLLOUT_METRICS),
    }


def _section4() -> dict[str, str]:
    spec = HOOKS["rollout_function_path"]
    return {
        "rollout_arg": spec.arg,
        "rollout_default": str(spec.default),
        "rollout_definition": spec.render(),
        "rollout_call_site": spec.call_site,
        "rollout_call": f"fn({', '.join(spec.positional)}, "
                        + ", ".join(f"{k}=..." for k in spec.keyword_passed) + ")",
        "rollout_returns": spec.returns,
        "rollout_renames": ", ".join(f"`{old}` (now `{new}`)"
                                     for old, new in spec.renames.items()),
    }


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


def _section5() -> dict[str, str]:
    from vime.rollout.filter_hub.dynamic_sampling_filters import STD_EPS
    from vime.rollout.rm_hub import BUILTIN_RM_TYPES, NOT_IN_V1_RM_TYPES

    rows = []
    for spec in HOOKS.values():
        if spec.dest == "rollout_function_path":
            continue
        rows.append(_hook_row(spec))
        if spec.dest == "custom_rm_path":
            rows.append(_hook_row(GROUP_RM_SPEC, " with `--group-rm`"))
    return {
        "hooks": _block(_table(("Argument", "Definition", "Kind", "Returns", "Default",
                                "Called from", "What it does"), rows)),
        "builtin_rm_types": _names(BUILTIN_RM_TYPES),
        "not_in_v1_rm_types": _names(NOT_IN_V1_RM_TYPES),
        "std_eps": f"{STD_EPS:g}",
        "convert_required_keys": _names(CONVERT_REQUIRED_KEYS),
    }


def _static_rows(invs: Iterable[Invariant]) -> list[tuple[str, ...]]:
    return [(f"`{i.id}`", f"`{i.slug}`", i.severity, _cell(i.title), _cell(i.bug_kind),
             ", ".join(i.twins) or "") for i in invs]


def _section6() -> dict[str, str]:
    from vime.contract.checks.policy import ALWAYS_CHECKED
    from vime.contract.explain import DRY_RUN_BOUNDARIES, checked_by
    from vime.contract.invariants import ALWAYS_ENFORCED

    static = [i for i in INVARIANTS.values() if i.scope == "static" and i.status != "removed"]
    live = [i for i in INVARIANTS.values() if i.scope in ("load", "runtime")
            and i.status != "removed"]
    probes = [i for i in INVARIANTS.values() if i.scope == "probe" and i.status != "removed"]
    templates = [i for i in INVARIANTS.values() if i.scope == "template"
                 and i.status != "removed"]
    brows = []
    for b, what in BOUNDARIES.items():
        here = [i for i in live if b in i.boundaries]
        always = [i.id for i in here if i.enforcement == "always"]
        brows.append((b, _cell(what), ", ".join(i.id for i in here),
                      ", ".join(always) or "none",
                      "every call" if b in ALWAYS_CHECKED else "per interval"))
    missing = sorted(ALWAYS_ENFORCED - {i.id for i in live if i.enforcement == "always"})
    if missing:
        raise SystemExit(f"document_contract.py: ALWAYS_ENFORCED ids without a record: {missing}")
    return {
        "static_invariants": _block(_table(
            ("Id", "Slug", "Severity", "Rule", "Failure kind", "Twins"), _static_rows(static))),
        "boundaries": _block(_table(
            ("Boundary", "Where", "Invariants", "Always enforced", "When"), brows)),
        "dry_run_boundaries": ", ".join(sorted(DRY_RUN_BOUNDARIES)),
        "runtime_invariants": _block(_table(
            ("Id", "Boundaries", "Severity", "Enforcement", "Checked by", "Rule",
             "Failure kind", "Twins"),
            ((f"`{i.id}`", ", ".join(i.boundaries), i.severity, i.enforcement,
              ", ".join(line.split(":")[0] for line in checked_by(i)),
              _cell(i.title), _cell(i.bug_kind), ", ".join(i.twins))
             for i in live))),
        "probe_invariants": _block(_table(
            ("Id", "Severity", "Expectation", "Failure kind"),
            ((f"`{i.id}`", i.severity, _cell(i.title), _cell(i.bug_kind)) for i in probes))),
        "template_invariants": _block(_table(
            ("Id", "Severity", "Expectation", "Failure kind"),
            ((f"`{i.id}`", i.severity, _cell(i.title), _cell(i.bug_kind))
             for i in templates))),
    }


def _section7() -> dict[str, str]:
    from vime.rollout.data_source import DataSource

    def methods(names: Iterable[str]) -> str:
        return _block(_bullets(
            f"`{_signature(getattr(DataSource, m))}`: {_summary(getattr(DataSource, m))}"
            for m in names))

    return {"data_source_abstract": methods(sorted(DataSource.__abstractmethods__)),
            "data_source_given": methods(("eval_datasets", "training_prompts"))}


def _section8() -> dict[str, str]:
    from vime.ray.engine_command import DEFAULT_CPU_KV_CACHE_BYTES
    from vime.ray.engine_control import ABORT_PATHS, GENERATE_PATH, PAUSE_MODES
    from vime.rollout.vllm_protocol import make_sampling_params

    example = make_sampling_params(temperature=1.0, top_p=1.0, top_k=-1, max_response_len=64)
    return {
        "cpu_kv_cache_bytes": str(DEFAULT_CPU_KV_CACHE_BYTES),
        "generate_path": str(GENERATE_PATH),
        "abort_paths": _names(ABORT_PATHS),
        "pause_modes": _names(PAUSE_MODES),
        "sampling_params_example": repr(example),
    }


def _section10() -> dict[str, str]:
    from vime.contract.estimators import GROUP_BASELINE_ESTIMATORS as NORMALISED_ESTIMATORS
    from vime.contract.estimators import STD_ESTIMATORS
    from vime.data.batch_builder import EPS_STD

    return {"normalised_estimators": _names(sorted(NORMALISED_ESTIMATORS)),
            "std_estimators": _names(sorted(STD_ESTIMATORS)),
            "eps_std": f"{EPS_STD:g}"}


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


def _section11() -> dict[str, str]:
    from vime.config import UNSUPPORTED_ARGS, UNSUPPORTED_CHOICES, get_parser
    from vime.config.eval_config import UNSUPPORTED_EVAL_KEYS, EvalDatasetConfig

    lines: list[str] = []
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
    return {"arguments": _block(lines),
            "eval_dataset_fields": _names(f.name for f in dataclasses.fields(EvalDatasetConfig)),
            "unsupported_eval_keys": _names(UNSUPPORTED_EVAL_KEYS)}


_REJECTED = (
    ("rollout_function_path", "async def generate_rollout(args, rollout_id, data_source, "
     "evaluation=False): ..."),
    ("rollout_function_path", "def generate_rollout(args, rollout_id, data_source, "
     "evaluation): ..."),
    ("rollout_function_path", "def generate_rollout(args, rollout_id, *, evaluation=False): ..."),
    ("custom_generate_function_path", "def generate(args, sample, sampling_params): ..."),
)


def _section12() -> dict[str, str]:
    source = (ROOT / "examples" / "reference_rollout.py").read_text(encoding="utf-8")
    body = source.split('"""', 2)[2].strip("\n")
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
    deprecated = (
        ("rollout_function_path", "def generate_rollout(args, rollout_id, data_buffer, "
         "evaluation=False): ...", HOOKS["rollout_function_path"]),
        ("custom_rm_path", "async def reward_func(args, sample): ...", GROUP_RM_SPEC),
    )
    items = []
    for _dest, text, spec in deprecated:
        namespace = {}
        exec(text, namespace)  # noqa: S102 - fixed snippets above
        fn = next(v for k, v in namespace.items() if not k.startswith("__"))
        params, is_async = params_from_callable(fn)
        found = check_signature(params, is_async, spec)
        if any(v.severity == "error" for v in found) or not found:
            raise SystemExit(f"document_contract.py: {text!r} is no longer only deprecated")
        where = f"`{spec.arg}`" + (" with `--group-rm`" if spec is GROUP_RM_SPEC else "")
        items.append(f"{_code(text.removesuffix(': ...'))} ({where}): {found[0].message}")
    return {"reference_rollout": body,
            "rejected_definitions": _block(_table(("Definition", "Argument", "Message"), rows)),
            "deprecated_definitions": _block(_bullets(items))}


def generated() -> dict[str, str]:
    """Every placeholder of :data:`TEMPLATE` and its text."""
    out: dict[str, str] = {}
    for part in (_intro, _section1, _section2, _section3, _section4, _section5, _section6,
                 _section7, _section8, _section10, _section11, _section12):
        out.update(part())
    return out


# ---- the template -------------------------------------------------------------------------------

def _wrap(line: str) -> list[str]:
    """A line of the template as it goes on the page: a paragraph or a bullet longer than 100
    columns wrapped (as :func:`_para` and :func:`_bullets` wrap), anything else as it is."""
    if len(line) <= 100 or line.startswith("|"):
        return [line]
    if line.startswith("- "):
        return _bullets([line[2:]])[:-1]
    return _para(line)[:-1]


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with its placeholders replaced by ``values``.

    ``{{name}}`` alone on a line is a generated block, put there as it is; ``{{name}}`` inside a
    line is replaced before the line is wrapped (:func:`_wrap`). A line starting with ``{#``
    is a note for the template's readers, left out. A placeholder without a value, or a value
    no placeholder uses, stops the script.
    """
    used: set[str] = set()

    def value(m: re.Match[str]) -> str:
        if m[1] not in values:
            raise SystemExit(f"document_contract.py: {TEMPLATE.name} names {{{{{m[1]}}}}}, "
                             "which the script does not generate")
        used.add(m[1])
        return values[m[1]]

    out: list[str] = []
    for line in template.splitlines():
        if line.startswith("{#"):
            continue
        if _PLACEHOLDER.fullmatch(line):
            out.append(_PLACEHOLDER.sub(value, line))
        else:
            out += _wrap(_PLACEHOLDER.sub(value, line))
    unused = sorted(set(values) - used)
    if unused:
        raise SystemExit(f"document_contract.py: {TEMPLATE.name} has no place for {unused}")
    return "\n".join(out).rstrip("\n") + "\n"


def render() -> str:
    """The whole page as Markdown."""
    return fill(TEMPLATE.read_text(encoding="utf-8"), generated())


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
