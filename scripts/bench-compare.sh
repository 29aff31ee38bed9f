#!/usr/bin/env bash
# Paired speed comparison of two builds of the example runner (or any two
# commands that print pisanet's summary.json on standard output).
#
#   scripts/bench-compare.sh [-n RUNS] [-w WARMUP] [-a SET] [-b SET] [-d] NEW_BIN OLD_BIN CONFIG [key=value ...]
#
# -a SET / -b SET (repeatable): a key=value override for NEW only / OLD only,
# after the common ones. With the same binary twice this compares two
# settings in one build, e.g. the PISA model against the reference:
#   scripts/bench-compare.sh -a scheme.kind=ecmp -b scheme.kind=ecmp_native \
#       target/release/examples/run target/release/examples/run CONFIG
#
# Runs NEW and OLD alternately (NEW OLD NEW OLD ...) on the same config and
# overrides, after WARMUP unpaired runs of each, so that a drift in the
# machine's speed hits both alike; takes the ratio NEW/OLD pair by pair, for
# the CPU time (user + system, the kernel's accounting of the finished
# child) and the wall time, and prints each ratio's median with its min and
# max. A ratio below 1 means NEW is faster. Also checks that both builds give
# the same digest (a speed-up that changes results is not one) and prints
# packet-hops per CPU second. -d allows different digests (a change that
# reorders events on purpose, e.g. issue 18's keyed event order): the work
# then differs too, so it also prints each build's events and packet-hops
# and the ratio of CPU time per event; show the results are statistically
# the same separately. Uses python3's standard library only.
#
# Build the runner with: cargo build --release -p pisanet --example run
# (target/release/examples/run). See docs/performance.md.
set -euo pipefail
runs=5
warmup=1
sets_a=""
sets_b=""
digests=same
while getopts "n:w:a:b:d" opt; do
    case $opt in
        n) runs=$OPTARG ;;
        w) warmup=$OPTARG ;;
        a) sets_a="$sets_a $OPTARG" ;;
        b) sets_b="$sets_b $OPTARG" ;;
        d) digests=differ ;;
        *) echo "usage: $0 [-n RUNS] [-w WARMUP] [-a SET] [-b SET] [-d] NEW_BIN OLD_BIN CONFIG [key=value ...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 3 ]; then
    echo "usage: $0 [-n RUNS] [-w WARMUP] [-a SET] [-b SET] [-d] NEW_BIN OLD_BIN CONFIG [key=value ...]" >&2
    exit 2
fi
exec python3 - "$runs" "$warmup" "$sets_a" "$sets_b" "$digests" "$@" <<'PY'
import json, os, re, statistics, subprocess, sys, time

runs, warmup = int(sys.argv[1]), int(sys.argv[2])
only = {"new": sys.argv[3].split(), "old": sys.argv[4].split()}
allow_differ = sys.argv[5] == "differ"
new, old, config, *sets = sys.argv[6:]


def once(binary, which):
    """One run: (cpu seconds, wall seconds, summary dict)."""
    t0 = time.monotonic()
    args = [binary, config, *sets, *only[which]]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{binary} exited with {os.waitstatus_to_exitcode(status)}")
    text = out.decode()
    # The runner prints summary.json; keep from its first '{'.
    summary = json.loads(text[text.index("{"):])
    return ru.ru_utime + ru.ru_stime, wall, summary


for _ in range(warmup):
    once(new, "new")
    once(old, "old")
rows = []
for i in range(runs):
    a, b = once(new, "new"), once(old, "old")
    if a[2].get("digest") != b[2].get("digest") and not allow_differ:
        sys.exit(f"digests differ: {a[2].get('digest')} (new) vs {b[2].get('digest')} (old)")
    rows.append((a, b))
    print(f"pair {i + 1}: cpu {a[0]:.3f} / {b[0]:.3f} s = {a[0] / b[0]:.3f}, "
          f"wall {a[1]:.3f} / {b[1]:.3f} s = {a[1] / b[1]:.3f}", file=sys.stderr)


def spread(xs):
    return f"{statistics.median(xs):.3f} (min {min(xs):.3f}, max {max(xs):.3f}, n {len(xs)})"


hops = rows[0][0][2].get("packet_hops", 0)
print(f"config: {config} {' '.join(sets)}")
if only["new"] or only["old"]:
    print(f"new only: {' '.join(only['new'])}; old only: {' '.join(only['old'])}")
if allow_differ:
    a0, b0 = rows[0][0][2], rows[0][1][2]
    print(f"digest: new {a0.get('digest')}, old {b0.get('digest')} (-d: may differ)")
    print(f"events: new {a0.get('events')}, old {b0.get('events')}; "
          f"packet-hops: new {a0.get('packet_hops')}, old {b0.get('packet_hops')}")
    print("cpu per event ratio new/old: " + spread(
        [(a[0] / a[2]["events"]) / (b[0] / b[2]["events"]) for a, b in rows]))
else:
    print(f"digest: {rows[0][0][2].get('digest')} (same for both)")
    print(f"events: {rows[0][0][2].get('events')}, packet-hops: {hops}")
print(f"cpu  ratio new/old: {spread([a[0] / b[0] for a, b in rows])}")
print(f"wall ratio new/old: {spread([a[1] / b[1] for a, b in rows])}")
print(f"speed-up old/new (cpu): {spread([b[0] / a[0] for a, b in rows])}")
print(f"packet-hops per cpu second: new {hops / statistics.median(a[0] for a, _ in rows):,.0f}, "
      f"old {hops / statistics.median(b[0] for _, b in rows):,.0f}")
PY
