#!/usr/bin/env bash
# Builds the bench binary of each commit named, stripped, into .gpu/ for scripts/ab_gpu.sh on a
# lent GPU (which has no Rust toolchain), each from a clean worktree of that commit:
#   scripts/build_ab.sh 4b0d344 HEAD HEAD+--prepared-passes
# COMMIT gives .gpu/bench-<short hash>; COMMIT+FLAGS also gives .gpu/bench-<short hash><flags>, a
# wrapper that runs that binary with FLAGS (space-separated, after the `+`) before the run's own
# arguments. Then `../shared/gpu/prepare.sh` (for the loader packages in .gl/) and carry
# [".gl", ".gpu"]. EXAMPLE=NAME builds that example instead of the bench (into
# .gpu/NAME-<short hash>). The builds share target/ab (CARGO_AB_TARGET_DIR), apart from the
# working tree's target folder: a crate built from another path into the same folder keeps the
# same fingerprint, whose dependency list names the files of whichever tree built it last, so
# one tree's build could pass for the other's and link stale code. After the first build
# (all dependencies, some minutes) only this crate is compiled again.
set -euo pipefail
(($# > 0)) || { echo "usage: scripts/build_ab.sh COMMIT[+FLAGS]..." >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p .gpu
target=${CARGO_AB_TARGET_DIR:-$root/target/ab}
example=${EXAMPLE:-bench}
for spec in "$@"; do
  commit=${spec%%+*}
  flags=""
  [[ $spec == *+* ]] && flags=${spec#*+}
  short=$(git rev-parse --short "$commit")
  bin=.gpu/$example-$short
  if [[ ! -x $bin ]]; then
    tree=$(mktemp -d)
    git worktree add -q --detach "$tree" "$short"
    # This crate's artifacts go first: a worktree left by a failed run would otherwise keep a
    # fingerprint that passes for any commit's.
    (cd "$tree" && CARGO_TARGET_DIR=$target cargo clean -q --release -p signorini &&
      CARGO_TARGET_DIR=$target cargo build -q --release --example "$example")
    cp "$target/release/examples/$example" "$bin"
    strip "$bin"
    git worktree remove --force "$tree"
  fi
  if [[ -n $flags ]]; then
    wrapper=$bin$(echo "$flags" | tr -d ' -')
    printf '#!/bin/sh\nexec "$(dirname "$0")/%s" %s "$@"\n' "$(basename "$bin")" "$flags" > "$wrapper"
    chmod +x "$wrapper"
    echo "$wrapper -> $bin $flags"
  fi
  echo "$bin: $(git log -1 --format='%h %s' "$short" | cut -c1-80)"
done
ls -l .gpu
