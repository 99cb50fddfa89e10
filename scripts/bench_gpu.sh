#!/usr/bin/env bash
# The GPU runs that BENCHMARKS.md and the benchmark targets ask for, each run's JSON in OUT_DIR:
# box piles from 1,000 to 1,000,000 bodies, the large pyramid, many pyramids, the convex pile
# and the particle bowl on the GPU path (batches of 30 steps per submission), then the pile of
# 100,000 on the CPU path beside Rapier, both on 16 threads (the "20x Rapier on 16 cores"
# target). It runs a prebuilt bench binary, since the lent GPU machine has no Rust toolchain:
#   cargo build --release --examples                       # here
#   LABEL=<commit> scripts/bench_gpu.sh OUT_DIR [BENCH]    # there (see ../shared/gpu/README.md)
# `--quick` as the third argument runs every scene small and short (a smoke test on any adapter).
set -euo pipefail
out=${1:?usage: scripts/bench_gpu.sh OUT_DIR [BENCH_BINARY] [--quick]}
bin=${2:-target/release/examples/bench}
quick=${3:-}
label=${LABEL:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$out"

# run NAME ARGS...: one bench run, its JSON in OUT_DIR/NAME.json and its table on stdout.
run() {
  local name=$1
  shift
  echo "== $name"
  "$bin" --label "$label" --json "$out/$name.json" "$@"
}

if [[ $quick == --quick ]]; then
  gpu=(--backend gpu --batch 5 --warmup 5 --steps 10)
  run pile-1000 --scene pile --bodies 1000 "${gpu[@]}"
  run large-pyramid --scene pyramid --bodies 20 "${gpu[@]}"
  run particle-bowl-10000 --scene particle-bowl --bodies 10000 "${gpu[@]}"
  run cpu-pile-1000-vs-rapier --scene pile --bodies 1000 --backend cpu --cpu-threads 2 \
    --compare rapier --rapier-threads 2 --warmup 5 --steps 5
else
  gpu=(--backend gpu --batch 30)
  for n in 1000 10000 100000 1000000; do
    run "pile-$n" --scene pile --bodies "$n" "${gpu[@]}" --warmup 60 --steps 60
  done
  run large-pyramid --scene large-pyramid "${gpu[@]}" --warmup 60 --steps 120
  run many-pyramids --scene many-pyramids "${gpu[@]}" --warmup 60 --steps 120
  run convex-pile --scene convex-pile "${gpu[@]}" --warmup 60 --steps 60
  for n in 100000 1000000; do
    run "particle-bowl-$n" --scene particle-bowl --bodies "$n" "${gpu[@]}" --warmup 30 --steps 30
  done
  run cpu-pile-100000-vs-rapier --scene pile --bodies 100000 --backend cpu --cpu-threads 16 \
    --compare rapier --rapier-threads 16 --warmup 60 --steps 20
fi

# The medians, one line per run (the JSON holds everything else).
echo "== ms per step (median), $label"
for f in "$out"/*.json; do
  ms=$(grep -o '"ms_per_step_median": *[0-9.e+-]*' "$f" | head -1 | sed 's/.*: *//')
  rapier=$(grep -o '"ms_per_step_median": *[0-9.e+-]*' "$f" | sed -n 2p | sed 's/.*: *//')
  adapter=$(grep -o '"adapter": *"[^"]*"' "$f" | head -1 | sed 's/.*: *//')
  echo "$(basename "$f" .json) $ms ${rapier:+(rapier $rapier)} $adapter"
done
