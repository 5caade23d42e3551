"""The ``vime-lint check`` command: arguments, dry run, report.

``vime-lint check`` is the one vime-lint command that imports and runs the user's hooks: it
checks their signatures (VIM100), then runs one train and one eval step of the rollout function
on the CPU against a synthetic data source, and every hook result through the same boundary
checks the training runtime uses (``vime.contract.checks.boundaries.HOOK_BOUNDARIES``).

- :mod:`vime_lint.check.arguments`: the parser (vime's flags, vime's defaults, plus the
  check's own);
- :mod:`vime_lint.check.calls`: calling user code, turning crashes into messages;
- :mod:`vime_lint.check.dry_run`: the stages (hooks, train step, eval step);
- :mod:`vime_lint.check.hook_loading`: importing the hooks with their signature check;
- :mod:`vime_lint.check.finding_owners`: which hook a finding on a rollout's output is about;
- :mod:`vime_lint.check.probe_stage`: the probes after the stages, and the constant rewards
  that scripted answers leave unjudged;
- :mod:`vime_lint.check.report`: the per-invariant table and the exit status;
- :mod:`vime_lint.check.synthetic`: the synthetic data source and generator of the dry run.
"""
