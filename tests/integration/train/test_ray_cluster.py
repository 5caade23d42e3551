"""--ray-address joins a running Ray cluster (a real head started by the test with `ray start`);
without it a run starts its own local cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vime.ray.engine import find_free_port

pytestmark = pytest.mark.integration

PROBE = """
import json, sys
from argparse import Namespace
import ray
from vime.ray.cluster import init_ray
joined = init_ray(Namespace(ray_address=sys.argv[1] or None))
print(json.dumps({"joined": joined, "gcs": ray.get_runtime_context().gcs_address,
                  "cpus": ray.cluster_resources().get("CPU")}))
"""


def _probe(address: str, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", PROBE, address], env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ray_head():
    """A one-CPU Ray head in its own session (killed with its process group)."""
    port = find_free_port()
    # `ray start` records its address in Ray's "current cluster" file; put the old one back
    current = Path("/tmp/ray/ray_current_cluster")
    before = current.read_text() if current.is_file() else None
    ray_bin = Path(sys.executable).with_name("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--port", str(port),
                             "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                             "--include-dashboard", "false"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:   # the GCS port answers
            assert head.poll() is None, "ray start --head exited"
            assert time.monotonic() < deadline, "the Ray head did not start in 120 s"
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        time.sleep(3)   # the raylet registers after the GCS listens
        yield port, env
    finally:
        # SIGKILL: `ray start --block` spends about 33 s in its SIGTERM handler, and the GCS,
        # raylet, dashboard and log monitor all share its process group, so none is left
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=60)
        if before is None:
            current.unlink(missing_ok=True)
        else:
            current.write_text(before)


def test_ray_address_joins_the_running_cluster(ray_head):
    port, env = ray_head
    out = _probe(f"127.0.0.1:{port}", env)
    assert out["joined"] == f"127.0.0.1:{port}"
    assert str(out["gcs"]).endswith(f":{port}")
    assert out["cpus"] == 1.0   # the head's resources, not this machine's core count


def test_without_an_address_a_run_starts_its_own_cluster(ray_head):
    port, env = ray_head
    env = {k: v for k, v in env.items() if k != "RAY_ADDRESS"}
    out = _probe("", env)
    assert out["joined"] is None
    assert not str(out["gcs"]).endswith(f":{port}")
    assert out["cpus"] == float(os.cpu_count() or 1)
