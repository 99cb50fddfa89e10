#!/usr/bin/env bash
# The CPU-path benchmark matrix of BENCHMARKS.md, each scene beside Rapier, JSON per run.
#   scripts/bench_cpu.sh [OUT_DIR] [THREADS] [LANES]   (both engines get THREADS worker threads;
#   LANES, 4, 8 or 16 (default), caps signorini's SIMD lanes: 8 is what a processor without
#   AVX-512 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-benchmarks/results/cpu}
threads=${2:-1}
lanes=${3:-16}
mkdir -p "$out"
cargo build --release --example bench
label=$(git rev-parse --short HEAD)
run() {
  local name=$1; shift
  ./target/release/examples/bench --backend cpu --compare rapier --rapier-threads "$threads" --cpu-threads "$threads" --cpu-lanes "$lanes" \
    --label "$label" --json "$out/$name.json" "$@"
}
run pile-1000 --scene pile --bodies 1000 --warmup 60 --steps 60
run pile-10000 --scene pile --bodies 10000 --warmup 60 --steps 30
run large-pyramid --scene large-pyramid --warmup 30 --steps 30
run many-pyramids --scene many-pyramids --warmup 30 --steps 30
run convex-pile --scene convex-pile --warmup 60 --steps 30
# Box3D's joint benchmark runs one biased iteration a substep, as its other scenes do.
run joint-grid --scene joint-grid --iterations 1 --warmup 30 --steps 30
# 64 ragdolls: coned and twist-limited ball joints and limited hinges, on both engines.
run ragdolls-704 --scene ragdolls --bodies 704 --warmup 60 --steps 120
# The joint grid with welds (not in the benchmark set): welds on both engines.
run weld-grid --scene weld-grid --warmup 30 --steps 30
# Robot arms on motorized sliders and hinges with a hand on a universal joint (not in the
# benchmark set).
run arms --scene arms --warmup 30 --steps 30
