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


def _import_seconds() -> float:
    """How long the front end takes to import here and now (a loaded machine
    takes several times longer than an idle one)."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import pisanet.cli"], env=cli_env(), check=True)
    return time.monotonic() - t0


def test_sigint_stops_the_run_cleanly(tmp_path: Path) -> None:
    config = tmp_path / "long.toml"
    config.write_text(LONG)
    # NOTE: the signal must come once the run is under way, not during the
    # imports; wait three times what they take now.
    wait = max(4.0, 3 * _import_seconds())
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
    time.sleep(wait)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    # The loop checks for a stop every 65536 events: well under a second on
    # an idle machine; the bound leaves room for a loaded one.
    assert time.monotonic() - sent < 20, "the run did not stop promptly"
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    line = assert_one_line_error(result, code=130)
    assert "interrupted" in line
    assert not (tmp_path / "res").exists()
