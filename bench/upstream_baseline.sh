#!/bin/bash
# Upstream's scheduler-perf runner (unchanged, in-cluster flags) against a fresh `pykueue serve
# --no-job-runner`, then upstream's checker on configs/$CONFIG/rangespec.yaml.
#
#   [CONFIG=baseline|large-scale] bench/upstream_baseline.sh OUTDIR [SRC]
#
# CONFIG: upstream's config directory (default baseline). The control plane's RSS (serve and its
# controller child, summed) is sampled every 2 s into OUTDIR/rss.txt; the peak is printed.
# SRC: a src/ directory to run instead of the installed pykueue (PYTHONPATH; e.g. a `git archive`
# of another commit), for before/after runs alternating in the same minutes; a PYTHONPATH already
# set (e.g. bench/cycle_trace) stays after it.
# DIAG=1: also record every Workload watch event (bench/handoff_chains.py) and report the chains.
# TIMING=1: serve under bench/serve_timing.py (per-request answer and handler times, loop lag) into
# OUTDIR/timing.jsonl, reported in OUTDIR/timing.md.
# SOCKETS=1: every 0.25 s (`ss`), the runner's TCP connections and serve's whose receive queue holds
# bytes not read yet, and the CPU seconds so far of the runner, serve and the controller, into
# OUTDIR/sockets.txt: whether the runner keeps up with its watch streams, and serve with the
# runner's requests.
# RUNNER: another runner binary (default /tmp/kueue-runner; e.g. one built with more workers, to test
# a diagnosis). RUNNER_ARGS: extra flags for the runner (e.g. --zap-log-level=5 to log each reconcile; diagnosis).
# SPY=1: py-spy ($PYSPY, default py-spy on PATH; all threads, idle included) of the controller process,
# SPY_SECONDS (default 40) from SPY_AT (default 15) seconds after the runner starts, SPY_RATE (default 50) samples/s.
# SERVE_SPY=1: py-spy (all threads, idle included, 100 samples/s) of serve's API process for SPY_SECONDS
# (default 20) from SPY_AT (default 10) seconds after the runner starts, into OUTDIR/serve.raw; summarise
# with bench/serve_loop_profile.py.
# Needs /tmp/kueue-src (upstream's source), /tmp/kueue-runner and /tmp/kueue-checker (built from it).
set -u
R=$1; SRC=${2:-}; CONFIG=${CONFIG:-baseline}
BENCH=$(cd "$(dirname "$0")" && pwd)
rm -rf "$R"; mkdir -p "$R/out" "$R/serve"
if [ -n "$SRC" ]; then export PYTHONPATH=$SRC${PYTHONPATH:+:$PYTHONPATH}; fi
uptime > "$R/load.start"
SERVE=(-m pykueue serve)
if [ -n "${TIMING:-}" ]; then SERVE=("$BENCH/serve_timing.py" serve); export SERVE_TIMING_OUT=$R/timing.jsonl; fi
python3 "${SERVE[@]}" --port 0 --data-dir "$R/serve" --kubeconfig "$R/serve/kc" --no-job-runner > "$R/serve.log" 2>&1 &
SP=$!
echo $SP > "$R/serve.pid"
while ! grep -q "initial sync done" "$R/serve.log"; do sleep 0.5; done
if [ -n "${DIAG:-}" ]; then
  python3 "$BENCH/handoff_chains.py" record --kubeconfig "$R/serve/kc" --out "$R/events.jsonl" --seconds 900 > "$R/diag.log" 2>&1 &
  DP=$!; sleep 1
fi
if [ -n "${SPY:-}" ]; then
  CP=$(python3 -c "import sys; sys.path.insert(0, '$BENCH'); from profile_scheduler import controller_child; print(controller_child($SP))")
  (sleep ${SPY_AT:-15}; ${PYSPY:-py-spy} record -p "$CP" -d ${SPY_SECONDS:-40} -r ${SPY_RATE:-50} --idle --nonblocking -f raw -o "$R/controller.raw" > "$R/spy.log" 2>&1) &
fi
if [ -n "${SERVE_SPY:-}" ]; then
  (sleep ${SPY_AT:-10}; ${PYSPY:-py-spy} record -p "$SP" -d ${SPY_SECONDS:-20} -r 100 --idle --threads --nonblocking -f raw -o "$R/serve.raw" > "$R/serve-spy.log" 2>&1) &
fi
(while kill -0 $SP 2>/dev/null; do
   echo "$(date +%s) $(ps -o rss= --ppid $SP -p $SP | awk '{s+=$1} END {print s}')"; sleep 2
 done) > "$R/rss.txt" 2>/dev/null &
cd /tmp/kueue-src/test/performance/scheduler
START=$(date +%s%N)
# shellcheck disable=SC2086 # RUNNER_ARGS: flags, split on spaces
KUBECONFIG=$R/serve/kc "${RUNNER:-/tmp/kueue-runner}" --o "$R/out" --generatorConfig configs/$CONFIG/generator.yaml --qps=1000 --burst=2000 --timeout=30m ${RUNNER_ARGS:-} > "$R/runner.log" 2>&1 &
RP=$!
if [ -n "${SOCKETS:-}" ]; then
  (while kill -0 $RP 2>/dev/null; do
     T=$(date +%s.%N)
     echo "$T cpu $(ps -o times= -p $RP) $(ps -o times= -p $SP) $(ps -o times= --ppid $SP | head -1)"
     ss -Htnp 2>/dev/null | awk -v t="$T" -v sp="pid=$SP," '/kueue-runner/ || (index($0, sp) && $2 > 0) {print t, $2, $3, $4, $5, (index($0, sp) ? "serve" : "runner")}'; sleep 0.25
   done) > "$R/sockets.txt" &
fi
wait $RP
echo "runner exit $?" >> "$R/runner.log"
END=$(date +%s%N)
echo "wallMs: $(( (END - START) / 1000000 ))" > "$R/cmdstats.yaml"
ps -o pid,rss,cputime --ppid $SP -p $SP > "$R/ps.txt"
uptime > "$R/load.end"
if [ -n "${DIAG:-}" ]; then
  kill $DP; sleep 1
  python3 "$BENCH/handoff_chains.py" report "$R/events.jsonl" > "$R/chains.md" 2>&1
fi
kill $SP
if [ -n "${TIMING:-}" ]; then
  while kill -0 $SP 2>/dev/null; do sleep 0.5; done  # its timing is written at exit
  python3 "$BENCH/serve_timing.py" report "$R/timing.jsonl" > "$R/timing.md" 2>&1
fi
cd /tmp/kueue-src/test/performance/scheduler/checker && /tmp/kueue-checker -test.v -summary "$R/out/summary.yaml" -cmdStats "$R/cmdstats.yaml" -range ../configs/$CONFIG/rangespec.yaml > "$R/checker.txt" 2>&1
grep -E "Usage|Average|Wall|^(ok|FAIL|PASS)" "$R/checker.txt"
echo "peak control-plane RSS: $(awk '$2 > m {m = $2} END {printf "%.0f MiB", m / 1024}' "$R/rss.txt")"
