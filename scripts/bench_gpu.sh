#!/usr/bin/env bash
# The GPU runs that BENCHMARKS.md and the benchmark targets ask for, each run's JSON in OUT_DIR:
# box piles from 1,000 to 1,000,000 bodies, the large pyramid, many pyramids, the convex pile,
# the joint grid, 64 ragdolls and the particle bowl on the GPU path, then the pile of
# 100,000 on the CPU path beside Rapier, both on 16 threads (the "20x Rapier on 16 cores"
# target). It runs a prebuilt bench binary, since the lent GPU machine has no Rust toolchain:
#   cargo build --release --examples                       # here
#   LABEL=<commit> scripts/bench_gpu.sh OUT_DIR [BENCH]    # there (see ../shared/gpu/README.md)
# `--quick` as the third argument runs every scene small and short (a smoke test on any adapter).
# Each run has a time limit (the machine's time is short); the full set's limits add up to 580 s,
# under the 600 s one command may run on the lent machine (its runs took 90 s on an H200).
set -euo pipefail
out=${1:?usage: scripts/bench_gpu.sh OUT_DIR [BENCH_BINARY] [--quick]}
bin=${2:-target/release/examples/bench}
quick=${3:-}
label=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$out"

# run NAME LIMIT ARGS...: one bench run of at most LIMIT seconds, its JSON in OUT_DIR/NAME.json
# and its table on stdout. A run that fails or runs out of time is reported and the rest go on:
# device time is short, and one scene's fault should not cost the others' figures.
run() {
  local name=$1 limit=$2
  shift 2
  echo "== $name ($(date +%T))"
  local rc=0
  timeout -k 10 "$limit" "$bin" --label "$label" --json "$out/$name.json" "$@" || rc=$?
  if ((rc != 0)); then echo "!! $name failed with status $rc (124: over its $limit s)"; fi
}

if [[ $quick == --quick ]]; then
  gpu=(--backend gpu --batch 5 --warmup 5 --steps 10)
  run pile-1000 120 --scene pile --bodies 1000 "${gpu[@]}" --profile-dispatches 2 --dispatch-costs
  run large-pyramid 120 --scene pyramid --bodies 20 "${gpu[@]}"
  run particle-bowl-10000 120 --scene particle-bowl --bodies 10000 "${gpu[@]}"
  run joint-grid 120 --scene joint-grid --iterations 1 "${gpu[@]}"
  run ragdolls 120 --scene ragdolls --bodies 44 "${gpu[@]}"
  run cpu-pile-1000-vs-rapier 120 --scene pile --bodies 1000 --backend cpu --cpu-threads 2 \
    --compare rapier --rapier-threads 2 --warmup 5 --steps 5
else
  # The targets' scenes first, so that a run cut short still has them. Batches of 20 steps:
  # the timestamps time each batch's last step, so 120 steps give six samples. The targets'
  # scenes then profile three more steps by dispatch (`dispatch_profile` in their JSON); the
  # first also measures what a dispatch and a scan cost (`dispatch_costs`).
  gpu=(--backend gpu --batch 20)
  profile=(--profile-dispatches 3)
  run pile-1000 40 --scene pile --bodies 1000 "${gpu[@]}" --warmup 60 --steps 120 "${profile[@]}" --dispatch-costs
  run large-pyramid 40 --scene large-pyramid "${gpu[@]}" --warmup 60 --steps 120 "${profile[@]}"
  run pile-100000 50 --scene pile --bodies 100000 "${gpu[@]}" --warmup 60 --steps 120 "${profile[@]}"
  run pile-1000000 80 --scene pile --bodies 1000000 "${gpu[@]}" --warmup 60 --steps 60
  run cpu-pile-100000-vs-rapier 80 --scene pile --bodies 100000 --backend cpu --cpu-threads 16 \
    --compare rapier --rapier-threads 16 --warmup 60 --steps 20
  run pile-10000 40 --scene pile --bodies 10000 "${gpu[@]}" --warmup 60 --steps 120
  run many-pyramids 40 --scene many-pyramids "${gpu[@]}" --warmup 60 --steps 120
  run convex-pile 40 --scene convex-pile "${gpu[@]}" --warmup 60 --steps 120
  run joint-grid 40 --scene joint-grid --iterations 1 "${gpu[@]}" --warmup 60 --steps 120
  run ragdolls-704 30 --scene ragdolls --bodies 704 "${gpu[@]}" --warmup 60 --steps 120
  for n in 100000 1000000; do
    run "particle-bowl-$n" 50 --scene particle-bowl --bodies "$n" "${gpu[@]}" --warmup 30 --steps 60
  done
fi

# The medians, one line per run (the JSON holds everything else).
echo "== ms per step (median), $label"
for f in "$out"/*.json; do
  ms=$(grep -o '"ms_per_step_median": *[0-9.e+-]*' "$f" | head -1 | sed 's/.*: *//' || true)
  rapier=$(grep -o '"ms_per_step_median": *[0-9.e+-]*' "$f" | sed -n 2p | sed 's/.*: *//' || true)
  adapter=$(grep -o '"adapter": *"[^"]*"' "$f" | head -1 | sed 's/.*: *//' || true)
  echo "$(basename "$f" .json) $ms ${rapier:+(rapier $rapier)} $adapter"
done
