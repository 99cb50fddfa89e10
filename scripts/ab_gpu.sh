#!/usr/bin/env bash
# Before/after on one GPU: prebuilt bench binaries run by turns on the same scenes, so that each
# comparison pairs runs of one machine in one call (a GPU's clocks and a lent machine's
# neighbours move times between calls). Each run's JSON and output go to OUT_DIR, named
# SCENE-BINARY-ROUND, and a line per run gives its median, min and max (GPU timestamps where the
# adapter has them), the wall-clock median and the stages.
#   ROUNDS=2 scripts/ab_gpu.sh OUT_DIR "pile --bodies 1000" "large-pyramid" -- .gpu/bench_old .gpu/bench_new
# Scenes are `--scene` arguments, as many as wanted, before `--`; binaries after it. Every run
# uses `--backend gpu --batch 20 --warmup 60 --steps 120` and has at most LIMIT seconds (60).
set -euo pipefail
out=${1:?usage: scripts/ab_gpu.sh OUT_DIR SCENE... -- BINARY...}
shift
scenes=()
while (($# > 0)) && [[ $1 != -- ]]; do
  scenes+=("$1")
  shift
done
[[ ${1:-} == -- ]] || { echo "usage: scripts/ab_gpu.sh OUT_DIR SCENE... -- BINARY..." >&2; exit 2; }
shift
bins=("$@")
((${#scenes[@]} > 0 && ${#bins[@]} > 0)) || { echo "need at least one scene and one binary" >&2; exit 2; }
rounds=${ROUNDS:-1}
limit=${LIMIT:-60}
mkdir -p "$out"

for round in $(seq 1 "$rounds"); do
  for scene in "${scenes[@]}"; do
    for bin in "${bins[@]}"; do
      name="$(echo "$scene" | tr -d ' -')-$(basename "$bin")-$round"
      rc=0
      # shellcheck disable=SC2086 # a scene is several arguments
      timeout -k 10 "$limit" "$bin" --label "$(basename "$bin")" --scene $scene --backend gpu --batch 20 \
        --warmup 60 --steps 120 --json "$out/$name.json" > "$out/$name.txt" 2>&1 || rc=$?
      times=$(grep -E '^signorini/gpu' "$out/$name.txt" | awk '{print $2, $3, $4}' || true)
      wall=$(grep -o 'wall clock median [0-9.]*' "$out/$name.txt" || true)
      stages=$(grep '^stages' "$out/$name.txt" | cut -d: -f2 || true)
      echo "$name rc=$rc $times | $wall |$stages"
    done
  done
done
