#!/bin/bash
# `affidavit check --engine ray` with the shipped verifier, killed with SIGKILL once half its
# shards are done, then started again with the same OUT; compared with the single-process run.
# Usage: benchmarks/check_kill_resume.sh DIR  (DIR holds pairs.jsonl and check-one_process.jsonl,
# as left by `benchmarks/scale.py --sizes --check-pairs 400 --work DIR`)
set -u
cd "$1"
export OMP_NUM_THREADS=2
AFF=${AFF:-affidavit}
rm -rf kill.jsonl kill.jsonl.shards
t0=$(date +%s)
nice -n 10 $AFF check pairs.jsonl -o kill.jsonl --engine ray --workers 2 --shard-size 25 > kill1.log 2>&1 &
pid=$!
while true; do
  n=$(ls kill.jsonl.shards/*.json 2>/dev/null | grep -vc manifest)
  if [ "$n" -ge 8 ]; then break; fi
  if ! kill -0 $pid 2>/dev/null; then echo "driver ended early"; break; fi
  sleep 2
done
echo "killing driver $pid after $n of 16 shards ($(( $(date +%s) - t0 ))s)"
kill -9 $pid
sleep 5
echo "shard marks left: $(ls kill.jsonl.shards/*.json | grep -vc manifest)"
t1=$(date +%s)
nice -n 10 $AFF -v check pairs.jsonl -o kill.jsonl --engine ray --workers 2 --shard-size 25 > kill2.log 2>&1
echo "rerun rc=$? in $(( $(date +%s) - t1 ))s; $(grep -i resuming kill2.log)"
cmp kill.jsonl check-one_process.jsonl && echo "IDENTICAL to the single-process output"
