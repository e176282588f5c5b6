"""Helpers shared by the Python scripts in bench/ (imported, not run).

A script finds this folder next to itself:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import benchlib

STORLAB is the storlab binary the scripts run: $STORLAB_BIN if set, else this checkout's
target/release/storlab.
"""
import collections
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

# The repository: bench/lib/benchlib.py -> bench/lib -> bench -> the checkout.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORLAB = os.environ.get("STORLAB_BIN") or os.path.join(ROOT, "target", "release", "storlab")

# A finished child: its output, its user + system CPU seconds and its wall-clock seconds.
Child = collections.namedtuple("Child", "stdout stderr cpu wall")


def run_child(cmd, env=None, exit_on_failure=False, tail=None, cwd=None):
    """Runs cmd to its end, its output captured (text), and returns a Child.

    cwd: where it runs (a tool that writes beside itself, as DLIO's hydra_log/ and
    checkpoints/, is given the bench's temporary folder, never the checkout).

    cpu is the child's user + system time (getrusage of the children, before and after: the
    same measure for every tool), wall the seconds from start to exit. When cmd fails: with
    exit_on_failure, the script exits with the command and its output (the last `tail`
    characters of each stream, all of it without tail); else subprocess.CalledProcessError
    (with stdout and stderr), as subprocess.run(check=True) raises it.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        if exit_on_failure:
            cut = (lambda s: s[-tail:]) if tail else (lambda s: s)
            sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{cut(out.stdout)}\n{cut(out.stderr)}")
        raise subprocess.CalledProcessError(out.returncode, cmd, out.stdout, out.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Child(out.stdout, out.stderr, cpu, wall)


def need_storlab(build="cargo build --release"):
    """Exits with a hint unless the storlab binary exists."""
    if not os.path.exists(STORLAB):
        if os.environ.get("STORLAB_BIN"):
            sys.exit(f"STORLAB_BIN={STORLAB}: no such file")
        sys.exit(f"build storlab first: {build}")


def storlab_run(study, results, prefix=()):
    """`storlab run STUDY --json -q --results RESULTS` (after PREFIX, e.g. chrt): returns the
    first run of its JSON, the Child and the command line (a list)."""
    cmd = list(prefix) + [STORLAB, "run", study, "--json", "-q", "--results", results]
    child = run_child(cmd)
    return json.loads(child.stdout)[0], child, cmd


def loadavg():
    """The 1, 5 and 15 minute load averages, as /proc/loadavg prints them."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def mean(xs):
    """The arithmetic mean of numbers."""
    return sum(xs) / len(xs)


def mean_of(runs, keys):
    """The mean of each of keys over runs (dicts): a dict."""
    return {k: mean([r[k] for r in runs]) for k in keys}


def ratio_line(name, a, b, peer):
    """storlab/peer per round (a[i] / b[i]), the geometric mean and its 95% t interval over
    rounds, and whether the interval holds 1."""
    logs = [math.log(x / y) for x, y in zip(a, b) if x > 0 and y > 0]
    if len(logs) < 2:
        one = math.exp(logs[0]) if logs else float("nan")
        return f"  {name}: storlab/{peer} {one:.3f} (one round: no interval)"
    m, se = statistics.mean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
    t = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776}.get(len(logs), 2.262)
    lo, hi = math.exp(m - t * se), math.exp(m + t * se)
    verdict = ("no difference beyond the noise" if lo <= 1 <= hi
               else ("storlab higher" if lo > 1 else "storlab lower"))
    return f"  {name}: storlab/{peer} {math.exp(m):.3f} (95% CI {lo:.3f}-{hi:.3f}): {verdict}"
