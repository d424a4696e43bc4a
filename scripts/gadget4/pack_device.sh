#!/usr/bin/env bash
# Pack a GADGET-4 executable and the Debian libraries it needs into .device/g4pkg (git-ignored),
# to run GADGET-4 on the GPU machine's 16 CPU cores (it has no network and no FFTW/GSL/HDF5).
#   bash scripts/gadget4/pack_device.sh EXE
# EXE: a GADGET-4 built for any x86-64-v3 CPU (the development machine's -march=native build
# may use instructions the GPU machine lacks):  sed s/-march=native/-march=x86-64-v3/ in the
# source tree's Makefile.systype, then build.sh's make line.
# glibc, libstdc++ and libgcc_s are left to the machine (newer there); Open MPI's libraries go
# to lib_mpi/, used only where the machine has no libmpi.so.40 of its own (device_run.sh).
set -euo pipefail
EXE=${1:?usage: pack_device.sh EXE}
PKG=.device/g4pkg
rm -rf "$PKG" && mkdir -p "$PKG/lib" "$PKG/lib_mpi"
cp "$EXE" "$PKG/Gadget4"
cp "$(dirname "$EXE")/Config.sh" "$PKG/Config.sh"
ldd "$EXE" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    base=$(basename "$lib")
    case $base in
        libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libresolv.so*|libpthread.so*|libdl.so*|librt.so*) ;;
        libmpi.so*|libopen-pal.so*|libopen-rte.so*|libhwloc.so*|libevent*) cp -L "$lib" "$PKG/lib_mpi/" ;;
        *) cp -L "$lib" "$PKG/lib/" ;;
    esac
done
du -sh "$PKG"
