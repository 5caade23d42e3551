"""Run every vime tool on every case of the mistake corpus (tests/corpus/) and print the table.

For each kind of ``tests/corpus/kinds.toml``: ``vime-lint rollout`` (in process) and
``vime-lint types`` (one mypy run over all cases) on the case module and its near-miss,
``vime-lint check`` (the dry run, a subprocess per case: stand-in engine, synthetic data) on
the case's launch, and the run-time contract checks on the case's output when the module
defines ``run_time_case()``. Prints, per kind, what each tool reported, whether the expected
tool reported the expected id, whether any tool caught it before a GPU job (rollout, types or
check), and the findings on the near-misses (each one a false finding).

Usage::

    python benchmarks/corpus.py                       # every tool (a few minutes)
    python benchmarks/corpus.py --tools rollout,types # static tools only
    python benchmarks/corpus.py --json out.json       # also write the raw results
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.corpus.index import TOOLS, Kind, launch_argv, lint_rollout, load_kinds, write_project  # noqa: E402

VENV_BIN = Path(sys.executable).parent
_FINDING = re.compile(r"^(VIM\d{3}) (error|warning): ")
_RAISED = re.compile(r"^error: .* raised (\w+)")
ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
       "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false"}


def _tool(name: str) -> list[str]:
    exe = VENV_BIN / "vime-lint"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "vime_lint"]


def run_types(kinds: list[Kind], work: Path) -> dict[tuple[str, bool], dict[str, str]]:
    """One ``vime-lint types`` run over every case and near-miss; ``{(kind, near): codes}``."""
    root = work / "types"
    (root / "pyproject.toml").parent.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[tool.vime_lint]\n", encoding="utf-8")
    owner: dict[str, tuple[str, bool]] = {}
    for k in kinds:
        for near in (False, True):
            if near and not k.near:
                continue
            dest = write_project(root, k, near=near)
            owner[dest.name] = (k.name, near)
    proc = subprocess.run([*_tool("types"), "types", "cases", "--output-format", "json",
                           "--exit-zero", "--cache-dir", str(work / "mypy-cache")],
                          cwd=root, capture_output=True, text=True,
                          env={**os.environ, **ENV, "PYTHONPATH": f"{root}:{ROOT}"})
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"vime-lint types failed ({proc.returncode}): {proc.stderr[-2000:]}")
    found: dict[tuple[str, bool], dict[str, str]] = {key: {} for key in owner.values()}
    for f in json.loads(proc.stdout or "[]"):
        key = owner.get(Path(f["filename"]).name)
        if key is not None and found[key].get(f["code"]) != "error":
            found[key][f["code"]] = f["severity"]
    return found


def run_check(kind: Kind, near: bool, work: Path) -> dict[str, str]:
    """``vime-lint check`` on the case's launch; ``{code: severity}``, plus ``raised:<Exc>``
    when a hook raised and ``load`` when the hooks could not be loaded (exit 2)."""
    root = work / "check" / f"{kind.name}-{'near' if near else 'case'}"
    root.mkdir(parents=True)
    dest = write_project(root, kind, near=near)
    argv = launch_argv(kind, dest.stem)
    try:
        proc = subprocess.run([*_tool("check"), "check", *argv], cwd=root, capture_output=True,
                              text=True, timeout=180,
                              env={**os.environ, **ENV, "PYTHONPATH": f"{root}:{ROOT}"})
    except subprocess.TimeoutExpired:
        return {"timeout": "error"}
    found: dict[str, str] = {}
    for line in (proc.stdout + proc.stderr).splitlines():
        m = _FINDING.match(line)
        if m and found.get(m.group(1)) != "error":
            found[m.group(1)] = m.group(2)
        r = _RAISED.match(line)
        if r:
            found[f"raised:{r.group(1)}"] = "error"
    if proc.returncode == 2 and not found:
        found["load"] = "error"
    return found


def _import(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_runtime(kind: Kind) -> dict[str, str] | None:
    """The run-time contract check of the boundary the case's ``run_time_case()`` names, on
    the hook's result; None when the case has no ``run_time_case``."""
    module = _import(kind.path, f"corpus_case_{kind.module}")
    make = getattr(module, "run_time_case", None)
    if make is None:
        return None
    spec = make()
    args: Namespace = spec["args"]
    args.contract_check = "warn"
    inputs = spec["inputs"]
    # the generate boundary wants the input sample's status from before the call
    status_in = vars(inputs[1]).get("status") if len(inputs) > 1 and hasattr(inputs[1], "__dict__") else None
    result = getattr(module, kind.function)(*inputs)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _boundary_codes(kind, spec, args, inputs, status_in, result)


