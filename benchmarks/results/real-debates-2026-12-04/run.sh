#!/bin/bash
# Import every non-empty gsm/mmlu file, then eval each file under v1 and v2.
set -u
export COUNCIL_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/council_realdebates COUNCIL_REDIS_URL=redis://127.0.0.1:6379/7
C=/work/wt/realdebates/.venv/bin/council
GSM=$(cat /tmp/realdebates/gsm.pattern); MMLU=$(cat /tmp/realdebates/mmlu.pattern)
cd /tmp/realdebates/files
rm -rf ../eval; mkdir -p ../eval
for f in *.json; do
  [ -s "$f" ] || { echo "EMPTY $f"; continue; }
  case $f in *_gsm_*) args=(--answer-pattern "$GSM" --numeric);; *) args=(--answer-pattern "$MMLU");; esac
  s=$(date +%s.%N); $C import "$f" --format du-debate "${args[@]}" --json > ../eval/$f.import 2>&1; rc=$?
  m=$(date +%s.%N); $C eval --tag "file:$f" --rule-set council-default-v1 --rule-set council-default-v2 --json > ../eval/$f 2>../eval/$f.err; rc2=$?
  e=$(date +%s.%N); echo "$rc $rc2 import $(echo "$m - $s" | bc)s eval $(echo "$e - $m" | bc)s $f"
done
