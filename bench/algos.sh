#!/usr/bin/env bash
# PPO vs A2C vs DQN on MVC: the same step budget on sample_graphs/small, then zero-shot eval
# (cover size against greedy-max-degree) on a 10,000-node BA graph and the 250k sample graph.
# Usage: bench/algos.sh [STEPS]   (results: bench/RESULTS.md, "PPO vs A2C vs DQN on MVC")
set -euo pipefail
STEPS=${1:-8000}
GT=${GT:-.venv/bin/graphtransfer}
OUT=${OUT:-runs/bench-algos}
mkdir -p "$OUT/$STEPS"
[ -f "$OUT/ba10k.npz" ] || $GT graphs generate --nodes 10000 --m 4 --seed 3 "$OUT/ba10k.npz"
for algo in ppo a2c dqn; do
  uptime
  /usr/bin/time -f "train $algo: %e s wall, %M KiB max RSS" \
    $GT train --task mvc --graphs small --algo "$algo" --steps "$STEPS" --no-progress --out "$OUT/$STEPS/$algo"
done
for algo in ppo a2c dqn; do
  for graphs in "$OUT/ba10k.npz" large; do
    uptime
    echo "== eval $algo ($STEPS steps) on $graphs"
    $GT eval --model "$OUT/$STEPS/$algo" --graphs "$graphs" --rollouts 1
  done
done
uptime