def _boundary_codes(kind: Kind, spec: dict[str, Any], args: Namespace, inputs: Any,
                    status_in: Any, result: Any) -> dict[str, str]:
    from vime.contract.checks import (
        check_batch_reward_result,
        check_buffer_filter_result,
        check_dynamic_filter_result,
        check_generate_result,
        check_reward_post_process_result,
        check_reward_result,
        check_sample_hook_result,
        validate_rollout_output,
    )

    boundary = spec["boundary"]
    path = f"cases.{kind.module}.{kind.function}"
    if boundary == "rollout_output":
        found = validate_rollout_output(result, args, evaluation=spec.get("evaluation", False),
                                        hook_path=path)
    elif boundary == "reward_result":
        found = check_reward_result(result, args, hook_path=path)
    elif boundary == "batch_reward_result":
        found = check_batch_reward_result(result, inputs[1], args, hook_path=path)
    elif boundary == "generate_result":
        found = check_generate_result(status_in, result, args, hook_path=path)
    elif boundary == "dynamic_filter_result":
        found = check_dynamic_filter_result(result, args, hook_path=path)
    elif boundary == "buffer_filter_result":
        found = check_buffer_filter_result(result, inputs[2], inputs[3], args, hook_path=path)
    elif boundary == "sample_hook_result":
        found = check_sample_hook_result(result, args, hook_path=path)
    elif boundary == "reward_post_process_result":
        found = check_reward_post_process_result(result, inputs[1], args, hook_path=path)
    else:
        raise ValueError(f"{kind.name}: unknown boundary {boundary!r}")
    codes: dict[str, str] = {}
    for v in found:
        if codes.get(v.id) != "error":
            codes[v.id] = v.severity
    return codes


def _caught(kind: Kind, codes: dict[str, str] | None, tool: str) -> bool:
    if not codes:
        return False
    wanted = {kind.expect} if kind.tool == tool else set()
    wanted |= {a.split()[1] for a in kind.also if a.split()[0] == tool}
    return bool(wanted & set(codes))


