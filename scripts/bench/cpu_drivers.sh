#!/usr/bin/env bash
# Issue 34's benchmark (not a test): the README example and the device probe on each CPU
# OpenCL driver as the only platform, first with empty kernel caches, then again.
#   bash scripts/bench/cpu_drivers.sh NAME=ICD [NAME=ICD ...]
# e.g. (in the project's venv)
#   bash scripts/bench/cpu_drivers.sh \
#     pypi-pocl=$VIRTUAL_ENV/lib/python3.11/site-packages/pyopencl/.libs/pocl.icd \
#     intel=/path/to/intel.icd debian-pocl=/etc/OpenCL/vendors/pocl.icd
# where intel.icd is a one-line file naming $VIRTUAL_ENV/lib/libintelocl.so.
# Prints per driver and pass: the caller's wall clock around `hybridtree run`, the run's
# own wall_s, build_s and walk_s (its end: line), and the probe's result.
set -u
cd "$(dirname "$0")/../.."
for pair in "$@"; do
    name=${pair%%=*}; icd=${pair#*=}
    cache=$(mktemp -d)                  # empty kernel caches: PoCL's and hybridtree's
    out=$(mktemp -d)
    for pass in first again; do
        t0=$(date +%s.%N)
        XDG_CACHE_HOME=$cache OCL_ICD_VENDORS=$icd hybridtree run configs/plummer_small.toml \
            --set output.dir="$out" --overwrite --quiet > "$out.log" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        end=$(grep -o 'wall_s=[0-9.]*\|build_s=[0-9.]*\|walk_s=[0-9.]*' "$out/run.log" 2>/dev/null \
              | tail -3 | tr '\n' ' ')
        printf '%-12s %-6s rc=%d caller %.1f s  %s\n' "$name" "$pass" "$rc" \
            "$(echo "$t1 - $t0" | bc)" "$end"
    done
    XDG_CACHE_HOME=$cache OCL_ICD_VENDORS=$icd hybridtree devices | sed -n 2p | sed 's/^ */  probe: /'
    rm -rf "$cache" "$out" "$out.log"
done
