"""Ctrl-C during a run: a clean exit (130, one line) and no result file."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from _support import TINY, assert_one_line_error, cli_env

# Long enough to be interrupted mid-run on any machine (many seconds of simulation).
LONG = TINY.replace("flows = 50", "flows = 200000").replace(
    "max_sim_time_ms = 200", "max_sim_time_ms = 100000"
)


def test_sigint_stops_the_run_cleanly(tmp_path: Path) -> None:
    config = tmp_path / "long.toml"
    config.write_text(LONG)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pisanet", "run", str(config), "--out", "res"],
        cwd=tmp_path,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # NOTE: a shell without job control starts background jobs with SIGINT
        # ignored, and Python then installs no handler; restore the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # NOTE: importing pandas and friends takes a while; give the run time to start.
    time.sleep(4.0)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5, "the run did not stop promptly"
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    line = assert_one_line_error(result, code=130)
    assert "interrupted" in line
    assert not (tmp_path / "res").exists()