def main(argv: list[str] | None = None) -> int:
    """Run the tools, print the table; exit 1 when a kind marked caught is not caught by its
    expected tool or a near-miss gets a finding."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help="comma-separated subset of rollout,types,check,runtime")
    parser.add_argument("--jobs", type=int, default=2, help="parallel `vime-lint check` runs")
    parser.add_argument("--kinds", default="", help="only kinds whose name contains this")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    ns = parser.parse_args(argv)
    tools = [t for t in ns.tools.split(",") if t]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error(f"unknown tools {sorted(unknown)}")
    kinds = [k for k in load_kinds() if ns.kinds in k.name]
    res: dict[str, dict[str, Any]] = {k.name: {"case": {}, "near": {}} for k in kinds}
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="vime-corpus-bench-") as tmp:
        work = Path(tmp)
        if "rollout" in tools:
            t0 = time.perf_counter()
            for k in kinds:
                res[k.name]["case"]["rollout"] = lint_rollout(k, near=False)
                if k.near:
                    res[k.name]["near"]["rollout"] = lint_rollout(k, near=True)
            times["rollout"] = time.perf_counter() - t0
        if "types" in tools:
            t0 = time.perf_counter()
            for (name, near), codes in run_types(kinds, work).items():
                res[name]["near" if near else "case"]["types"] = codes
            times["types"] = time.perf_counter() - t0
        if "check" in tools:
            t0 = time.perf_counter()
            jobs = [(k, near) for k in kinds if k.check for near in (False, True)
                    if not near or k.near]
            with ThreadPoolExecutor(max_workers=max(1, ns.jobs)) as pool:
                outs = list(pool.map(lambda j: run_check(j[0], j[1], work), jobs))
            for (k, near), codes in zip(jobs, outs, strict=True):
                res[k.name]["near" if near else "case"]["check"] = codes
            times["check"] = time.perf_counter() - t0
        if "runtime" in tools:
            t0 = time.perf_counter()
            for k in kinds:
                codes = run_runtime(k)
                if codes is not None:
                    res[k.name]["case"]["runtime"] = codes
            times["runtime"] = time.perf_counter() - t0
    return report(kinds, res, tools, times, ns.json)


def _fmt(codes: dict[str, str] | None) -> str:
    if codes is None:
        return "-"
    return ",".join(sorted(codes)) or "."


def report(kinds: list[Kind], res: dict[str, dict[str, Any]], tools: list[str],
           times: dict[str, float], out: Path | None) -> int:
    """Print the per-kind table and the summary; return the exit code."""
    bad = 0
    head = f"{'kind':34} {'expect':16} " + " ".join(f"{t:18}" for t in tools) + " exp  pre-GPU"
    print(head)
    print("-" * len(head))
    summary = {"kinds": len(kinds), "by_tool": {t: 0 for t in TOOLS}, "expected_caught": 0,
               "pre_gpu": 0, "marked_missed": 0, "near": 0,
               "near_false": {t: 0 for t in tools}, "source": 0}
    for k in kinds:
        case = res[k.name]["case"]
        summary["by_tool"][k.tool] += 1
        summary["source"] += k.visible == "source"
        exp_ok = _caught(k, case.get(k.tool), k.tool) if k.tool in tools else None
        pre = any(_caught(k, case.get(t), t) for t in ("rollout", "types", "check") if t in tools)
        summary["expected_caught"] += bool(exp_ok)
        summary["pre_gpu"] += pre
        summary["marked_missed"] += not k.caught
        if exp_ok is False and k.caught:
            bad += 1
        cells = " ".join(f"{_fmt(case.get(t)):18.18}" for t in tools)
        mark = "-" if exp_ok is None else ("yes" if exp_ok else ("MISS" if k.caught else "no*"))
        print(f"{k.name:34.34} {k.tool + ' ' + k.expect:16} {cells} {mark:4} "
              f"{'yes' if pre else 'no'}")
    print()
    near_rows = []
    for k in kinds:
        if not k.near:
            continue
        summary["near"] += 1
        near = res[k.name]["near"]
        for t in tools:
            codes = near.get(t) or {}
            if codes:
                summary["near_false"][t] += len(codes)
                near_rows.append(f"  {k.near} ({k.name}): {t} {_fmt(codes)}")
                bad += 1
    print(f"kinds: {summary['kinds']} ({summary['source']} visible in source); expected tool: "
          + ", ".join(f"{t} {n}" for t, n in summary["by_tool"].items()))
    print(f"caught by the expected tool with the expected id: {summary['expected_caught']}"
          f"/{summary['kinds']} ({summary['marked_missed']} marked caught=false in the index)")
    print(f"caught before a GPU job (rollout, types or check, expected or listed id): "
          f"{summary['pre_gpu']}/{summary['kinds']}")
    print(f"near-misses: {summary['near']}; false findings: "
          + ", ".join(f"{t} {n}" for t, n in summary["near_false"].items()))
    for row in near_rows:
        print(row)
    print("seconds: " + ", ".join(f"{t} {s:.1f}" for t, s in times.items())
          + " (on whatever load the machine has)")
    if out is not None:
        out.write_text(json.dumps({"summary": summary, "results": res}, indent=1),
                       encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
