"""The benchmark's CPU accounting (bench/cpu.py) charges a server's whole process tree to it."""

import os
import signal
import subprocess
import sys
import time

import pytest

from bench import cpu

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A "server" whose work happens in a child process, as uvicorn's does in its workers: the child
# burns 0.4 s of CPU, then idles until it is stopped.
BURN = "import time\nstarted = time.process_time()\nwhile time.process_time() - started < 0.4: pass\ntime.sleep(30)"
SERVER = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN!r}])"


def test_a_servers_workers_cpu_is_charged_to_the_server_not_to_the_driver():
    server = subprocess.Popen([sys.executable, "-c", SERVER], start_new_session=True)
    try:
        meter = cpu.Meter(server.pid).start()
        deadline = time.monotonic() + 10
        use = meter.stop(requests=1)
        while use.server_ms < 400 and time.monotonic() < deadline:  # the worker may start late
            time.sleep(0.1)
            use = meter.stop(requests=1)
        assert 380 <= use.server_ms < 2000, use
        assert use.driver_ms < 200, use  # this process only waited
        per_two = meter.stop(requests=2)
        assert per_two.server_ms == pytest.approx(use.server_ms / 2, rel=0.2)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(10)
