"""--ray-address joins a running Ray cluster (a real head started by the test with `ray start`,
token authentication on); without it a run starts its own local cluster, with a per-run token.
A process without the token is refused over the machine's own address and over 127.0.0.1; one
with it joins and runs a task."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vime.ray.auth import write_token
from vime.ray.engine_command import find_free_port

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


#: A stranger's process: a plain ray.init at the address, then one task.
JOIN = """
import os, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
print("ran as uid", ray.get(ray.remote(lambda: os.getuid()).remote()))
"""

#: A local cluster started by vime (init_ray without an address), kept until stdin closes.
LOCAL = """
import json, os, stat, sys
from argparse import Namespace
import ray
from vime.ray.cluster import init_ray
init_ray(Namespace(ray_address=None, run_dir=sys.argv[1]))
path = os.environ["RAY_AUTH_TOKEN_PATH"]
print(json.dumps({"gcs": ray.get_runtime_context().gcs_address, "token_path": path,
                  "mode": stat.S_IMODE(os.stat(path).st_mode)}), flush=True)
sys.stdin.read()
"""


def _probe(address: str, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", PROBE, address], env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _stranger_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process without the run's token (its own empty HOME, so no
    ~/.ray/auth_token either)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")}
    return {**env, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0", **extra}


def _join(address: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", JOIN, address], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_node(ray_bin: Path, port: int, env: dict[str, str], head: subprocess.Popen[bytes],
                   deadline: float) -> None:
    """Poll ``ray status`` until the head's raylet has registered its one CPU with the GCS
    (the GCS port answers a few seconds before that)."""
    while True:
        assert head.poll() is None, "ray start --head exited"
        status = subprocess.run([str(ray_bin), "status", "--address", f"127.0.0.1:{port}"],
                                env=env, capture_output=True, text=True, timeout=60)
        if status.returncode == 0 and "/1.0 CPU" in status.stdout:
            return
        assert time.monotonic() < deadline, (
            f"the Ray head's node did not register in time:\n{status.stdout[-800:]}"
            f"{status.stderr[-800:]}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory):
    """A one-CPU Ray head in its own session with token authentication, in a private temporary
    folder (its sockets, logs and "current cluster" file; the machine's /tmp/ray is not
    touched), killed with its process group; yields its port and the environment that carries
    its token."""
    port = find_free_port()
    token = tmp_path_factory.mktemp("head_token") / "token"
    write_token(token)
    # short: Ray's socket paths under it must stay within the 107 bytes of a Unix socket name
    temp_dir = Path(tempfile.mkdtemp(prefix="vray", dir="/tmp"))
    ray_bin = Path(sys.executable).with_name("ray")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN_PATH": str(token)}
    head = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--port", str(port),
                             "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                             "--include-dashboard", "false", "--temp-dir", str(temp_dir)],
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
        _wait_for_node(ray_bin, port, env, head, deadline)
        # `ray start` recorded its address in the private folder, not in /tmp/ray
        assert (temp_dir / "ray_current_cluster").read_text().strip().endswith(f":{port}")
        yield port, env
    finally:
        # SIGKILL: `ray start --block` spends about 33 s in its SIGTERM handler, and the GCS,
        # raylet, dashboard and log monitor all share its process group, so none is left
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=60)
        shutil.rmtree(temp_dir, ignore_errors=True)


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


def test_joining_without_any_token_is_one_line(ray_head, tmp_path):
    port, _ = ray_head
    proc = subprocess.run([sys.executable, "-c", PROBE, f"127.0.0.1:{port}"],
                          env=_stranger_env(tmp_path), capture_output=True, text=True, timeout=180)
    assert proc.returncode != 0
    assert "joining a Ray cluster needs its token" in proc.stderr
    assert "RAY_AUTH_TOKEN_PATH" in proc.stderr


def test_a_process_without_the_token_cannot_join_a_vime_cluster(tmp_path):
    """The probe of the attack: a local cluster started by vime (token auth by default) is
    joined over the machine's own address, once with no authentication at all, once with a
    wrong token (both refused), then with the run's token (joins and runs a task)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS")}
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    local = subprocess.Popen([sys.executable, "-c", LOCAL, str(run_dir)], text=True,
                             env={**env, "HOME": str(tmp_path), "RAY_USAGE_STATS_ENABLED": "0"},
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert local.stdout is not None
        info = json.loads(local.stdout.readline())
        assert info["token_path"] == str(run_dir / "ray_auth_token")
        assert info["mode"] == 0o600
        # the address Ray advertises: the machine's own network address (docs/environment.md)
        address = str(info["gcs"])
        port = address.rsplit(":", 1)[1]
        home = tmp_path / "stranger"
        home.mkdir()
        # both refusals run at once: Ray retries the GCS connection for about 20 s each
        strangers = [_join(address, _stranger_env(home)),
                     _join(f"127.0.0.1:{port}", _stranger_env(
                         home, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64))]
        outs = [p.communicate(timeout=180) for p in strangers]
        for proc, (out, err) in zip(strangers, outs, strict=True):
            assert proc.returncode != 0, out
            assert "ran as uid" not in out
            assert "Failed to connect to Ray cluster" in err or "Authentication" in err, err[-800:]
        friend = _join(address, _stranger_env(home, RAY_AUTH_MODE="token",
                                              RAY_AUTH_TOKEN_PATH=info["token_path"]))
        out, err = friend.communicate(timeout=180)
        assert friend.returncode == 0, err[-2000:]
        assert "ran as uid" in out
    finally:
        if local.stdin is not None:
            local.stdin.close()
        try:
            local.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(local.pid, signal.SIGKILL)
            local.wait(timeout=30)
