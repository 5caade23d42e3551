"""The trainer actor's torch threads (every core, the trainer's share with --async-rollout, split
between CPU ranks), its OpenMP wait policy, and the split of the cores between the engines and
the trainer of an overlapped CPU run (vime.ray.cores)."""

from __future__ import annotations

import os
from argparse import Namespace

import pytest

from vime.ray.cores import is_vllm_cpu
from vime.ray.trainer_actor import trainer_threads

pytestmark = pytest.mark.unit


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch):
    """Pretend the machine has ``n`` cores, all usable by this process (os.cpu_count and
    os.sched_getaffinity), with no placement set by the environment."""
    for name in ("RAY_ADDRESS", "VLLM_CPU_OMP_THREADS_BIND", "OMP_NUM_THREADS",
                 "OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)

    def set_cores(n: int) -> None:
        monkeypatch.setattr(os, "cpu_count", lambda: n)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)))
    return set_cores


# (cores, synchronous, overlapped, overlapped on a joined cluster, 2 ranks): fixed values, not
# the implementation's formula recomputed on this host
THREADS = [(1, 1, 1, 1, 1), (2, 2, 1, 1, 1), (5, 5, 3, 4, 2), (8, 8, 4, 7, 4)]


@pytest.mark.parametrize(("cores", "sync", "overlapped", "joined", "two_ranks"), THREADS)
def test_trainer_threads_on_fixed_core_counts(host, monkeypatch: pytest.MonkeyPatch, cores: int,
                                              sync: int, overlapped: int, joined: int,
                                              two_ranks: int):
    assert is_vllm_cpu()   # the embedded default this suite runs on
    host(cores)
    assert trainer_threads(Namespace(async_rollout=False)) == sync
    # overlapped on vllm-cpu: the trainer's half of the split (the engines get cores // 2)
    assert trainer_threads(Namespace(async_rollout=True)) == overlapped
    assert trainer_threads(Namespace(async_rollout=True), gpus=1) == sync  # a GPU trainer
    assert trainer_threads(Namespace(async_rollout=False), ranks=2) == two_ranks
    assert trainer_threads(Namespace(async_rollout=False), ranks=4 * cores) == 1
    # a joined cluster: no split (the trainer may be on another node), all but one core
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert trainer_threads(Namespace(async_rollout=True)) == joined


def test_no_cpu_count_means_one_thread(host, monkeypatch: pytest.MonkeyPatch):
    host(1)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert trainer_threads(Namespace(async_rollout=False)) == 1


def test_a_cpu_trainer_actor_waits_passively(host, monkeypatch: pytest.MonkeyPatch):
    """OpenMP's spin-waiting made Trainer.train 5-10x slower in the actor on a busy 2-core
    machine; the actor gets OMP_WAIT_POLICY=PASSIVE unless the driver sets a policy."""
    from vime.ray.trainer_actor import trainer_env

    host(6)
    sync = Namespace(async_rollout=False)
    assert trainer_env(sync) == {"OMP_NUM_THREADS": "6", "OMP_WAIT_POLICY": "PASSIVE"}
    assert trainer_env(sync, gpus=1) == {"OMP_NUM_THREADS": "6"}
    assert trainer_env(sync, ranks=4) == {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert trainer_env(sync)["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")   # the driver's own value wins
    assert trainer_env(sync)["OMP_NUM_THREADS"] == "3"


def test_a_run_without_engines_spins_briefly_before_its_workers_sleep(
        host, monkeypatch: pytest.MonkeyPatch):
    """PASSIVE alone put the OpenMP worker to sleep at every parallel region (1,232 sleeps
    and wake-ups per step of the demo's SFT shape) and slowed the SFT stage; a run without
    engines (the SFT rollout) gets a bounded spin first, a run with engines (the default
    rollout, the case PASSIVE was measured for) keeps a spin count of 0."""
    from vime.config import parse_args
    from vime.ray.trainer_actor import ENGINE_FREE_SPINCOUNT, trainer_env

    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    host(2)
    sft = parse_args(["--rollout-batch-size", "1", "--num-rollout", "1", "--hf-checkpoint", "m", "--prompt-data", "d.jsonl", "--loss-type",
                      "sft_loss", "--rollout-function-path",
                      "vime.rollout.sft_rollout.generate_rollout"])
    assert trainer_env(sft) == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE",
                                "GOMP_SPINCOUNT": ENGINE_FREE_SPINCOUNT}
    assert int(ENGINE_FREE_SPINCOUNT) < 300_000   # bounded, below libgomp's default
    assert "GOMP_SPINCOUNT" not in trainer_env(sft, gpus=1)
    grpo = parse_args(["--rollout-batch-size", "1", "--num-rollout", "1", "--hf-checkpoint", "m", "--prompt-data", "d.jsonl"])
    assert trainer_env(grpo) == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    no_engines = parse_args(["--rollout-batch-size", "1", "--num-rollout", "1", "--hf-checkpoint", "m", "--prompt-data", "d.jsonl",
                             "--no-rollout-engines"])
    assert trainer_env(no_engines)["GOMP_SPINCOUNT"] == ENGINE_FREE_SPINCOUNT
    monkeypatch.setenv("GOMP_SPINCOUNT", "5")   # the driver's spin count is inherited as it is
    assert "GOMP_SPINCOUNT" not in trainer_env(sft)
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")   # a policy the user chose: no spin added
    assert trainer_env(sft) == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}


