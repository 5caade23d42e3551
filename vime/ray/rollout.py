"""``RolloutManager``: data source, hooks, engines, the rollout call, the contract check and
conversion to training data, as one Ray actor (``RolloutManagerCore`` is the plain class).

Usage::

    core = RolloutManagerCore(args)                  # tests, --single-process
    data, metrics = core.generate(rollout_id)        # data: BatchBuilder.convert columns
    metrics = core.eval(rollout_id)
    core.sync_weights("/run/weights/v000003")       # pause -> reload -> reset cache -> resume
    core.save(rollout_id); core.load(rollout_id); core.shutdown()

    manager = RolloutManager.remote(args)            # the same class as a Ray actor
    data_ref, metrics_ref = manager.generate.options(num_returns=2).remote(rollout_id)

Sequence of ``generate`` (docs/contract.md §4 "Manager sequence"): samples from
``--load-debug-rollout-data`` (``Sample.from_dict``) or ``call_rollout_fn(generate_rollout,
args, rollout_id, data_source, evaluation=False)``; the runtime contract check
(``vime.contract.checks``, per ``--contract-check``; ``perf/contract_check_time``); flatten; the
optional dump (``--save-debug-rollout-data``); ``log_rollout_data`` unless the custom logger
returns True; stop with ``--debug-rollout-only``; conversion (``BatchBuilder.convert``);
``on_accepted()``.

Follows upstream slime's ``slime/ray/rollout.py`` (the sequence and names); see ``docs/contract.md``
§4, §5 and §10.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
import warnings
from argparse import Namespace
from pathlib import Path
from typing import Any

import ray

from vime.config import arg
from vime.contract.checks.enforced import awaitable_result_problems, require
from vime.contract.checks.field_reports import record_tokenizer_facts
from vime.contract.errors import show_logged_warnings_once
from vime.contract.hooks import ENGINE_FREE_ROLLOUTS, HOOKS
from vime.data.batch_builder import BatchBuilder, flatten_samples
from vime.ray.preflight import (
    DRIVER_CWD_ENV,
    driver_cwd_on_path,
    inert_hook_warnings,
    preflight_hooks,
)
from vime.rollout.base_types import (
    RolloutFnEvalOutput,
    RolloutFnTrainOutput,
    call_rollout_fn,
    dotted_name,
)
from vime.rollout.failures import HookFailureError, too_many_failed
from vime.utils.logging_utils import BUILTIN_ROLLOUT_METRICS, eval_metrics, rollout_metrics
from vime.utils.misc import load_function
from vime.utils.types import Sample

__all__ = ["ENGINE_FREE_ROLLOUTS", "RolloutManager", "RolloutManagerCore", "create_rollout_manager",
           "load_hooks", "needs_engines"]

# ``ENGINE_FREE_ROLLOUTS`` (defined in ``vime.contract.hooks``, re-exported here): the rollout
# functions that never talk to an engine; no vLLM server is started for them (``needs_engines``).


def load_hooks(args: Namespace) -> dict[str, Any]:
    """Load and load-time-check (VIM100) every configured ``--*-path`` hook of ``HOOKS``.

    Returns:
        ``dest -> callable`` (``list`` of callables for ``multiple`` hooks) for every hook
        whose argument is set (defaults included).

    Raises:
        ContractError: a path cannot be imported or its signature breaks the contract; the
            message names the argument and the path.
    """
    loaded: dict[str, Any] = {}
    group_rm = bool(arg(args, "group_rm"))
    for dest, spec in HOOKS.items():
        value = getattr(args, dest, None)
        if not value:
            continue
        kw = {"group_rm": group_rm} if dest == "custom_rm_path" else {}
        if spec.multiple or isinstance(value, (list, tuple)):
            loaded[dest] = [load_function(p, hook=dest, **kw) for p in value]
        else:
            loaded[dest] = load_function(value, hook=dest, **kw)
    return loaded


def needs_engines(args: Namespace) -> bool:
    """False when no engine is needed: ``--no-rollout-engines``, an engine-free rollout function
    (the SFT rollout) for train and eval, or ``--debug-train-only`` with
    ``--load-debug-rollout-data``."""
    if not arg(args, "rollout_engines"):
        return False
    if arg(args, "debug_train_only") and arg(args, "load_debug_rollout_data"):
        return False
    paths = {args.rollout_function_path, arg(args, "eval_function_path")
             or args.rollout_function_path}
    return not paths <= ENGINE_FREE_ROLLOUTS


def _format_path(template: str, rollout_id: int | str) -> Path:
    return Path(template.format(rollout_id=rollout_id))


def _contract_check(output: Any, args: Namespace, *, evaluation: bool, hook_path: str,
                    rollout_id: int) -> tuple[list[Any], float]:
    """Run ``vime.contract.checks.validate_rollout_output``; returns its findings (``Violation``)
    and its time in seconds.

    The checker honours ``--contract-check`` (off / warn / raise) and
    ``--contract-check-interval`` itself; in ``raise`` mode it raises one ``ContractError``.
    """
    if arg(args, "contract_check") == "off":
        return [], 0.0
    from vime.contract.checks import validate_rollout_output

    start = time.perf_counter()
    found = validate_rollout_output(output, args, evaluation=evaluation, hook_path=hook_path,
                                    rollout_id=rollout_id,
                                    builtin_metric_keys=BUILTIN_ROLLOUT_METRICS)
    return list(found), time.perf_counter() - start


def _call_logger(fn: Any, dest: str, *call_args: Any) -> bool:
    result = fn(*call_args)
    require(awaitable_result_problems(result, HOOKS[dest].arg, dotted_name(fn)))
    return bool(result)


class RolloutManagerCore:
    """The rollout side of a run, as a plain class (the Ray actor wraps it unchanged).

    Args:
        args: the full ``argparse.Namespace`` (configuration only).
        start_engines: start (or attach to) engines when :func:`needs_engines` says so; tests
            pass False to drive a manager without any.

    Raises:
        ContractError: a hook fails to load or its signature breaks the contract (VIM100).
        EngineStartError, RouterStartError: engines or router failed to start (the log tail
            is in the message); everything started is stopped again first.
    """

    def __init__(self, args: Namespace, *, start_engines: bool = True) -> None:
        self.args = args
        self.hooks = load_hooks(args)
        for message in inert_hook_warnings(args):
            warnings.warn(message, UserWarning, stacklevel=2)
        record_tokenizer_facts(args)
        self.generate_rollout = self.hooks["rollout_function_path"]
        self.eval_rollout = self.hooks.get("eval_function_path", self.generate_rollout)
        self.rollout_hook_path = args.rollout_function_path
        self.eval_hook_path = arg(args, "eval_function_path") or args.rollout_function_path
        self.data_source = self.hooks["data_source_path"](args)
        self.engines: Any = None
        self.router: Any = None
        #: ``--dump-rollouts``: the steps written by this process (a step is written once).
        self._dumped: set[int] = set()
        #: A tracker is on: a few samples of each step for its table (``sample_table``).
        self._tracked = any(arg(args, f) for f in ("use_wandb", "use_tensorboard", "use_trackio"))
        self.sample_tables: dict[int, list[dict[str, Any]]] = {}
        if start_engines and needs_engines(args):
            self._start_engines()

    # ---- engines -------------------------------------------------------------------------

    def _start_engines(self) -> None:
        from vime.ray.engine_group import start_engines
        from vime.ray.router import router_address

        log_dir = Path(self.args.run_dir) / "logs"
        try:
            self.engines = start_engines(self.args, log_dir=log_dir)
            ip, port, self.router = router_address(self.args, self.engines.urls, log_dir=log_dir)
        except BaseException:
            self.shutdown()
            raise
        self.args.vllm_router_ip, self.args.vllm_router_port = ip, port
        if self.engines.network:   # their guards answer GET /workers off-node with 403
            self.args.vllm_engine_urls = list(self.engines.urls)

    @property
    def engine_urls(self) -> list[str]:
        """URLs of the engines (empty without engines)."""
        return list(self.engines.urls) if self.engines is not None else []

    def get_engine_urls(self) -> list[str]:
        """:attr:`engine_urls` (callable through a Ray actor handle)."""
        return self.engine_urls

    def sync_weights(self, weights_dir: str, version: int | None = None) -> float:
        """Reload every engine from ``weights_dir``: ``--custom-update-weight-post-write-path``
        first, then pause -> reload -> reset prefix cache -> tag ``version`` -> resume
        (``EngineGroup.sync_weights``: network engines through their own Ray actors).

        Args:
            weights_dir: the trainer's safetensors for this version.
            version: the weight version the engines report from now on (the train loop passes
                the number of rollout steps trained); None leaves the engines' tag as it is.

        Returns:
            Seconds spent (0.0 without engines).
        """
        if self.engines is None:
            return 0.0
        hook = self.hooks.get("custom_update_weight_post_write_path")
        if hook is not None:
            hook(self.args, weights_dir, self.engines)
        return float(self.engines.sync_weights(weights_dir, version=version))

    def weight_sync_targets(self) -> tuple[list[Any], int]:
        """``--weight-sync nccl``: the engines as the trainer reaches them
        (``vime.ray.weight_sync.EngineTarget``: vime's engines by their Ray actors, external ones
        by URL and key) and the workers per engine."""
        from vime.ray.weight_sync import EngineTarget

        if self.engines is None:
            return [], 1
        actors = self.engines.actors or [None] * len(self.engines.urls)
        targets = [EngineTarget(url=u, actor=a, api_key=self.engines.api_key)
                   for u, a in zip(self.engines.urls, actors, strict=True)]
        return targets, int(arg(self.args, "rollout_num_gpus_per_engine"))

    def set_weight_version(self, version: int) -> None:
        """Tag the engines' current weights with ``version`` (the run's first step, before any
        sync), so every sample carries a numeric ``weight_versions`` entry."""
        if self.engines is not None:
            self.engines.set_weight_version(version)

    def shutdown(self) -> None:
        """Stop the router and every engine vime started, and close the data source (idempotent;
        errors while stopping are suppressed so that every part gets its turn)."""
        if self.router is not None:
            with contextlib.suppress(Exception):
                self.router.stop()
            self.router = None
        if self.engines is not None:
            with contextlib.suppress(Exception):
                self.engines.shutdown()
            self.engines = None
        close = getattr(getattr(self, "data_source", None), "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

    # ---- rollout -------------------------------------------------------------------------

    def num_rollouts_per_epoch(self) -> int:
        """``len(data_source) // rollout_batch_size`` (prompts per epoch over groups per step).

        Raises:
            ValueError: the data source has no ``__len__`` or fewer prompts than one step.
        """
        try:
            size = len(self.data_source)
        except TypeError:
            raise ValueError(f"--num-epoch needs a data source with __len__; "
                             f"{dotted_name(type(self.data_source))} has none: use --num-rollout"
                             ) from None
        per_epoch = int(size) // int(self.args.rollout_batch_size)
        if per_epoch < 1:
            raise ValueError(f"--num-epoch: the data source has {size} prompts, fewer than one "
                             f"--rollout-batch-size={self.args.rollout_batch_size}")
        return per_epoch

    def _load_debug(self, rollout_id: int) -> RolloutFnTrainOutput:
        path = _format_path(self.args.load_debug_rollout_data, rollout_id)
        from vime.backends import checkpoint as ckpt

        if not path.is_file():
            raise FileNotFoundError(f"--load-debug-rollout-data: {path} does not exist "
                                    f"(rollout_id={rollout_id})")
        payload = ckpt.load_state(path)
        flat = [Sample.from_dict(d) for d in payload["samples"]]
        return RolloutFnTrainOutput(samples=flat)  # type: ignore[arg-type]  # flat dump

    def _check_not_training_prompts(self, output: RolloutFnEvalOutput, rollout_id: int) -> None:
        """VIM131: warn (logged once per step and dataset) when an eval dataset's samples are
        all training prompts (``data_source.training_prompts()``)."""
        if arg(self.args, "contract_check") == "off":
            return
        keys = getattr(self, "_training_prompt_keys", None)
        if keys is None:
            from vime.contract.checks.evaluation import prompt_key

            get = getattr(self.data_source, "training_prompts", None)
            prompts = get() if callable(get) else None
            keys = self._training_prompt_keys = frozenset(map(prompt_key, prompts or []))
        from vime.contract.checks.evaluation import check_vim131, eval_prompt_keys
        from vime.contract.checks.policy import enforce
        from vime.contract.checks.settings import CheckContext

        found = check_vim131(output.data, keys)
        if found:   # which cause: the rollout's eval branch, or an eval file of training prompts
            found = check_vim131(output.data, keys, eval_prompt_keys(self.data_source))
        if found:
            hook = "eval_function_path" if arg(self.args, "eval_function_path") \
                else "rollout_function_path"
            enforce(found, "warn", CheckContext(hook, self.eval_hook_path, rollout_id))

    def _dump(self, rollout_id: int | str, samples: list[Sample], **extra: Any) -> None:
        template = arg(self.args, "save_debug_rollout_data")
        if template:
            from vime.rollout.debug_data import save_debug_rollout_data

            save_debug_rollout_data(template, rollout_id, samples, **extra)

    def generate(self, rollout_id: int) -> tuple[dict[str, Any] | None, dict[str, float]]:
        """One train rollout step.

        Returns:
            ``(data, metrics)``: ``data`` is ``BatchBuilder.convert``'s columns plus
            ``total_lengths`` (None with ``--debug-rollout-only``); ``metrics`` holds the
            rollout function's metrics, ``rollout/*`` built-ins, ``perf/rollout_time`` and
            ``perf/contract_check_time`` (seconds).

        Raises:
            ContractError: the rollout output breaks the contract (VIM101, and with
                ``--contract-check raise`` the runtime checks), or conversion fails.
            HookFailureError: more than ``--max-failed-ratio`` of the step's samples FAILED
                (names the top error types with an example each).
        """
        args = self.args
        set_id = getattr(self.data_source, "set_current_rollout_id", None)
        if callable(set_id):
            set_id(rollout_id)
        start = time.perf_counter()
        check_time = 0.0
        findings: list[Any] = []
        if arg(args, "load_debug_rollout_data"):
            output = self._load_debug(rollout_id)
        else:
            result = call_rollout_fn(self.generate_rollout, args, rollout_id, self.data_source,
                                     evaluation=False)
            assert isinstance(result, RolloutFnTrainOutput)
            output = result
            findings, check_time = _contract_check(output, args, evaluation=False,
                                                   hook_path=self.rollout_hook_path,
                                                   rollout_id=rollout_id)
        rollout_time = time.perf_counter() - start - check_time
        groups: Any = output.samples
        stale_metrics: dict[str, float] = {}
        if arg(args, "async_rollout"):
            from vime.rollout.staleness import bound_staleness

            groups, stale_metrics = bound_staleness(groups, trainer_version=rollout_id,
                                                    max_staleness=arg(args, "max_staleness"))
        samples = flatten_samples(groups)
        self._dump(rollout_id, samples)
        if self._tracked:
            from vime.tracking.samples import sample_table

            self.sample_tables[rollout_id] = sample_table(args, samples)
        dump = (lambda data: self._dump_rollouts(rollout_id, output.samples, groups, findings,
                                                 samples, data)
                ) if arg(args, "dump_rollouts") else None
        try:
            return self._finish_generate(rollout_id, output, samples, stale_metrics,
                                         rollout_time, check_time, dump)
        except BaseException:
            if dump is not None:   # the failed step's samples are the ones worth seeing
                dump(None)
            raise

    def _dump_rollouts(self, rollout_id: int, returned: Any, kept: Any, findings: list[Any],
                       samples: list[Sample], data: dict[str, Any] | None) -> None:
        """``--dump-rollouts``: write the step's rows (``vime.report.dump``) once."""
        from vime.report.dump import step_rows, write_step
        from vime.report.fates import take_dropped

        if rollout_id in self._dumped:
            return
        self._dumped.add(rollout_id)
        kept_ids = {id(g) for g in kept}
        # One normalised reward per sample, in order (a custom conversion may return another
        # number of rows: then no sample's advantage is known, rather than a shifted one).
        rewards = data.get("rewards") if data is not None else None
        advantages = ({id(s): float(a) for s, a in zip(samples, rewards, strict=True)}
                      if rewards is not None and len(rewards) == len(samples) else None)
        rows = step_rows(self.args, rollout_id, returned,
                         stale=[g for g in returned if id(g) not in kept_ids],
                         dropped=take_dropped(rollout_id), findings=findings,
                         advantages=advantages)
        write_step(self.args.run_dir, rollout_id, rows, findings)

    def _finish_generate(self, rollout_id: int, output: RolloutFnTrainOutput,
                         samples: list[Sample], stale_metrics: dict[str, float],
                         rollout_time: float, check_time: float,
                         dump: Any) -> tuple[dict[str, Any] | None, dict[str, float]]:
        args = self.args
        failed_message = too_many_failed(samples, float(arg(args, "max_failed_ratio")),
                                         where=f"rollout {rollout_id}")
        if failed_message is not None:
            raise HookFailureError(failed_message)
        metrics = dict(output.metrics or {})
        metrics.update(stale_metrics)
        logger = self.hooks.get("custom_rollout_log_function_path")
        if logger is None or not _call_logger(logger, "custom_rollout_log_function_path",
                                              rollout_id, args, samples, output.metrics or {},
                                              rollout_time):
            metrics.update(rollout_metrics(args, samples, rollout_time))
        metrics["perf/rollout_time"] = rollout_time
        metrics["perf/contract_check_time"] = check_time
        if arg(args, "debug_rollout_only"):
            if dump is not None:
                dump(None)
            return None, metrics
        t_convert = time.perf_counter()
        data = BatchBuilder.convert(args, samples)
        data["total_lengths"] = [len(t) for t in data["tokens"]]
        metrics["perf/convert_time"] = time.perf_counter() - t_convert
        if dump is not None:
            t_dump = time.perf_counter()
            dump(data)
            metrics["perf/dump_rollouts_time"] = time.perf_counter() - t_dump
        if output.on_accepted is not None:
            output.on_accepted()
        return data, metrics

    def sample_table(self, rollout_id: int) -> list[dict[str, Any]]:
        """The tracker table rows of step ``rollout_id`` (``vime.tracking.samples``), handed
        out once; ``[]`` without a tracker."""
        return self.sample_tables.pop(rollout_id, [])

    def eval(self, rollout_id: int) -> dict[str, float]:
        """One eval pass (``evaluation=True``): check, dump, ``log_eval_rollout_data``.

        Returns:
            ``eval/<name>`` (mean reward), ``eval/<name>-truncated_ratio``, pass@k with
            ``--log-passrate``, the function's own metrics, ``perf/eval_time`` (seconds).
        """
        args = self.args
        if arg(args, "debug_train_only"):
            return {}
        start = time.perf_counter()
        output = call_rollout_fn(self.eval_rollout, args, rollout_id, self.data_source,
                                 evaluation=True)
        assert isinstance(output, RolloutFnEvalOutput)
        _, check_time = _contract_check(output, args, evaluation=True,
                                        hook_path=self.eval_hook_path, rollout_id=rollout_id)
        eval_time = time.perf_counter() - start - check_time
        self._check_not_training_prompts(output, rollout_id)
        flat = [s for entry in output.data.values() for s in entry.get("samples", [])]
        self._dump(f"eval_{rollout_id}", flat)
        metrics = dict(output.metrics or {})
        logger = self.hooks.get("custom_eval_rollout_log_function_path")
        if logger is None or not _call_logger(logger, "custom_eval_rollout_log_function_path",
                                              rollout_id, args, output.data, output.metrics or {}):
            metrics.update(eval_metrics(args, output.data))
        metrics["perf/eval_time"] = eval_time
        metrics["perf/eval_contract_check_time"] = check_time
        return metrics

    # ---- checkpoints ---------------------------------------------------------------------

    def save(self, rollout_id: int) -> None:
        """``data_source.save(rollout_id)`` and this process's RNG states into
        ``<save>/iter_<rollout_id>/manager_state.pt``."""
        from vime.backends import checkpoint as ckpt

        self.data_source.save(rollout_id)
        target = ckpt.iteration_dir(self.args.save, rollout_id)
        ckpt.atomic_torch_save({"rollout_id": rollout_id, "rng": ckpt.get_rng_state()},
                               target / "manager_state.pt")

    def load(self, rollout_id: int) -> None:
        """Restore what :meth:`save` wrote under ``--load`` (data source state and buffer, RNG).

        Raises:
            FileNotFoundError: ``manager_state.pt`` is missing (names the path).
            UnsafeCheckpointError: a state file holds more than plain data
                (``vime.backends.checkpoint.load_state``).
        """
        from vime.backends import checkpoint as ckpt

        path = ckpt.iteration_dir(self.args.load, rollout_id) / "manager_state.pt"
        if not path.is_file():
            raise FileNotFoundError(f"--load {self.args.load}: {path} is missing")
        self.data_source.load(rollout_id)
        ckpt.set_rng_state(ckpt.load_state(path)["rng"])

    def ping(self) -> bool:
        """True (lets a caller wait until the actor is built)."""
        return True


