"""Mutation testing of the modules that carry vime's promises, each against its own unit tests.

Usage::

    python benchmarks/mutation.py                       # every module in MODULES (slow: hours)
    python benchmarks/mutation.py vime/rollout/staleness.py vime/backends/advantages.py
    python benchmarks/mutation.py --list                # the modules and the tests run on each
    python benchmarks/mutation.py --keep DIR ...        # keep the work copies under DIR
    python benchmarks/mutation.py --max-children 1 ...  # one test process at a time
    python benchmarks/mutation.py --timeout-constant 5 ...  # more seconds per mutant

For each module, a copy of the repository (the files git tracks or would track) goes into a
temporary directory, ``[tool.mutmut]`` in the copy's ``pyproject.toml`` names that module as
the only source to mutate and its unit test files as the only tests, and ``mutmut run``
(mutmut 3, the ``dev`` extra) changes one operator, constant, argument or return value at a
time and runs the tests that cover the changed function. The script then prints, per module,
the mutants killed (a test failed), survived (every test passed), and the others (timeout, no
covering test), the kill rate ``killed / (killed + survived)``, and the diff of every
survivor (``mutmut show``).

A survivor is either a missing test (write one that fails on it) or an equivalent mutant (the
mutated code behaves the same, e.g. a ``>= 1`` bound on a value that is never 0); tests/README.md
lists the known equivalent ones. The run is not part of CI: tens of seconds to minutes per
module on a 2-core machine, longer for the modules whose tests train a model.

mutmut stops a mutant's test process after ``(t + timeout_constant) * timeout_multiplier * 2``
CPU seconds, or half as many wall-clock seconds (status "timeout", counted apart from killed and
survived), ``t`` the tests' own duration in its clean run, which leaves out the fixtures'
set-up. ``TIMEOUT_CONSTANTS`` gives 5 s to the modules whose tests build a model (a session
fixture and the trainer's start, paid again in every mutant's process); the others keep
mutmut's 1 s, which also bounds the mutants that make a test hang (an endpoint that never
stops: about 40 s each, not 140 s). ``--timeout-constant`` sets it for every module given.

Exit status: 0 when every module reached ``--target`` (default 0.9), 1 otherwise, 2 on bad
arguments (an unknown module).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vime.utils.quiet_env import QUIET_ENV

ROOT = Path(__file__).resolve().parent.parent

#: module (or package folder) -> the unit test files run on its mutants (pytest arguments).
MODULES: dict[str, list[str]] = {
    "vime/contract/checks/": ["tests/unit/contract/checks/", "tests/unit/runtime/",
                              "tests/unit/contract/test_check_grouping.py",
                              "tests/unit/check/test_check_arguments.py",
                              "tests/unit/check/test_check_engine.py"],
    # one file of the package, with the tests of its checks and the trainer runs that call them
    "vime/contract/checks/trainer.py": ["tests/unit/contract/checks/test_trainer_boundaries.py",
                                        "tests/unit/backends/test_trainer_hooks.py"],
    "vime/contract/checks/agent.py": ["tests/unit/contract/checks/test_agent_invariants.py"],
    "vime/contract/checks/values.py": ["tests/unit/contract/checks/test_values.py",
                                       "tests/unit/contract/checks/test_sample_invariants.py",
                                       "tests/unit/contract/checks/test_batch_invariants.py"],
    "vime/contract/checks/rollout_output.py": [
        "tests/unit/contract/checks/test_rollout_output.py",
        "tests/unit/contract/checks/test_eval_invariants.py",
        "tests/unit/contract/checks/test_failed_samples.py",
        "tests/unit/contract/checks/test_framework_failures.py",
        "tests/unit/contract/checks/test_sample_invariants.py",
        "tests/unit/contract/checks/test_batch_invariants.py"],
    "vime/contract/checks/policy.py": ["tests/unit/contract/checks/test_policy.py",
                                       "tests/unit/contract/checks/test_warned_once.py"],
    "vime/contract/checks/enforced.py": ["tests/unit/contract/checks/test_enforced.py",
                                         "tests/unit/data/test_batch_builder.py",
                                         "tests/unit/rollout/test_data_source.py",
                                         "tests/unit/contract/checks/test_framework_failures.py",
                                         "tests/unit/contract/checks/test_boundary_table.py"],
    "vime/contract/checks/shape.py": ["tests/unit/contract/checks/test_shape.py",
                                      "tests/unit/contract/checks/test_batch_invariants.py",
                                      "tests/unit/contract/checks/test_enforced.py"],
    "vime/contract/checks/hook_results.py": [
        "tests/unit/contract/checks/test_hook_results.py",
        "tests/unit/contract/checks/test_hook_boundaries.py",
        "tests/unit/contract/checks/test_token_boundaries.py",
        "tests/unit/contract/checks/test_generated_turns.py"],
    "vime/contract/checks/batch.py": ["tests/unit/contract/checks/test_batch.py",
                                      "tests/unit/contract/checks/test_batch_invariants.py",
                                      "tests/unit/contract/checks/test_framework_failures.py",
                                      "tests/unit/contract/checks/test_enforced.py",
                                      "tests/unit/contract/checks/test_rollout_output.py"],
    "vime/contract/checks/locations.py": ["tests/unit/contract/checks/test_locations.py",
                                          "tests/unit/contract/checks/test_shape.py",
                                          "tests/unit/contract/checks/test_sample_invariants.py"],
    "vime/contract/checks/settings.py": ["tests/unit/contract/checks/test_settings.py",
                                         "tests/unit/contract/checks/test_policy.py",
                                         "tests/unit/contract/checks/test_batch_invariants.py"],
    "vime/contract/checks/evaluation.py": ["tests/unit/contract/checks/test_evaluation.py",
                                           "tests/unit/contract/checks/test_eval_invariants.py",
                                           "tests/unit/contract/checks/test_eval_datasets.py"],
    "vime/contract/checks/sample.py": ["tests/unit/contract/checks/test_sample.py",
                                       "tests/unit/contract/checks/test_sample_invariants.py",
                                       "tests/unit/contract/checks/test_column_proofs.py",
                                       "tests/unit/contract/checks/test_framework_failures.py",
                                       "tests/unit/contract/checks/test_field_reports.py"],
    "vime/contract/checks/boundaries.py": ["tests/unit/contract/checks/test_boundaries.py",
                                           "tests/unit/contract/checks/test_hook_boundaries.py",
                                           "tests/unit/contract/checks/test_boundary_table.py",
                                           "tests/unit/contract/checks/test_agent_invariants.py",
                                           "tests/unit/contract/checks/test_token_boundaries.py",
                                           "tests/unit/contract/checks/test_generated_turns.py"],
    "vime/contract/checks/chat.py": ["tests/unit/contract/checks/test_chat.py",
                                     "tests/unit/contract/checks/test_generated_turns.py",
                                     "tests/unit/contract/checks/test_token_boundaries.py"],
    "vime/contract/checks/field_reports.py": ["tests/unit/contract/checks/test_field_reports.py",
                                              "tests/unit/contract/checks/test_rollout_output.py"],
    "vime/contract/checks/checker.py": ["tests/unit/contract/checks/test_checker.py",
                                        "tests/unit/contract/checks/test_policy.py",
                                        "tests/unit/contract/checks/test_rollout_output.py",
                                        "tests/unit/contract/checks/test_eval_invariants.py"],
    "vime/contract/checks/typecheck.py": ["tests/unit/contract/checks/test_typecheck.py",
                                          "tests/unit/contract/checks/test_sample.py",
                                          "tests/unit/contract/checks/test_sample_invariants.py"],
    "vime/contract/checks/failures.py": ["tests/unit/contract/checks/test_failed_samples.py",
                                         "tests/unit/rollout/vllm/test_hook_failures.py"],
    "vime/contract/signature.py": ["tests/unit/contract/test_signature_and_loading.py"],
    "vime_lint/static/_cache.py": ["tests/unit/static/test_cache_parallel.py"],
    # not test_launch_aware_rules.py: mutmut writes its test ids (with flags such as
    # --group-rm in them) to mutants/mutmut-stats.json, vime-lint's launch scan reads that JSON
    # as a launch config, and test_cli's test_project_lints_itself then fails on the unmutated
    # code
    "vime_lint/static/_runner.py": ["tests/unit/static/test_cache_parallel.py",
                                    "tests/unit/lint/test_cli.py"],
    "vime/rollout/failures.py": ["tests/unit/rollout/test_failures.py",
                                 "tests/unit/rollout/vllm/test_hook_failures.py",
                                 "tests/unit/contract/checks/test_failed_samples.py"],
    # the manager test of the bound only: in mutmut's clean run of the whole file its
    # warn-mode test fails on the unmutated code (it passes under plain pytest, alone and with
    # the rest of the file)
    "vime/rollout/staleness.py": ["tests/unit/rollout/test_staleness.py",
                                  "tests/unit/ray/test_rollout_manager.py", "-k", "staleness"],
    "vime/backends/advantages.py": ["tests/unit/backends/test_advantages.py"],
    "vime/backends/trainer_hooks.py": ["tests/unit/backends/test_trainer_hooks.py",
                                       "tests/unit/contract/checks/test_trainer_boundaries.py"],
    "vime/backends/tis.py": ["tests/unit/backends/test_trainer_hooks.py"],
    "vime/agent/server.py": ["tests/unit/agent/"],
    "vime/agent/sessions.py": ["tests/unit/agent/"],
}

#: mutmut's ``timeout_constant`` (seconds added to each test's measured duration): its own 1 s,
#: and 5 s for the modules whose tests build a model and start a trainer.
TIMEOUT_CONSTANT = 1.0
TIMEOUT_CONSTANTS: dict[str, float] = {"vime/backends/tis.py": 5.0,
                                       "vime/backends/trainer_hooks.py": 5.0,
                                       "vime/contract/checks/trainer.py": 5.0}

#: One torch (OpenMP) thread in every test process: mutmut forks each mutant's process from
#: the one that ran the clean run, and a child forked after torch used its OpenMP thread pool
#: hangs in its first parallel region (a futex wait, until mutmut's wall-clock limit: every
#: trainer-hook mutant came back as "timeout" so).
_ENV = {**QUIET_ENV, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_KILLED = {"killed"}
_SURVIVED = {"survived"}


def _mutmut() -> list[str]:
    """The mutmut command of this interpreter's environment."""
    script = Path(sys.executable).with_name("mutmut")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mutmut"]


