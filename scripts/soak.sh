#!/usr/bin/env bash
# The soak of docs/soak.md, run once by hand (not in the test suite; minutes):
#   1. a sweep of 200 points killed with SIGKILL at random moments five times,
#      resumed each time: exactly 200 rows, each point once, an intact DuckDB
#      file and Parquet files (experiments/soak/kill_sweep.py);
#   2. a 1 000 000-flow run of short flows (experiments/soak/million.toml): it
#      completes and conserves; its peak RSS and wall time are printed.
# Results go to results/soak-*. A small version of 1 is in the test suite
# (tests/python/test_hardening.py).
#   bash scripts/soak.sh [sweep|million]   (default: both)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what="${1:-both}"
if [ "$what" = sweep ] || [ "$what" = both ]; then
  .venv/bin/python experiments/soak/kill_sweep.py --points 200 --kills 5 --out results/soak-sweep
fi
if [ "$what" = million ] || [ "$what" = both ]; then
  rm -rf results/soak-million
  .venv/bin/pisanet run experiments/soak/million.toml --out results/soak-million -q
  .venv/bin/python - <<'PY'
import json
s = json.load(open("results/soak-million/summary.json"))
f, p = s["flows"], s["packets"]
print(f"soak million: {f['completed']:,} of {f['total']:,} flows completed, "
      f"conservation ok: {s['conservation_ok']}, packets injected {p['injected']:,}, "
      f"events {s['events']:,}, wall time {s['wall_time_s']:.1f} s, "
      f"peak RSS {s['peak_rss_mb']:.0f} MB, digest {s['digest']}")
raise SystemExit(0 if s["conservation_ok"] and f["completed"] == f["total"] else 1)
PY
fi
