# shellcheck shell=bash
# Helpers shared by the shell scripts in bench/ (sourced, not run), as bench/lib/benchlib.py is
# by the Python ones:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib/benchlib.sh"
#
# STORLAB_DEFAULT is the storlab binary the scripts run unless told otherwise: $STORLAB_BIN if
# set, else this checkout's target/release/storlab.

BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck disable=SC2034 # read by the scripts that source this file
STORLAB_DEFAULT="${STORLAB_BIN:-$BENCH_ROOT/target/release/storlab}"

# need_storlab PATH MESSAGE [STATUS]: exits with STATUS (2) and MESSAGE on stderr unless PATH
# is an executable file.
need_storlab() {
  [ -x "$1" ] || {
    echo "$2" >&2
    exit "${3:-2}"
  }
}

# The 1, 5 and 15 minute load averages, as /proc/loadavg prints them.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# ratio_ci NAME PEER "A1 A2 ..." "B1 B2 ...": storlab's figures A against the peer's B, round by
# round: the geometric mean of A/B with its 95% interval and whether it holds 1 (benchlib.py's
# ratio_line, one definition for every bench).
ratio_ci() {
  PYTHONPATH="$BENCH_ROOT/bench/lib" PYTHONDONTWRITEBYTECODE=1 python3 -c '
import sys
from benchlib import ratio_line
a, b = ([float(x) for x in s.split()] for s in sys.argv[3:5])
print(ratio_line(sys.argv[1], a, b, sys.argv[2]))
' "$@"
}
