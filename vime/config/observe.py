"""The flags that watch a run: rollout dumps, the report page and experiment trackers.

Usage::

    add_observe_arguments(parser)     # called by vime.config.parser.add_arguments

``--dump-rollouts`` writes ``RUN_DIR/rollouts/step_N.parquet`` (``vime.report.dump``);
``--report`` writes ``RUN_DIR/report.html`` at the end of ``vime train`` (``vime.report.html``);
``--use-wandb`` / ``--use-tensorboard`` / ``--use-trackio`` send every ``metrics.jsonl`` metric
to that tracker (``vime.tracking``). Standard library only (``vime-lint check`` builds the
parser too).
"""

from __future__ import annotations

import argparse

__all__ = ["WANDB_MODES", "add_observe_arguments"]

#: ``--wandb-mode`` values (wandb's own ``mode`` argument of ``wandb.init``).
WANDB_MODES = ("online", "offline")


def add_observe_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the dump, report and tracker flags on ``parser``."""
    g = parser.add_argument_group("run reports and experiment tracking")
    g.add_argument("--dump-rollouts", action="store_true",
                   help="(ours) Write every train step's samples (FAILED ones and the groups "
                        "dropped by a filter or the staleness bound included, each with its "
                        "fate) and the step's contract findings to "
                        "RUN_DIR/rollouts/step_N.parquet (docs/rollout_dumps.md).")
    g.add_argument("--report", action="store_true",
                   help="(ours) Write RUN_DIR/report.html (`vime report RUN_DIR`) when the run "
                        "ends; with --dump-rollouts it lists every sample of the last step.")
    g.add_argument("--use-wandb", action="store_true",
                   help="(ours) Log every metric, the configuration and a per-step sample table "
                        "to Weights & Biases (extra `tracking`; the key from WANDB_API_KEY or "
                        "`wandb login`).")
    g.add_argument("--wandb-project", type=str, default="vime",
                   help="(ours) The wandb project.")
    g.add_argument("--wandb-group", type=str, default=None,
                   help="(ours) The wandb run group (default: none).")
    g.add_argument("--wandb-mode", choices=WANDB_MODES, default="online",
                   help="(ours) online, or offline (files under RUN_DIR/wandb, `wandb sync` "
                        "later).")
    g.add_argument("--use-tensorboard", action="store_true",
                   help="(ours) Log every metric, the configuration and sample text to "
                        "TensorBoard event files (extra `tracking`).")
    g.add_argument("--tensorboard-dir", type=str, default=None,
                   help="(ours) Folder of the TensorBoard event files (default: "
                        "RUN_DIR/tensorboard).")
    g.add_argument("--use-trackio", action="store_true",
                   help="(ours) Log every metric, the configuration and a per-step sample table "
                        "to trackio (local; extra `tracking`; project --wandb-project, folder "
                        "TRACKIO_DIR).")
