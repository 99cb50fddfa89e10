#!/usr/bin/env bash
# Device side of a GPU session, in one `run` call on the lent machine (carry [".gl", ".gpu"],
# prepared here with scripts/build_ab.sh and ../shared/gpu/prepare.sh):
#   bash scripts/device_ab.sh "pile --bodies 1000" large-pyramid -- .gpu/bench-A .gpu/bench-B
# It unpacks the loader packages, points Vulkan at the NVIDIA driver, records the GPU, runs
# scripts/ab_gpu.sh over the scenes and binaries given (ROUNDS and LIMIT as there), then, with
# MATRIX_BIN set, scripts/bench_gpu.sh with that binary (LABEL names its commit). Everything
# lands under /tmp/gpu and is packed into $OUT/gpu.tgz every ten seconds, so a call cut off at
# its time limit still brings back what it had.
# SMOKE=1 tries the whole flow on this machine's adapter instead (no loader packages, no
# NVIDIA driver; the matrix in its --quick form): OUT=$(mktemp -d) SMOKE=1 LIMIT=120
# MATRIX_BIN=.gpu/bench-B bash scripts/device_ab.sh "pile --bodies 100" -- .gpu/bench-A .gpu/bench-B
set -uo pipefail
: "${OUT:?run this through the device tool, which sets OUT}"
smoke=${SMOKE:-}
if [[ -z $smoke ]]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export WGPU_BACKEND=vulkan
rm -rf /tmp/gpu
mkdir -p /tmp/gpu
if [[ -z $smoke ]]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > /tmp/gpu/host.txt 2>&1
else
  echo "smoke test on this machine's adapter: no GPU times" > /tmp/gpu/host.txt
fi
(while sleep 10; do tar czf "$OUT/p.tgz" -C /tmp gpu && mv "$OUT/p.tgz" "$OUT/gpu.tgz"; done) &
packer=$!
{
  cat /tmp/gpu/host.txt
  bash scripts/ab_gpu.sh /tmp/gpu/ab "$@"
  if [[ -n ${MATRIX_BIN:-} ]]; then
    bash scripts/bench_gpu.sh /tmp/gpu/matrix "$MATRIX_BIN" ${smoke:+--quick}
  fi
} 2>&1 | grep --line-buffered -v XDG_RUNTIME | tee /tmp/gpu/log.txt
kill "$packer"
wait "$packer" 2>/dev/null
tar czf "$OUT/gpu.tgz" -C /tmp gpu
rm -f "$OUT/p.tgz"
