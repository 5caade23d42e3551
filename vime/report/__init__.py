"""Rollout dumps (``--dump-rollouts``), each sample's fate, and ``vime report RUN_DIR``.

Usage::

    from vime.report.fates import FATES, sample_fate       # light: no pyarrow
    from vime.report.dump import write_step, read_steps      # pyarrow, imported when used
    from vime.report.html import write_report                # matplotlib, imported when used

The dump's columns are defined once, in :mod:`vime.report.schema`; ``docs/rollout_dumps.md`` is
generated from it (``scripts/document_dumps.py``).
"""
