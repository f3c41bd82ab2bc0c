#!/usr/bin/env bash
# usage: scripts/synthetic_presets.sh CHECKOUT OUT_DIR
# Every synthetic preset a restructuring must not change (the critique study's presets, drift,
# poisoning, streaming, replay, repair, transfer), reduced to 1-2 task orders, run with the
# memrl_bench of CHECKOUT (its folder first on sys.path) into OUT_DIR; then compare two
# checkouts' trees with scripts/compare_episode_logs.py (BENCHMARKS.md, "Protocols, claims and
# plugins as parts").
set -euo pipefail
CODE=$1; OUT=$2
cd "$CODE"
PYTHON=${PYTHON:-python}
run() { nice -n 5 "$PYTHON" -m memrl_bench "$@" results_dir="$OUT" progress=false >> "$OUT.log" 2>&1 || { echo "FAILED: $*"; return 1; }; }
mkdir -p "$OUT"
run +experiment=critique task_order_seed=0,1 seed=0
run +experiment=critique_epsilon task_order_seed=0,1 seed=0 env.outcome_temperature=0
run +experiment=critique_softmax task_order_seed=0,1 seed=0 env.outcome_temperature=0
run +experiment=critique_fairness task_order_seed=0,1 env.outcome_temperature=0
run +experiment=critique_passk task_order_seed=0,1
run +experiment=critique_order task_order_seed=0 seed=0 env.outcome_temperature=0 'protocol.epoch_order_seeds=null,[1],[0,2]'
run +experiment=drift_methods task_order_seed=0,1 seed=0
run +experiment=poisoning seed=0
run -m experiment_name=streams method=none,rag,memrl protocol=streaming env.tasks.train=30
run -m experiment_name=streams method=none,rag,memrl protocol=replay env.tasks.train=30 protocol.replay_every=10 protocol.replay_tasks=5
run -m experiment_name=streams method=none,rag,memrl protocol=repair protocol.corrupt_share=0,0.3 protocol.epochs=3 protocol.corrupt_epochs=1
run +experiment=transfer_study
echo done
