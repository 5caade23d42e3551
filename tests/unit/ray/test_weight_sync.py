"""``--weight-sync``: the disk default, and the NCCL requests (built without a GPU and checked
against vLLM's own weight transfer dataclasses); ``nccl`` is refused on the CPU with a message
that names the flag and the alternative. The NCCL transfer itself needs GPUs and is not run in
CI (docs/en/training.md, "Weight sync")."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest
import torch

from vime.config import parse_args
from vime.ray.cores import is_vllm_cpu
from vime.ray.engine_command import build_server_command
from vime.ray.engine_group import _weight_transfer_backend
from vime.ray.weight_sync import (
    TIED_HEAD,
    DiskWeightSync,
    EngineFanoutClient,
    EngineTarget,
    NcclWeightSync,
    engine_init_payloads,
    finish_payload,
    make_source,
    parameter_metadata,
    update_payload,
    weight_sync_for,
)

pytestmark = pytest.mark.unit

BASE = ["--rollout-batch-size", "1", "--num-rollout", "1"]


def test_disk_is_the_default_and_nccl_is_chosen_by_the_flag(tmp_path) -> None:
    assert isinstance(weight_sync_for(parse_args(BASE + ["--run-dir", str(tmp_path)])),
                      DiskWeightSync)
    args = Namespace(weight_sync="nccl", run_dir=str(tmp_path))
    assert isinstance(weight_sync_for(args), NcclWeightSync)


def test_nccl_is_refused_with_a_cpu_trainer(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(BASE + ["--weight-sync", "nccl"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --weight-sync: nccl" in err and "--train-device cuda" in err
    assert "--weight-sync disk" in err
    assert parse_args(BASE + ["--weight-sync", "nccl", "--train-device", "cuda"]).weight_sync \
        == "nccl"


@pytest.mark.skipif(not is_vllm_cpu(), reason="the refusal is for the CPU build of vLLM")
def test_nccl_is_refused_on_vllm_cpu() -> None:
    with pytest.raises(ValueError, match=r"--weight-sync nccl .*vllm-cpu.*--weight-sync disk"):
        _weight_transfer_backend(Namespace(weight_sync="nccl"))
    assert _weight_transfer_backend(Namespace(weight_sync="disk")) is None


def test_nccl_engines_get_the_weight_transfer_config() -> None:
    from vllm.config import WeightTransferConfig

    cmd = build_server_command("/m", 1, weight_transfer="nccl", tensor_parallel_size=2)
    config = json.loads(cmd[cmd.index("--weight-transfer-config") + 1])
    assert WeightTransferConfig(**config).backend == "nccl"
    assert cmd[cmd.index("--tensor-parallel-size") + 1] == "2"
    assert "--weight-transfer-config" not in build_server_command("/m", 1)
    assert build_server_command("/m", 1, tensor_parallel_size=2,
                                extra_args=["--tensor-parallel-size", "4"]).count(
        "--tensor-parallel-size") == 1


def test_each_engine_gets_its_own_ranks_in_one_group() -> None:
    from vllm.distributed.weight_transfer.nccl_common import NCCLWeightTransferInitInfo

    payloads = engine_init_payloads(3, 2, master_address="10.0.0.1", master_port=29555)
    assert [p["rank_offset"] for p in payloads] == [1, 3, 5]
    assert {p["world_size"] for p in payloads} == {7}
    for p in payloads:   # what vLLM's /init_weight_transfer_engine parses
        info = NCCLWeightTransferInitInfo(**p)
        assert (info.master_address, info.master_port, info.packed) == ("10.0.0.1", 29555, True)
    with pytest.raises(ValueError, match="0 engine"):
        engine_init_payloads(0, 1, master_address="a", master_port=1)


class _Tied(torch.nn.Module):
    def __init__(self, tie: bool) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(11, 4)
        self.norm = torch.nn.LayerNorm(4)
        self.lm_head = torch.nn.Linear(4, 11, bias=False)
        if tie:
            self.lm_head.weight = self.embed.weight

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.lm_head


def test_update_info_sends_the_tied_head_explicitly() -> None:
    from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferUpdateInfo

    model = _Tied(tie=True)
    names = [n for n, _ in model.named_parameters()]
    assert TIED_HEAD not in names   # the pitfall: a tied head is listed once, as embed
    meta = parameter_metadata(list(model.named_parameters()), tied_head=model.lm_head.weight)
    assert [m[0] for m in meta] == [*names, TIED_HEAD]
    assert meta[-1] == (TIED_HEAD, "float32", [11, 4])
    body = update_payload(meta)
    info = NCCLWeightTransferUpdateInfo(**body["update_info"])   # vLLM's own check
    assert info.names[-1] == TIED_HEAD and info.shapes[-1] == [11, 4]
    untied = _Tied(tie=False)
    meta = parameter_metadata(list(untied.named_parameters()), tied_head=untied.lm_head.weight)
    assert [m[0] for m in meta].count(TIED_HEAD) == 1   # an untied head is sent once


def test_the_source_agrees_with_its_metadata_and_yields_the_head() -> None:
    model = _Tied(tie=True)
    source = make_source(model)
    meta = source.metadata()
    pairs = list(source)
    assert [m.name for m in meta] == [n for n, _ in pairs]
    assert [tuple(t.shape) for _, t in pairs] == [m.shape for m in meta]
    assert pairs[-1][0] == TIED_HEAD and torch.equal(pairs[-1][1], model.embed.weight)


def test_finish_carries_the_version_as_text() -> None:
    assert finish_payload(4) == {"weight_version": "4"}
    assert finish_payload(None) is None


def test_the_fanout_client_rewrites_each_engines_rank_offset() -> None:
    sent: list[tuple[str, str, dict | None]] = []

    class _Client(EngineFanoutClient):
        def _each(self, bodies):   # record instead of calling engines
            sent.extend((t.url, route, body) for t, (route, body) in
                        zip(self.targets, bodies, strict=True))

    client = _Client([EngineTarget(url="http://a:1"), EngineTarget(url="http://b:2")], 1)
    client.init_weight_transfer_engine({"master_address": "m", "master_port": 7, "rank_offset": 1,
                                        "world_size": 3, "packed": True})
    assert [(u, b["init_info"]["rank_offset"]) for u, _, b in sent] == [("http://a:1", 1),
                                                                         ("http://b:2", 2)]
    sent.clear()
    client.finish_weight_update("5")
    assert [r for _, r, _ in sent] == ["/finish_weight_update"] * 2
    assert sent[0][2] == {"weight_version": "5"}
