#!/usr/bin/env bash
# Run in the project's root on the development machine, after ../shared/device/prepare.sh:
# adds to .device/wheels what the package needs beyond the shared recipe (reikna, the
# periodic mesh's OpenCL FFT, with mako, markupsafe and funcsigs), so that the periodic
# tests and runs work on the GPU machine, which has no network.  reikna is published as a
# source archive only: its wheel is built here (pure Python).
set -euo pipefail
top=$(git rev-parse --show-toplevel); cd "$top"
mkdir -p .device/wheels
python3 -m pip wheel -q --no-deps -w .device/wheels "reikna>=0.9" 2>&1 | grep -v '^WARNING' || true
python3 -m pip download -q --no-deps --dest .device/wheels --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any \
  mako markupsafe funcsigs 2>&1 | grep -v '^WARNING' || true
ls .device/wheels | grep -iE 'reikna|mako|markupsafe|funcsigs'