# ---- the core split of an overlapped CPU run (vime.ray.cores) -----------------------------

def _overlapped(**kw: object) -> Namespace:
    base = dict(async_rollout=True, train_device="cpu", rollout_external_engine_addrs=None,
                ray_address=None)
    return Namespace(**{**base, **kw})


@pytest.fixture
def no_placement_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAY_ADDRESS", "VLLM_CPU_OMP_THREADS_BIND", "OMP_NUM_THREADS",
                 "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_placement_env")
def test_overlapped_cpu_run_gives_the_engines_half_the_cores_and_the_trainer_the_rest():
    from vime.ray.cores import CoreSplit, core_split

    assert core_split(_overlapped(), cores=[1, 0]) == CoreSplit(engine=(0,), trainer=(1,))
    four = core_split(_overlapped(), cores=range(4))
    assert four == CoreSplit(engine=(0, 1), trainer=(2, 3))
    assert four is not None and (four.engine_bind, four.trainer_env) == ("0,1", "2,3")
    assert core_split(_overlapped(), cores=[0, 2, 5]) == CoreSplit(engine=(0,), trainer=(2, 5))


@pytest.mark.usefixtures("no_placement_env")
@pytest.mark.parametrize("case", ["synchronous", "gpu trainer", "external engines",
                                  "joined cluster", "one core"])
def test_nothing_is_pinned_where_the_split_does_not_apply(case: str):
    from vime.ray.cores import core_split

    args, cores = {"synchronous": (_overlapped(async_rollout=False), [0, 1]),
                   "gpu trainer": (_overlapped(train_device="cuda"), [0, 1]),
                   "external engines": (_overlapped(rollout_external_engine_addrs=["h:1"]),
                                        [0, 1]),
                   "joined cluster": (_overlapped(ray_address="10.0.0.1:6379"), [0, 1]),
                   "one core": (_overlapped(), [3])}[case]
    assert core_split(args, cores=cores) is None


@pytest.mark.usefixtures("no_placement_env")
def test_a_users_own_vllm_binding_is_kept(monkeypatch: pytest.MonkeyPatch):
    from vime.ray.cores import core_split

    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    assert core_split(_overlapped(), cores=[0, 1]) is None
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    assert core_split(_overlapped(), cores=[0, 1]) is None


@pytest.mark.usefixtures("no_placement_env")
def test_the_overlapped_trainer_actor_gets_its_cores_and_threads(monkeypatch: pytest.MonkeyPatch):
    from vime.ray.cores import TRAINER_CORES_ENV
    from vime.ray.trainer_actor import trainer_env

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    env = trainer_env(_overlapped())
    assert env == {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE",
                   TRAINER_CORES_ENV: "2,3"}
    assert trainer_env(_overlapped(), ranks=2)["OMP_NUM_THREADS"] == "1"
    assert TRAINER_CORES_ENV not in trainer_env(_overlapped(async_rollout=False))


_REPORT_AFFINITY = """
import os, threading
from vime.ray.cores import pin_from_env
before = threading.Thread(target=lambda: None)
pinned = pin_from_env()
seen = []
after = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
after.start(); after.join()
print(list(pinned), sorted(os.sched_getaffinity(0)), seen[0])
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to one")
def test_pin_from_env_pins_the_process_and_the_threads_it_starts():
    import subprocess
    import sys

    from vime.ray.cores import TRAINER_CORES_ENV

    last = max(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", _REPORT_AFFINITY], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, TRAINER_CORES_ENV: str(last)}).stdout.split("]")
    assert [part.strip(" [\n") for part in out[:3]] == [str(last)] * 3


def test_a_malformed_trainer_cores_value_names_the_variable(monkeypatch: pytest.MonkeyPatch):
    from vime.ray.cores import TRAINER_CORES_ENV, pin_from_env

    monkeypatch.setenv(TRAINER_CORES_ENV, "1;2")
    with pytest.raises(ValueError, match=r"VIME_TRAINER_CORES='1;2': expected core ids"):
        pin_from_env()
    monkeypatch.setenv(TRAINER_CORES_ENV, "")
    assert pin_from_env() == ()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to pin to one")
def test_an_engine_with_cores_starts_on_them_with_vllms_binding():
    """The server process is restricted before exec (its EngineCore and worker inherit it),
    and its worker's OpenMP threads bind to the same cores."""
    import functools
    import subprocess
    import sys

    from vime.ray.engine import VLLMServer, _set_pdeathsig

    first = min(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, check=True,
                         preexec_fn=functools.partial(_set_pdeathsig, (first,))).stdout
    assert out.strip() == f"[{first}]"
    server = VLLMServer("/models/tiny", cores=(0, 1))
    assert server.env["VLLM_CPU_OMP_THREADS_BIND"] == "0,1"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in VLLMServer("/models/tiny").env