def _repo_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line and (ROOT / line).is_file()]


def _work_copy(module: str, tests: list[str], dest: Path,
               timeout_constant: float = TIMEOUT_CONSTANT) -> None:
    """Copy the repository to ``dest`` with a ``[tool.mutmut]`` section for ``module``."""
    for rel in _repo_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    pyproject = dest / "pyproject.toml"
    text = re.sub(r"\n\[tool\.mutmut\][^\[]*", "\n", pyproject.read_text())
    tops = sorted({Path(rel).parts[0] for rel in _repo_files() if len(Path(rel).parts) > 1})
    pyproject.write_text(text + "\n[tool.mutmut]\n"
                         f"source_paths = [{_toml_list([module])}]\n"
                         f"pytest_add_cli_args_test_selection = [{_toml_list(tests)}]\n"
                         "pytest_add_cli_args = [\"-p\", \"no:cacheprovider\", \"-q\"]\n"
                         f"also_copy = [{_toml_list(tops)}]\n"
                         f"timeout_constant = {float(timeout_constant)}\n")


def _toml_list(items: list[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


def _results(work: Path, env: dict[str, str]) -> dict[str, str]:
    """mutant name -> status, from ``mutmut results --all true``."""
    out = subprocess.run([*_mutmut(), "results", "--all", "true"], cwd=work, env=env,
                         capture_output=True, text=True).stdout
    status = {}
    for line in out.splitlines():
        name, sep, state = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            status[name] = state.strip()
    return status


def run_module(module: str, tests: list[str], keep: Path | None,
               max_children: int | None = None,
               timeout_constant: float = TIMEOUT_CONSTANT) -> tuple[int, int, int]:
    """Mutate ``module``, print its figures and survivors; returns (killed, survived, other).

    ``max_children`` caps mutmut's parallel test processes (None: one per CPU, mutmut's default).
    """
    base = Path(tempfile.mkdtemp(prefix="vime-mutation-", dir=keep))
    try:
        return _run_in(base, module, tests, max_children, timeout_constant)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _run_in(base: Path, module: str, tests: list[str], max_children: int | None,
            timeout_constant: float = TIMEOUT_CONSTANT) -> tuple[int, int, int]:
    work = base / "repo"
    work.mkdir()
    _work_copy(module, tests, work, timeout_constant)
    env = {**os.environ, **_ENV, "PYTHONPATH": str(work)}
    start = time.monotonic()
    limit = [] if max_children is None else ["--max-children", str(max_children)]
    proc = subprocess.run([*_mutmut(), "run", *limit], cwd=work, env=env, capture_output=True,
                          text=True)
    seconds = time.monotonic() - start
    status = _results(work, env)
    if proc.returncode != 0 or not status:
        print(f"{module}: mutmut run failed (exit {proc.returncode}); its last output:")
        print("\n".join((proc.stdout + proc.stderr).splitlines()[-20:]))
        return 0, 0, 0
    killed = sum(s in _KILLED for s in status.values())
    survived = sorted(n for n, s in status.items() if s in _SURVIVED)
    other = {n: s for n, s in status.items() if s not in _KILLED | _SURVIVED}
    rate = killed / max(1, killed + len(survived))
    print(f"{module}: {len(status)} mutants, {killed} killed, {len(survived)} survived, "
          f"{len(other)} other; kill rate {rate:.1%} ({seconds:.0f} s; tests: "
          f"{' '.join(tests)})")
    for name, state in sorted(other.items()):
        print(f"  {state}: {name}")
    for name in survived:
        diff = subprocess.run([*_mutmut(), "show", name], cwd=work, env=env,
                              capture_output=True, text=True).stdout
        print("  survived: " + "\n  ".join(diff.strip().splitlines()))
    return killed, len(survived), len(other)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules of MODULES to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print the modules and their tests")
    parser.add_argument("--target", type=float, default=0.9, help="kill rate each must reach")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the work copies (mutmut's mutants/ folder) under this folder")
    parser.add_argument("--max-children", type=int, default=None,
                        help="at most this many test processes at once (default: one per CPU)")
    parser.add_argument("--timeout-constant", type=float, default=None,
                        help="seconds mutmut adds to a test's duration before its time limits "
                             f"(default: TIMEOUT_CONSTANTS, else {TIMEOUT_CONSTANT:g})")
    ns = parser.parse_args(argv)
    if ns.list:
        for module, tests in MODULES.items():
            print(f"{module}: {' '.join(tests)}")
        return 0
    unknown = [m for m in ns.modules if m not in MODULES]
    if unknown:
        print(f"mutation.py: unknown module {unknown[0]!r}; use one of: {' '.join(MODULES)}",
              file=sys.stderr)
        return 2
    if ns.keep is not None:
        ns.keep.mkdir(parents=True, exist_ok=True)
    below = []
    for module in ns.modules or list(MODULES):
        killed, survived, _ = run_module(
            module, MODULES[module], ns.keep, ns.max_children,
            TIMEOUT_CONSTANTS.get(module, TIMEOUT_CONSTANT) if ns.timeout_constant is None
            else ns.timeout_constant)
        if killed + survived == 0 or killed / (killed + survived) < ns.target:
            below.append(module)
    if below:
        print(f"below the {ns.target:.0%} target: {' '.join(below)}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
