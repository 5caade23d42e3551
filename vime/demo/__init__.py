"""``make demo``, as a package: the code moved from ``vime/demo.py`` to :mod:`vime.demo.stages`.

Every name that was imported from ``vime.demo`` is re-exported here.
"""

from vime.demo.stages import (
    CONFIGS,
    QUICK,
    DemoPaths,
    Scale,
    StageResult,
    _write_eval_config,
    main,
    report,
    run_child,
    summarize,
)

__all__ = ["DemoPaths", "Scale", "StageResult", "main", "run_child", "summarize",
           "CONFIGS", "QUICK", "_write_eval_config", "report"]
