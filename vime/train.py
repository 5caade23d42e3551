"""``vime train``: rollout -> contract check -> train -> save -> weight sync -> eval, per step.

Usage::

    $ vime train --config run.yaml --num-rollout 20
    $ vime train --hf-checkpoint M --prompt-data sft.jsonl --rollout-batch-size 8 \\
        --rollout-function-path vime.rollout.sft_rollout.generate_rollout --loss-type sft_loss \\
        --num-rollout 10 --save ckpt --save-interval 5 --run-dir runs/sft

With ``--early-stop-metric M --early-stop-threshold X`` the loop ends (checkpoint included) once
the mean of ``M`` over the last ``--early-stop-window`` steps reaches ``X``; for example an SFT
warm-up that stops once greedy decoding reproduces 30 % of the training batches
(``train/greedy_match``).

Exit status: 0 done; 1 a ``ContractError`` (its message printed, no traceback) or another
error; 2 bad arguments (an unknown ``--early-stop-metric`` included) or a checkpoint file that
is not plain data (``UnsafeCheckpointError``, one line); 130 Ctrl-C; 143
SIGTERM. Engines are stopped on every exit. The first Ctrl-C or SIGTERM stops the run after
the current step, the second at once, and one during start-up (before the first step) at once;
either way the last finished step is checkpointed first (with ``--save``). ``vime train`` runs
this driver under :mod:`vime.supervisor`, in a session of its own: a signal to the whole
process group reaches it once, and Ray's processes and the engines not at all.

The loop order follows upstream slime's ``slime/train.py``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from argparse import Namespace
from typing import Any

from vime.config import arg
from vime.ray.handles import Local, Remote, resolve
from vime.utils.stop_signals import (
    PHASE,
    STOP_REQUEST,
    STOP_SIGNALS,
    Terminated,
    stop_after_this_step,
    stop_status,
)
from vime.utils.train_errors import report_error

__all__ = ["early_stop", "main", "run"]


def _mark_driver() -> None:
    """Before Ray starts: ``VIME_RUN_ID`` (the run's marker, inherited by every process of
    the run) and ``VIME_DRIVER`` (this process, watched by the engines' reapers:
    ``vime.ray.reaper``)."""
    from vime.ray.reaper import DRIVER_ENV, driver_marker
    from vime.supervisor import run_id

    run_id()
    os.environ[DRIVER_ENV] = driver_marker()


def _trainer_first(args: Namespace, *, gpu_engines: bool) -> bool:
    """Whether :func:`_start` creates the trainer before it waits for the rollout manager
    (whose engines start in its constructor), so that the trainer's start (torch, the model)
    and the engines' start run at the same time.

    Args:
        args: the run's arguments (``--single-process``, ``--debug-rollout-only``,
            ``--num-rollout``, ``--train-device``).
        gpu_engines: the manager starts engines that take GPUs (vLLM's GPU build, not
            ``--rollout-external-engine-addrs``).

    Returns:
        False (the manager first, as before) in process (nothing runs concurrently there),
        without a trainer, when ``--num-rollout`` is not given (the trainer's step count needs
        the manager's ``num_rollouts_per_epoch``), and for a GPU trainer next to GPU engines:
        both then wait for the same GPUs, and with too few of them the engines placed first
        leave the trainer ranks' placement group to time out with a message naming the
        resources, where the other order would leave the engines waiting with none. True
        otherwise: the trainer's cores (:func:`vime.ray.cores.core_split`) and its actor's
        environment are computed from ``args`` alone, the same in either order.
    """
    if args.single_process or args.debug_rollout_only or args.num_rollout is None:
        return False
    return not (gpu_engines and str(arg(args, "train_device")).startswith("cuda"))


def _start(args: Namespace) -> tuple[Any, Any]:
    """The rollout manager and the trainer, in process or as Ray actors; the trainer is
    created before the manager's engines are up when :func:`_trainer_first` says so, and
    stopped again (its actor killed) when the manager then fails to start."""
    from vime.backends.trainer import Trainer
    from vime.ray.cores import is_vllm_cpu
    from vime.ray.rollout import RolloutManagerCore, create_rollout_manager, needs_engines
    from vime.ray.trainer_actor import create_trainer_actor
    from vime.ray.trainer_group import create_trainer_group, num_trainer_ranks

    if (not args.single_process or needs_engines(args)):
        import ray

        from vime.ray.cluster import init_ray

        if not ray.is_initialized():
            # the address joined (--ray-address or RAY_ADDRESS), kept for the actors: their
            # environment is their node's, not this shell's (vime.ray.cores decides by it)
            args.ray_address = init_ray(args)
            stop_after_this_step()

    def remote_trainer(total: int) -> Any:
        if num_trainer_ranks(args) > 1:   # --actor-num-nodes x --actor-num-gpus-per-node
            return create_trainer_group(args, total_steps=total)
        return Remote(create_trainer_actor(args, total_steps=total))

    manager: Local | Remote
    trainer: Any = None
    if args.single_process:
        manager = Local(RolloutManagerCore(args))
    else:
        manager = Remote(create_rollout_manager(args))
        gpu_engines = (needs_engines(args) and not arg(args, "rollout_external_engine_addrs")
                       and not is_vllm_cpu())
        if _trainer_first(args, gpu_engines=gpu_engines):
            trainer = remote_trainer(args.num_rollout * args.num_steps_per_rollout)
        try:
            manager.call("ping")
        except BaseException:
            if trainer is not None:   # no leaked trainer actor or ranks' placement group
                trainer.close(timeout=0)
            raise
    if args.num_rollout is None:
        args.num_rollout = args.num_epoch * manager.call("num_rollouts_per_epoch")
    total = args.num_rollout * args.num_steps_per_rollout
    if args.debug_rollout_only or trainer is not None:
        return manager, trainer
    if args.single_process:
        trainer = Local(Trainer(args, total_steps=total))
    else:
        trainer = remote_trainer(total)
    return manager, trainer


def run(args: Namespace) -> int:
    """The training loop on parsed arguments; returns the exit status (see module doc)."""
    from vime.backends import checkpoint as ckpt
    from vime.ray.weight_sync import weight_sync_for
    from vime.tracking import TrackerMissingError, Trackers
    from vime.utils.logging_utils import MetricsLog, TrainProgress, print_summary

    os.makedirs(args.run_dir, exist_ok=True)
    # one clock for the progress line's elapsed and the summary's time: since the run began
    log, t_run = MetricsLog(args.run_dir), time.monotonic()
    manager = trainer = None
    try:
        trackers = Trackers.from_args(args)   # --use-wandb / --use-tensorboard / --use-trackio
    except TrackerMissingError as exc:
        print(f"vime train: {exc}", file=sys.stderr)
        return 2
    ahead: tuple[int, Any, Any] | None = None   # (rollout id, data, metrics): refs or values
    last_done: int | None = None  # last rollout step whose optimiser step finished
    last_saved: int | None = None  # last step whose checkpoint is marked complete
    files_saved: int | None = None  # last step whose checkpoint files are written
    unlogged: tuple[int, dict[str, Any]] | None = None  # a trained step's unwritten metrics
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    STOP_REQUEST.clear()
    PHASE["loop"] = False
    _mark_driver()
    try:
        stop_after_this_step()
        manager, trainer = _start(args)
        trackers.log_config(args)
        engines = bool(manager.call("get_engine_urls"))
        weight_sync = weight_sync_for(args)   # --weight-sync disk (default) or nccl

        def sync(version: int) -> float:
            # version = rollout steps trained; the engines tag their samples with it
            if not engines or trainer is None:
                return 0.0
            return weight_sync.push(trainer, manager, version)

        # --async-rollout: the rollout of step k + 1 is generated while step k trains (the
        # manager actor runs its calls in order, so the weight sync after step k waits for it)
        overlap = bool(arg(args, "async_rollout")) and trainer is not None
        start = args.start_rollout_id or 0
        loaded = ckpt.latest_iteration(args.load)
        if args.load and loaded is None:
            print(f"vime train: no checkpoint under {args.load}: starting from step {start}",
                  flush=True)
        if loaded is not None:
            if trainer is not None:
                trainer.call("load", args.load, loaded)
            manager.call("load", loaded)
            start = loaded + 1
            ahead = _resumed_ahead(args, loaded, start, overlap=overlap)
            sync(start)
        elif engines and arg(args, "rollout_external_engine_addrs") and trainer is not None:
            # an engine vime did not start may serve other weights than the trainer holds (an
            # earlier run's on the same server): it gets the trainer's before the first rollout
            sync(start)
        elif engines:
            manager.call("set_weight_version", start)
        dropped = log.drop_from(start if loaded is None else loaded + 1)
        if dropped:
            print(f"vime train: {log.path}: dropped the lines of {dropped} steps from step "
                  f"{start if loaded is None else loaded + 1} on, written after the checkpoint "
                  "this run resumes from: they are trained and written again", flush=True)
        watched: list[float] = []  # --early-stop-metric, one value per step that logged it
        stop_reason = ""
        with TrainProgress.for_args(args, total=args.num_rollout, start=start,
                                    run_started=t_run) as progress:
            if args.eval_interval and not args.skip_eval_before_train:
                progress.doing(f"evaluating before step {start + 1}")
                trackers.log(log.write(start, manager.call("eval", start)))
            PHASE["loop"] = True
            t_loop = time.monotonic()
            for rollout_id in range(start, args.num_rollout):
                if STOP_REQUEST:
                    break
                t0 = time.perf_counter()
                step = f"step {rollout_id + 1}/{args.num_rollout}"
                progress.doing(f"{step}: rollout")
                if trainer is None:
                    _, metrics = manager.call("generate", rollout_id)
                else:
                    _, data, metrics_ref = ahead or (
                        rollout_id, *manager.call("generate", rollout_id, num_returns=2))
                    metrics = resolve(metrics_ref)
                    ahead = ((rollout_id + 1, *manager.call("generate", rollout_id + 1,
                                                            num_returns=2))
                             if overlap and rollout_id + 1 < args.num_rollout else None)
                    progress.doing(f"{step}: training")
                    metrics.update(trainer.call("train", rollout_id, data))
                    save_now = args.save and (rollout_id + 1 == args.num_rollout or (
                        args.save_interval and (rollout_id + 1) % args.save_interval == 0))
                    last_done, unlogged = rollout_id, (rollout_id, metrics)
                    if save_now:   # marked complete below, once the step's metrics are written
                        progress.doing(f"{step}: saving a checkpoint")
                        _save(args, trainer, manager, rollout_id, ahead, mark=False)
                        files_saved = rollout_id
                    progress.doing(f"{step}: weight sync")
                    metrics["perf/weight_sync_time"] = sync(rollout_id + 1)
                if args.eval_interval and (rollout_id + 1) % args.eval_interval == 0:
                    progress.doing(f"{step}: evaluating")
                    metrics.update(manager.call("eval", rollout_id))
                try:
                    stop_reason = early_stop(args, metrics, watched)
                except ValueError as exc:
                    print(f"vime train: {exc}", file=sys.stderr)
                    return 2
                if stop_reason and args.save and trainer is not None and files_saved != rollout_id:
                    _save(args, trainer, manager, rollout_id, ahead, mark=False)
                    files_saved = rollout_id
                metrics["perf/step_time"] = time.perf_counter() - t0
                trackers.log(log.write(rollout_id, metrics))
                unlogged = None
                if files_saved == rollout_id:   # after the metrics line: a resume has no gap
                    ckpt.mark_complete(args.save, rollout_id)
                    last_saved = rollout_id
                if trackers.tables:
                    trackers.log_samples(rollout_id, manager.call("sample_table", rollout_id))
                progress.advance(rollout_id, metrics)
                if stop_reason:
                    print(f"vime train: stopped after step {rollout_id} ({rollout_id + 1 - start} "
                          f"steps done): {stop_reason}",
                          flush=True)
                    break
        if STOP_REQUEST:
            terminated = STOP_REQUEST["signum"] == signal.SIGTERM
            _stopped(args, trainer, manager, last_done, last_saved, terminated, ahead,
                     log=log, unlogged=unlogged)
            return stop_status(terminated)
        print_summary(log.records, args.run_dir, wall_time=time.monotonic() - t_run,
                      loss_type=args.loss_type, watch=[args.early_stop_metric or ""],
                      startup=t_loop - t_run)
        return 0
    except Exception as exc:
        return report_error(args, exc)
    except KeyboardInterrupt as exc:  # raised by a rollout, or a second Ctrl-C/SIGTERM
        terminated = isinstance(exc, Terminated) or (
            STOP_REQUEST.get("signum") == signal.SIGTERM)
        _stopped(args, trainer, manager, last_done, last_saved, terminated, ahead,
                 log=log, unlogged=unlogged)
        return stop_status(terminated)
    finally:
        PHASE["loop"] = False
        trackers.close()
        if arg(args, "report"):
            _write_report(args)
        if manager is not None:
            manager.close()
        close = getattr(trainer, "close", None)
        if trainer is not None and not isinstance(trainer, (Local, Remote)) and close:
            close()   # trainer ranks: their placement group holds one CPU or GPU per rank
        if threading.current_thread() is threading.main_thread():
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _write_report(args: Namespace) -> None:
    """``--report``: write ``RUN_DIR/report.html`` (``vime report``); a failure to write it is
    said on stderr and does not change the run's exit status."""
    from vime.report.html import write_report

    try:
        path = write_report(args.run_dir)
    except Exception as exc:   # the run's own outcome matters more than its report
        print(f"vime train: --report: could not write the report: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return
    print(f"vime train: report: {path}", flush=True)


def _stopped(args: Namespace, trainer: Any, manager: Any, last_done: int | None,
             last_saved: int | None, terminated: bool,
             ahead: tuple[int, Any, Any] | None = None, *, log: Any = None,
             unlogged: tuple[int, dict[str, Any]] | None = None) -> None:
    """Say why the run stopped and checkpoint the last finished step (with ``--save``); with
    ``--async-rollout`` also the rollout generated ahead, unless the stop interrupted it (then
    its prompts are skipped on resume, and the message says so). ``unlogged``: a trained
    step whose metrics line the stop cut off, ``(rollout_id, metrics so far)``; written to
    ``log`` (a ``MetricsLog``) before the checkpoint is marked complete."""
    print(f"vime train: {'terminated (SIGTERM)' if terminated else 'interrupted'}",
          file=sys.stderr)
    if args.save and trainer is not None and last_done is not None and last_done != last_saved:
        if log is not None and unlogged is not None and unlogged[0] == last_done:
            log.write(*unlogged)
        if ahead is not None and ahead[0] == last_done + 1:
            try:
                ahead = (ahead[0], _peek(ahead[1]), _peek(ahead[2]))
            except Exception as exc:   # the stop interrupted the rollout generated ahead
                print(f"vime train: rollout {ahead[0]}, generated ahead, did not finish "
                      f"({type(exc).__name__}); a resume skips its prompts", file=sys.stderr)
                ahead = None
        _save(args, trainer, manager, last_done, ahead)
        print(f"vime train: saved a checkpoint of step {last_done} under {args.save}",
              file=sys.stderr)


def early_stop(args: Namespace, metrics: dict[str, Any], watched: list[float]) -> str:
    """``--early-stop-metric``: append this step's value to ``watched``; return why training
    should stop now (mean of the last ``--early-stop-window`` values >= the threshold), or "".

    Raises:
        ValueError: the metric is not among the step's metrics (a typo would otherwise train
            to the end silently); ``eval/`` metrics may be missing on steps without an eval.
    """
    name = arg(args, "early_stop_metric")
    if not name:
        return ""
    if name not in metrics:
        if name.startswith("eval/"):
            return ""
        known = ", ".join(sorted(k for k in metrics if isinstance(metrics[k], (int, float))))
        raise ValueError(f"--early-stop-metric {name}: this run logs no such metric; "
                         f"it logs: {known}")
    watched.append(float(metrics[name]))
    window = int(args.early_stop_window)
    if len(watched) < window:
        return ""
    mean = sum(watched[-window:]) / window
    if mean < float(args.early_stop_threshold):
        return ""
    return (f"mean {name} over the last {window} values {mean:.3f} >= "
            f"--early-stop-threshold {args.early_stop_threshold:g}")


def _save(args: Namespace, trainer: Any, manager: Any, rollout_id: int,
          ahead: tuple[int, Any, Any] | None = None, *, mark: bool = True) -> None:
    """Checkpoint model, optimiser, scheduler and data source for ``rollout_id``, then mark
    the iteration complete (a resume only loads complete iterations); ``mark=False`` leaves the
    mark to the caller, which writes the step's metrics line first. With ``--async-rollout``
    the rollout generated ahead (``ahead``: its id, data and metrics, refs or values) is saved
    too: its prompts are gone from the data source, and a resumed run trains on it first,
    as the uninterrupted run would have. Waiting for it costs nothing: the weight sync after
    this step waits for the same rollout."""
    from vime.backends import checkpoint as ckpt

    trainer.call("save", rollout_id)
    manager.call("save", rollout_id)
    if ahead is not None and ahead[0] == rollout_id + 1:
        ahead_id, data, metrics = ahead
        ckpt.save_ahead_rollout(args.save, rollout_id, ahead_id, _peek(data), _peek(metrics))
    if mark:
        ckpt.mark_complete(args.save, rollout_id)


def _resumed_ahead(args: Namespace, loaded: int, start: int, *,
                   overlap: bool) -> tuple[int, Any, Any] | None:
    """The rollout an overlapped run generated ahead of checkpoint ``loaded`` (trained first
    on resume), or None. A synchronous resume of such a checkpoint regenerates from the data
    source's saved state, which is past that rollout's prompts: said, not silent."""
    from vime.backends import checkpoint as ckpt

    saved = ckpt.load_ahead_rollout(args.load, loaded)
    if saved is None or saved[0] != start:
        return None
    if overlap:
        print(f"vime train: resuming with rollout {start}, generated ahead before the "
              f"checkpoint of step {loaded}", flush=True)
        return saved
    print(f"vime train: the checkpoint of step {loaded} holds rollout {start}, generated "
          f"ahead by --async-rollout; without --async-rollout it is not trained and its "
          f"{len(saved[1].get('tokens', []))} samples' prompts are skipped (the data source "
          f"is past them)", file=sys.stderr, flush=True)
    return None


def _peek(value: Any) -> Any:
    """``ray.get`` for an ``ObjectRef`` (the ref stays usable), else the value itself."""
    if "ray" in sys.modules:
        import ray

        if isinstance(value, ray.ObjectRef):
            return ray.get(value)
    return value


def main(argv: list[str] | None = None) -> int:
    """``vime train ARGS``: parse (``--config FILE.yaml`` included), run, return the status."""
    from vime.utils.quiet_env import apply_quiet_env

    apply_quiet_env()
    from vime.contract.errors import show_logged_warnings_once

    show_logged_warnings_once()   # runtime findings are logged; the warning copy is not shown
    from vime.config import parse_args
    from vime.config.inputs import check_inputs

    try:
        args = parse_args(argv)
        check_inputs(args)   # missing files, a model folder without config.json, ... : exit 2
    except NotImplementedError as exc:
        print(f"vime train: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    try:
        return run(args)
    finally:
        if "ray" in sys.modules:
            import ray

            if ray.is_initialized():
                ray.shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
