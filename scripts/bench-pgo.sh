#!/usr/bin/env bash
# Profile-guided build of dcnsim-bench (optional; `make bench` stays the plain build).
#
# 1. build an instrumented bench in target/pgo-gen,
# 2. run it on the `train` scenario only (a workload unlike `perm` and `short`),
# 3. merge the profile with the toolchain's llvm-profdata (`rustup component add llvm-tools`),
# 4. build the optimised bench in target/pgo-use and run `perm` and `short` with it.
#
# Separate target directories keep the plain build's artifacts untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
data="$root/target/pgo-data"
sysroot=$(rustc --print sysroot)
profdata="$sysroot/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "llvm-profdata not found at $profdata: run 'rustup component add llvm-tools'" >&2
  exit 1
fi
rm -rf "$data"
RUSTFLAGS="-Cprofile-generate=$data" \
  cargo build --release -p dcnsim-core --bin dcnsim-bench --target-dir target/pgo-gen
target/pgo-gen/release/dcnsim-bench train
"$profdata" merge -o "$data/merged.profdata" "$data"
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" \
  cargo build --release -p dcnsim-core --bin dcnsim-bench --target-dir target/pgo-use
if [ "${PGO_BUILD_ONLY:-0}" != 1 ]; then
  target/pgo-use/release/dcnsim-bench
fi
