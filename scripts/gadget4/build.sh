#!/usr/bin/env bash
# Build GADGET-4 for the hybridtree reference runs on Debian 12 (idempotent).
#
#   scripts/gadget4/build.sh [N ...]          default N list: 64
#
# env: G4_ROOT   work root (default /tmp/gadget4): source in $G4_ROOT/src, one build per N in $G4_ROOT/build$N
#      G4_SRC    path to the GADGET-4 source: a checked-out tree, a bare git repository, or a .tar(.gz) archive
#                (default: the bare mirror /work/.mirror/weiguangcui+Gadget4/repo)
#      G4_COMMIT commit to check out from a git source (default HEAD; used here: 226f62e5858c7ec3662a73bc96cc9d3e42be0f9b)
#      NOAPT=1   skip apt-get;  FORCE=1  rebuild even if up to date
#
# For each N: $G4_ROOT/build$N/Config.sh = scripts/gadget4/Config.sh with PMGRID=N and NGENIC=N, then
#   make -j2 PYTHON=python3 DIR=$G4_ROOT/build$N      -> $G4_ROOT/build$N/Gadget4
# Exit status 2 (with a line on stderr) if the source cannot be found.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
G4_ROOT=${G4_ROOT:-/tmp/gadget4}
G4_SRC=${G4_SRC:-/work/.mirror/weiguangcui+Gadget4/repo}
G4_COMMIT=${G4_COMMIT:-HEAD}
NS=("$@"); [[ ${#NS[@]} -gt 0 ]] || NS=(64)
SRC=$G4_ROOT/src

# 1) Debian packages (serial HDF5 is enough: GADGET-4 does its own MPI-parallel I/O scheduling)
PKGS=(libfftw3-dev libfftw3-mpi-dev libgsl-dev libhdf5-dev libopenmpi-dev openmpi-bin g++ make python3 git)
if [[ -z ${NOAPT:-} ]]; then
  missing=()
  for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [[ ${#missing[@]} -gt 0 ]]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  fi
fi

# 2) source
if [[ ! -f $SRC/src/main/main.cc ]]; then
  mkdir -p "$G4_ROOT"
  if [[ -f $G4_SRC/src/main/main.cc ]]; then
    cp -a "$G4_SRC" "$SRC"
  elif git --git-dir="$G4_SRC" rev-parse --verify -q "$G4_COMMIT^{commit}" >/dev/null 2>&1; then
    git clone -q "$G4_SRC" "$SRC"           # a clone (not an archive) so GADGET-4 records the commit in its version info
    git -C "$SRC" checkout -q "$G4_COMMIT"
  elif [[ -f $G4_SRC && $G4_SRC == *.tar* ]]; then
    mkdir -p "$SRC" && tar -xf "$G4_SRC" -C "$SRC" --strip-components=1
  else
    echo "build.sh: GADGET-4 source not found at '$G4_SRC' (set G4_SRC to a source tree, bare git repo or tarball)" >&2
    exit 2
  fi
fi
[[ -f $SRC/src/main/main.cc ]] || { echo "build.sh: GADGET-4 source missing in $SRC" >&2; exit 2; }
cp "$HERE/Makefile.systype" "$SRC/Makefile.systype"

# 3) one build per N (PMGRID and NGENIC are compile-time)
for N in "${NS[@]}"; do
  B=$G4_ROOT/build$N
  mkdir -p "$B"
  sed -e "s/^PMGRID=.*/PMGRID=$N/" -e "s/^NGENIC=.*/NGENIC=$N/" "$HERE/Config.sh" > "$B/Config.sh.new"
  # GADGET-4's make regenerates build/gadgetconfig.h every time and so recompiles everything (~45-90 s);
  # skip make when the executable exists and neither Config.sh nor Makefile.systype changed (FORCE=1 rebuilds).
  if [[ -z ${FORCE:-} && -x $B/Gadget4 && -f $B/.built ]] && cmp -s "$B/Config.sh.new" "$B/Config.sh" \
     && cmp -s "$HERE/Makefile.systype" "$B/.built"; then
    rm "$B/Config.sh.new"; echo "build.sh: $B/Gadget4 is up to date"; continue
  fi
  mv "$B/Config.sh.new" "$B/Config.sh"
  rm -f "$B/.built"
  ( cd "$SRC" && make -j2 PYTHON=python3 DIR="$B" ) > "$B/make.log" 2>&1 || { tail -30 "$B/make.log" >&2; exit 1; }
  cp "$HERE/Makefile.systype" "$B/.built"
  [[ -x $B/Gadget4 ]] && echo "build.sh: built $B/Gadget4 (PMGRID=NGENIC=$N, commit $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown))"
done