def _seed_process(args: Namespace) -> None:
    seed = int(arg(args, "seed"))
    random.seed(seed)
    with contextlib.suppress(ImportError):
        import numpy as np

        np.random.seed(seed % 2**32)


class _ActorCore(RolloutManagerCore):
    """The actor variant: seeds its process, keeps ``sys.path`` of the driver's cwd."""

    def __init__(self, args: Namespace) -> None:
        driver_cwd_on_path()
        _seed_process(args)
        warnings.simplefilter("default")
        show_logged_warnings_once()   # runtime findings are logged; the warning copy is not shown
        super().__init__(args)


def create_rollout_manager(args: Namespace) -> Any:
    """Start the ``RolloutManager`` Ray actor (no CPU slot: vLLM and the trainer own the cores)
    with the driver's working directory on its ``sys.path``; ``ray.init`` must have run.

    First every configured hook is imported and load-checked in a Ray worker with the same
    runtime environment (``vime.ray.preflight.preflight_hooks``).

    Raises:
        HookPreflightError: a hook does not load in the worker (path, error, worker sys.path).
    """
    env = {DRIVER_CWD_ENV: os.getcwd()}
    preflight_hooks(args, env_vars=env)
    return RolloutManager.options(runtime_env={"env_vars": env}).remote(args)


#: The Ray actor: ``RolloutManager.remote(args)``; methods as on :class:`RolloutManagerCore`.
RolloutManager: Any = ray.remote(num_cpus=0)(_ActorCore)
