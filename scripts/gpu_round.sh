#!/usr/bin/env bash
# One batched measurement round on the GPU machine (the device tool's 30-minute budget
# wants one script per call).  Run from the repository root after .device/gpu-setup.sh:
#   bash scripts/gpu_round.sh ROUND     -> $OUT/results.tgz (every log) and $OUT/index.txt
set -u
# (.device/wheels: ../shared/device/prepare.sh, then scripts/device_wheels.sh for reikna)
R=${1:-1}; T0=$(date +%s)
O=${OUT:-/tmp/out}; D=$(mktemp -d); mkdir -p "$O"
export PYTHONPATH=$PWD
py() { local name=$1 t=$2; shift 2; echo "== $name: $*" >> "$O/index.txt"
       local t0=$(date +%s); timeout "$t" python "$@" > "$D/$name.txt" 2>&1
       echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; cp "$D/$name.txt" "$O/" 2>/dev/null; }
# code V: run the code before a change (build/old) for V = old, old1, ..., else the working tree
code() { case $1 in old*) export PYTHONPATH=$PWD/build/old;; *) export PYTHONPATH=$PWD;; esac; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$D/gpu.txt" 2>&1
case $R in
124) # issue 30, session 30: whole runs of the final code against 8d4d9e2 (build/old), the comparison of rounds 121/122
    # done again now that step.py's children import build/old (before 1e9b515 the 'old' runs ran the checkout)
  for v in new old; do code $v
    py runs_$v 80 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  export PYTHONPATH=$PWD
  ;;
123) # issue 30, session 30, final code: radix_scatter's store order a define (SORTED_STORES: GPUs 1, CPUs 0, where the
    # sorted order cost PoCL 15-25 %): the sort's and build's GPU tests (both orders), the sort at the defaults
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider --tb=short tests/gravity/test_device_sort.py \
      tests/gravity/test_device_build.py tests/integrate/test_state.py
  py sort 60 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5 \
      --tuning 256,8,8,4,1 256,8,8,4,0
  ;;
122) # issue 30, session 30, final code: the sort's GPU tuning in tiles of 2048 keys (256,8,8,4) with the scatter in
    # sorted order, against 8d4d9e2 (build/old), alternating: the sort alone, whole runs at 2^22 and 2^24; M31 at 2^23
    # with the defaults; the suite's GPU tests
  for v in new1 old1 new2 old2; do code $v
    py sort_$v 60 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5
    py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  export PYTHONPATH=$PWD
  REPO=$PWD
  (cd /tmp && py m31_23 200 "$REPO/scripts/bench/galaxy.py" "$REPO/configs/galaxy_m31.toml" --n 8388608 --t-end 10.5 \
      --device nvidia --out /tmp/m31_23 --json "$D/m31_23.json")
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
121) # issue 30, session 30: radix_scatter writes in the tile's sorted order (coalesced stores; inverse places in local
    # memory, keys read again from the cache) against 8d4d9e2's scatter in input order (build/old), alternating: the
    # sort alone (Plummer keys; the GPU tuning and 256,8,8,4 with half the tile), whole runs at 2^22 and 2^24, the
    # sort's and build's GPU tests
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider --tb=short tests/gravity/test_device_sort.py \
      tests/gravity/test_device_build.py
  for v in new1 old1 new2 old2; do code $v
    py sort_$v 90 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5 \
        --tuning 256,16,8,4 256,8,8,4
  done
  for v in new old; do code $v
    py runs_$v 130 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  export PYTHONPATH=$PWD
  ;;
120) # issue 30, session 30: per-type diagnostics summed on the device (cl/reduce.cl type_mass) against 5428bf2
    # (build/old: every report downloaded the particles and sorted each type on the host), M31 at 2^23 with the
    # defaults (a report every 8 steps), new / old / new; the GPU tests of what changed
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 250 -m pytest -q -p no:cacheprovider --tb=short tests/integrate/test_type_sums.py \
      tests/gravity/test_refit.py tests/integrate/test_timesteps.py tests/run/test_particle_types.py
  # from /tmp: galaxy.py's `python -m hybridtree run` takes the package of its working directory before PYTHONPATH's
  REPO=$PWD
  for v in new1 old new2; do code $v
    (cd /tmp && py m31_23_$v 200 "$REPO/scripts/bench/galaxy.py" "$REPO/configs/galaxy_m31.toml" --n 8388608 \
        --t-end 10.5 --device nvidia --out /tmp/m31_23_$v --json "$D/m31_23_$v.json")
  done
  export PYTHONPATH=$PWD
  ;;
119) # issue 30, session 30: the refit rule's energy cost (round 118: M31 2^23, dE/E 8.9e-5 building every force,
    # 1.25e-4 with f = 0.05): M31 at 2^22 with f = 0 and 0.05, and at 2^23 with alpha = 0.002 (f = 0.05 and 0)
  for f in 0.05 0; do
    py m31_22_f$f 120 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 4194304 --t-end 10.5 --device nvidia \
        --set gravity.refit_fraction=$f --out /tmp/m31_22r --json "$D/m31_22_f$f.json"
  done
  for f in 0.05 0; do
    py m31_23_a002_f$f 200 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
        --set gravity.refit_fraction=$f --set gravity.alpha=0.002 --out /tmp/m31_23r --json "$D/m31_23_a002_f$f.json"
  done
  ;;
118) # issue 30, session 30: GOTHIC's M31 at 2^23 for 49.5 Myr (round 63's run) with the new refit rule (a force of
    # some refits while the forces on refits since the build, its own included, stay within f N) at f = 0, 0.05
    # (the new default), 0.1; the cusp's block run at 2^22 with f = 0 and the default (its deepest bin holds 14 %)
  for f in 0.05 0 0.1; do
    py m31_23_f$f 200 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
        --set gravity.refit_fraction=$f --out /tmp/m31_23r --json "$D/m31_23_f$f.json"
  done
  for f in 0 0.05; do
    py steps_4m_f$f 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 99 --refit-fraction $f --json "$D/steps_4m_f$f.json"
  done
  ;;
117) # issue 30, session 30: the suite's GPU tests (nothing ran on the GPU after 9ade647, ilogb in extent_cube; the new
    # refit rule and default)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 500 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
116) # issue 30, session 29, final code: the oct-tree paper's cosmological sphere end to end (energy error at z = 0, time)
  py cosmo_sphere 300 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs \
      --json "$D/cosmo_sphere.json"
  ;;
115) # issue 30, session 29: the build's two counts really read in one wait (read_counts: a dropped pyopencl event of a
    # copy to the host waited too), walk_active's two counts likewise, the bins' counts in one wait; against 632e9b1
    # (build/old), alternating, and the GPU tests of what changed
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider --tb=short tests/integrate/test_state.py \
      tests/gravity/test_device_build.py tests/device/test_transfer.py tests/integrate/test_timesteps.py
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8
  for v in new1 old1 new2 old2; do code $v
    HYBRIDTREE_DEVICE=nvidia py substep_rel_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
    py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  for v in new old; do code $v
    py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
  done
  export PYTHONPATH=$PWD
  ;;
114) # issue 30, session 29, final code: the reads-and-waits test round 113 failed (mended), the build's and state's tests
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 300 -m pytest -q -p no:cacheprovider --tb=short tests/integrate/test_state.py \
      tests/gravity/test_device_build.py tests/gravity/test_refit.py tests/parallel/test_engine_groups.py
  ;;
113) # issue 30, session 29, final code: the suite's GPU tests, whole runs with jz-fmm at 2^22 and 2^24
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 400 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py runs 180 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs.json"
  ;;
112) # issue 30, session 29: two reads fewer per build: the cube found on the device (cl/prepare.cl extent_cube) and the
    # walk's first group split counted with the cells (one wait), against the code before (build/old: 632e9b1),
    # alternating: GPU tests, per-kernel profile, whole runs at 2^20 / 2^22 / 2^24, substeps, the cusp's block run
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_refit.py tests/gravity/test_treewalk.py tests/parallel/test_engine_groups.py
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8
  for v in new1 old1 new2 old2; do code $v
    HYBRIDTREE_DEVICE=nvidia py subset_$v 60 scripts/tune/subset.py 4194304 0.02 --by acc --model plummer --no-alone \
        --alpha 0.003
    HYBRIDTREE_DEVICE=nvidia py substep_rel_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
    py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  for v in new old; do code $v
    py runs_24_$v 100 scripts/bench/step.py runs --device nvidia --n 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8
    py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
  done
  export PYTHONPATH=$PWD
  ;;
111) # issue 30, session 29: the build finds its cube on the device (cl/prepare.cl extent_cube) instead of reading the
    # extent back, against the code before (build/old: git archive 632e9b1 hybridtree cl), alternating: the build's GPU
    # tests, per-kernel profile, whole runs at 2^20 and 2^22, substeps built anew and refitted, the cusp's block run
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_refit.py tests/gravity/test_treewalk.py
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8
  for v in new1 old1 new2 old2; do code $v
    HYBRIDTREE_DEVICE=nvidia py substep_rel_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
    py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 --schemes plain-mono --steps 32 \
        --diag-every 8
  done
  for v in new old; do code $v
    py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
  done
  export PYTHONPATH=$PWD
  ;;
110) # issue 30, session 29: substeps of the particles block steps make active (the largest |a|: the shortest time steps)
    # on a Plummer sphere and the cusp, 1-3 %, against random ones; the refit's split_gather against split_sources +
    # gather (build/old: a87a3fd), profiled, alternating
  for c in "--alpha 0.003" ""; do t=$([ -n "$c" ] && echo rel || echo geo)
    for m in plummer cusp; do
      HYBRIDTREE_DEVICE=nvidia py subset_${m}_$t 150 scripts/tune/subset.py 4194304 0.01 0.02 0.03 --by acc --model $m \
          --no-alone $c
    done
  done
  for v in new1 old1 new2 old2; do code $v
    HYBRIDTREE_DEVICE=nvidia py substep_rel_prof_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --profile
  done
  export PYTHONPATH=$PWD
  for i in 1 2; do HYBRIDTREE_DEVICE=nvidia py substep_rel_$i 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003; done
  ;;
109) # issue 30, session 29: cell_moments over each level's own cells (level_cells: ran uncommitted, then reverted, see
    # docs/benchmarks.md §28), the refit's split and gather in one pass (split_gather), against the code before
    # (build/old: git archive a87a3fd hybridtree cl), alternating:
    # the build's GPU tests, per-kernel profile, substeps (relative 2 % and 0.1 %, geometric 2 %), whole runs at 2^22 and
    # 2^24, the cusp's block run against shared steps
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_refit.py
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --sequence cell_moments
  for v in new old new old; do code $v
    HYBRIDTREE_DEVICE=nvidia py substep_rel_0.02_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
    HYBRIDTREE_DEVICE=nvidia py substep_rel_0.001_$v 60 scripts/tune/substep.py 4194304 0.001 --alpha 0.003
    HYBRIDTREE_DEVICE=nvidia py substep_0.02_$v 60 scripts/tune/substep.py 4194304 0.02
    py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 --diag-every 8
  done
  for v in new old; do code $v
    py runs_24_$v 100 scripts/bench/step.py runs --device nvidia --n 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8
    py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
  done
  export PYTHONPATH=$PWD
  ;;
108) # issue 30, session 29: where a 2 % relative substep's time goes now (profile), and each cell_moments launch's time
  py kernels 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --sequence cell_moments
  HYBRIDTREE_DEVICE=nvidia py substep_rel 200 scripts/tune/substep.py 4194304 0.02 5 --alpha 0.003 --profile
  HYBRIDTREE_DEVICE=nvidia py substep_rel_01 200 scripts/tune/substep.py 4194304 0.001 5 --alpha 0.003 --profile
  ;;
107) # issue 30, session 28: the cusp's inner 14 % / 51 % (about bins >= 5 / >= 4 of the block run) as a block substep
    # (tree of all N, built or refitted) and as a force of a tree of those particles alone (hierarchical time steps)
  HYBRIDTREE_DEVICE=nvidia py subset 200 scripts/tune/subset.py 4194304 0.14 0.51
  HYBRIDTREE_DEVICE=nvidia py subset_rel 200 scripts/tune/subset.py 4194304 0.14 0.51 --alpha 0.003
  ;;
106) # issue 30, session 28: with PACK_UNION, where relative walks in groups of 256 start to pay: the walk at 2^18 .. 2^21,
    # whole runs at 2^20 and 2^21 in groups of 128 (the default there then) and 256, alternating
  py relative 150 scripts/tune/relative.py --device nvidia --n 262144 524288 2097152 --theta 0.5 --alpha 0.003 \
      --n-group 128 256
  for i in 1 2; do for g in 128 256; do
    py runs_g${g}_$i 120 scripts/bench/step.py runs --device nvidia --n 1048576 2097152 --schemes plain-mono --steps 32 \
        --diag-every 8 --set gravity.n_group=$g
  done; done
  ;;
105) # issue 30, session 28: groups packed with PACK_UNION (no box around a dense sibling): the cusp's 2^20 walk in groups of
    # 128 and 256 (round 102: one group of 256 had a list of 173 000 entries), whole runs at 2^22 and 2^24, the build's tests
  py relative 120 scripts/tune/relative.py --device nvidia --n 1048576 4194304 --theta 0.5 --alpha 0.003 --n-group 128 256
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_treewalk.py tests/gravity/test_opening.py tests/gravity/test_refit.py
  py runs 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --json "$D/runs.json"
  ;;
104) # issue 30, session 28, final code: the suite's GPU tests
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 560 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
103) # issue 30, session 28, final code (relative walks in groups of 256 from 2^22 sinks): whole runs with jz-fmm at 2^22
    # and 2^24; the walk's rate at the defaults (geometric theta = 0.5 against relative alpha = 0.003); 0.1 % and 2 %
    # substeps; the cusp's block run against shared steps
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py runs 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs.json"
  py relative 150 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
  for f in 0.001 0.02; do
    HYBRIDTREE_DEVICE=nvidia py substep_rel_$f 60 scripts/tune/substep.py 4194304 $f --alpha 0.003
    HYBRIDTREE_DEVICE=nvidia py substep_geo_$f 60 scripts/tune/substep.py 4194304 $f
  done
  py steps_4m 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
  ;;
102) # issue 30, session 28: where groups of 256 start to pay for the relative criterion (2^20, 2^21: the walk's time and
    # the force errors), and the cusp's block run and shared steps with groups of 128 (the default below 2^23) and 256
  py relative 200 scripts/tune/relative.py --device nvidia --n 1048576 2097152 --theta 0.5 --alpha 0.003 --n-group 128 256
  py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 1048576 2097152 --sample 1000 --theta 0.5 \
      --alpha 0.003 --orders monopole --n-group 128 256 --json "$D/errors.json"
  for g in 128 256; do
    py steps_4m_g$g 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --set gravity.n_group=$g --json "$D/steps_4m_g$g.json"
  done
  ;;
101) # issue 30, session 28: sinks per group for the relative criterion at 2^22 (128, the default below 2^23, against 256):
    # force errors, the walk's rate, whole runs alternating, 2 % substeps; 2^24's 256 against 512
  py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 4194304 --sample 1000 --theta 0.5 \
      --alpha 0.003 --orders monopole --n-group 128 256 --json "$D/errors.json"
  py relative 200 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 --alpha 0.003 --n-group 128 256
  for i in 1 2; do for g in 128 256; do
    py runs_g${g}_$i 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 \
        --diag-every 8 --set gravity.n_group=$g
  done; done
  for g in 128 256; do
    HYBRIDTREE_DEVICE=nvidia py substep_rel_g$g 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --n-group $g
    HYBRIDTREE_DEVICE=nvidia py substep_geo_g$g 60 scripts/tune/substep.py 4194304 0.02 --n-group $g
  done
  [ $(( $(date +%s) - T0 )) -lt 420 ] && py relative_24 150 scripts/tune/relative.py --device nvidia --n 16777216 \
      --theta 0.5 --alpha 0.003 --n-group 256 512
  ;;
99) # issue 30, session 27, final code: the suite's GPU tests
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 560 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
100) # issue 30, session 27, final code: the host's share of a launch (HYBRIDTREE_CL_OPTIONS read once per runtime, the
    # sort's kernel checks once per tuning, cell_moments' arguments made once) against the code before it (build/old: git
    # archive dada24b hybridtree cl), alternating: substeps (geometric 0.1 % and 2 %, relative 2 %, and 2 % of 2^16, where
    # the host sets the pace), whole runs at 2^22, a cusp's block run against shared steps
  for v in new old new old; do code $v
    for f in 0.001 0.02; do HYBRIDTREE_DEVICE=nvidia py substep_${f}_$v 60 scripts/tune/substep.py 4194304 $f; done
    HYBRIDTREE_DEVICE=nvidia py substep_rel_0.02_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
    HYBRIDTREE_DEVICE=nvidia py substep_small_$v 60 scripts/tune/substep.py 65536 0.02 20
    py runs_$v 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 --diag-every 8
  done
  for v in new old; do code $v
    py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
        --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
  done
  export PYTHONPATH=$PWD
  ;;
98) # issue 30, session 27: sparse active walks take COOP work-items per group (SPARSE_WALK, below 25 % of the groups):
    # the GPU tests; the crossover in the share of groups walked (COOP = 32 against the serial walk, geometric); where the
    # relative criterion's 2 % substep goes, and its active walk's COOP width
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/gravity/test_opening.py tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py \
      tests/gravity/test_refit.py
  for f in 0.001 0.003 0.005 0.01 0.02; do for c in 0 32; do HYBRIDTREE_DEVICE=nvidia py substep_${f}_coop$c 60 \
      scripts/tune/substep.py 4194304 $f --active-options COOP=$c; done; done
  HYBRIDTREE_DEVICE=nvidia py substep_0.005_default 60 scripts/tune/substep.py 4194304 0.005
  HYBRIDTREE_DEVICE=nvidia py substep_rel_prof 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --profile
  for c in 16 64; do HYBRIDTREE_DEVICE=nvidia py substep_rel_coop$c 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 \
      --active-options COOP=$c; done
  ;;
97) # issue 30, session 27: round 96's windowed walk was 5-9 x slower; a sparse active walk is set by its longest walks:
    # the cooperative list walk (COOP work-items per group, the relative walk's) for geometric active walks, merged and not;
    # the relative criterion's substeps (COOP = 32 already), merged and not
  for c in 32 16; do HYBRIDTREE_DEVICE=nvidia py substep_2pc_coop$c 150 scripts/tune/substep.py 4194304 0.02 \
      --active-options COOP=$c --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05; done
  HYBRIDTREE_DEVICE=nvidia py substep_01pc_coop32 90 scripts/tune/substep.py 4194304 0.001 --active-options COOP=32 \
      --merge 1,0,1 8,64,2.05
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_rel 150 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 \
      --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05
  HYBRIDTREE_DEVICE=nvidia py substep_01pc_rel 90 scripts/tune/substep.py 4194304 0.001 --alpha 0.003 --merge 1,0,1 8,64,2.05
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_coop32_prof 90 scripts/tune/substep.py 4194304 0.02 --active-options COOP=32 \
      --merge 8,64,2.05 --profile
  ;;
96) # issue 30, session 27: round 95's merged list walks were 4-10 x slower (the longest walk sets walk_lists's time); the
    # windowed group walk (KERNEL=tree_walk: walk and evaluation in one kernel, a work-group per group) for active walks,
    # merged and not, against the list walk
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_tw 200 scripts/tune/substep.py 4194304 0.02 --active-options KERNEL=tree_walk \
      --merge 1,0,1 8,32,2.05 8,64,2.05 16,64,2.05 16,128,2.05
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_tw_prof 90 scripts/tune/substep.py 4194304 0.02 --active-options KERNEL=tree_walk \
      --merge 8,64,2.05 --profile
  HYBRIDTREE_DEVICE=nvidia py substep_01pc_tw 90 scripts/tune/substep.py 4194304 0.001 --active-options KERNEL=tree_walk \
      --merge 1,0,1 8,64,2.05
  ;;
95) # issue 30, session 27: an active walk merges consecutive sparse groups (ACTIVE_MERGE: window, cap, grow): the walk and
    # block-step tests on the GPU; substeps of 2 % (merge variants; the default profiled) and 0.1 %; cusp block runs merged
    # and not, and shared steps
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 200 scripts/tune/substep.py 4194304 0.02 --merge 1,0,1 2,32,2.05 4,32,2.05 \
      8,32,2.05 16,32,2.05 8,16,2.05 8,64,2.05 8,32,3 8,32,1.55
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_prof 90 scripts/tune/substep.py 4194304 0.02 --merge 1,0,1 --profile
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 90 scripts/tune/substep.py 4194304 0.001 --merge 1,0,1
  py steps_4m_0 200 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --active-merge 1,0,1 8,32,2.05 4,32,2.05 1,0,1 8,32,2.05 --json "$D/steps_4m_0.json"
  ;;
94) # issue 30, session 26: the relative list walk's cooperative width on the H200 (COOP 8, 16, 32 = the default, 64)
  py rate_coop 300 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003 \
      --variants "" COOP=8 COOP=16 COOP=64
  ;;
93) # issue 30, session 26: the relative walk's rate against the geometric one at alpha = 0.003 on the H200 machine
  py rate 200 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
  ;;
92) # issue 30, session 26: block runs on the cusp refitting between builds (refit_fraction 0.25 ... 2), now that the list
    # room no longer swings; building every substep twice for the scatter
  i=0; for f in 0 0.25 0.5 1 2 0; do i=$((i + 1)); py steps_4m_${i}_f$f 100 scripts/bench/timesteps.py steps --device nvidia \
      --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 --shared-from 6 --refit-fraction $f --json "$D/steps_4m_${i}_f$f.json"; done
  ;;
91) # issue 30, session 26: the list room shrinks only where it split a walk into batches (round 90's block run walked 13
    # substeps twice: the room swung between 8192 and 32768); where a cusp block run's time goes; block runs twice and
    # shared steps; substeps of 2 % and 0.1 %; whole runs at 2^22 and 2^24 with jz-fmm; per kernel
  py block_profile 120 scripts/tune/block_profile.py --device nvidia --n 4194304
  py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --active-replicate 64 64 --json "$D/steps_4m_0.json"
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --profile
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 90 scripts/tune/substep.py 4194304 0.001
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py runs_default 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  ;;
90) # issue 30, session 26: copies of a small active group's sinks as a kernel argument (ACTIVE_COPIES; all active: the full
    # walk's), the tests; where a cusp block run's time goes (per kernel, block against shared); block runs with 4 and 64
    # copies alternating in one process; substeps of 2 % with 4 and 64 copies
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
  py block_profile 120 scripts/tune/block_profile.py --device nvidia --n 4194304
  py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --active-replicate 4 64 4 64 --json "$D/steps_4m_0.json"
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --replicate 4 64 --profile
  ;;
89) # issue 30, session 26: the active walk spreads a small group's list over the whole work-group (then REPLICATE 64 as a define; since round 90 ACTIVE_COPIES
    # against 4), one blocking read less per substep, a list room that shrinks: the walk and block-step tests on the GPU;
    # substeps of 2 % and 0.1 % active with a kernel profile; block against shared steps on the cusp (REPLICATE 4 and 64
    # in one process, and refitting f = 0.1)
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --replicate 4 16 64 --profile
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001 --replicate 4 64 --profile
  py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --active-replicate 4 64 --json "$D/steps_4m_0.json"
  py steps_4m_01 100 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 6 --refit-fraction 0.1 --json "$D/steps_4m_01.json"
  ;;
88) # issue 30, session 25, final code (no merging of active groups; every active group walked with its whole group's box):
    # substeps of 2 % and 0.1 % active, block steps on the cusp, the suite's GPU tests
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
  py steps_4m_0 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
      --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_0.json"
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
87) # issue 30, session 25 (ACTIVE_MERGE and substep.py's "alone" removed since): merged active groups kept within their shallowest member's parent cell (round 86's 2 % substep
    # left a list room that slowed every later walk 12 x); substeps merged and alone, block steps on the cusp, the tests
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  HYBRIDTREE_DEVICE=nvidia py substep_2pc_alone 60 scripts/tune/substep.py 4194304 0.02 5 alone
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
  py steps_4m_0 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
      --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_0.json"
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py
  ;;
85|86) # issue 30, session 25 (86: the same again after merged groups were bounded by their boxes' spread and walked with
    # their whole groups' boxes): sparse active groups walked together (ACTIVE_MERGE; removed after round 87, benchmarks.md §24): the walk's, opening, block-step tests on
    # the GPU; substeps of 2 % and 0.1 % active; block against shared steps on the cusp, building and refitting (f = 0.1)
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/gravity/test_opening.py tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
  for f in 0 0.1; do py steps_4m_$f 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
      --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction $f --json "$D/steps_4m_$f.json"; done
  ;;
84) # issue 30, session 25 (round 83's code): the paper's cosmological sphere at alpha = 0.003; the relative walk's rate
    # against the geometric one at alpha = 0.003; a substep of 2 % active (geometric, refitted and built)
  py cosmo_sphere 220 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs \
      --json "$D/cosmo_sphere.json"
  py rate 150 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  ;;
83) # issue 30, session 25: cells_at searching near i (count_cells, fill_cells), the leaves' boxes in parallel (pack_leaves),
    # alpha = 0.003 the default: the build's GPU tests, per kernel, whole runs with jz-fmm, sort tunings on Morton keys,
    # block against shared steps on the cusp at 2^22
  HYBRIDTREE_DEVICE=nvidia py tests_build 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_refit.py tests/gravity/test_device_sort.py
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py sort 60 scripts/tune/sort.py --device nvidia --n 4194304 16777216 --keys plummer --repeat 5 \
      --tuning 256,16,8,4 256,16,8,5 256,8,8,5 256,8,8,6 128,16,8,6 128,32,8,6 128,16,8,7
  [ $(( $(date +%s) - T0 )) -lt 420 ] && py steps_4m 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 \
      --dt 0.5 --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
  ;;
82) # issue 30, session 24, final code: per kernel at 2^22 and 2^24 (the relative walks with COOP), then the suite's GPU tests
  py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
  ;;
81) # issue 30, session 24, the relative walks with COOP = 32: block against shared steps on the cusp at 2^22; a substep
    # of 2 % active; groups of 128 against 256 at 2^24; the paper's cosmological sphere if time is left
  py steps_4m 220 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  py groups 100 scripts/tune/relative.py --device nvidia --n 16777216 --models plummer --theta 0.5 --alpha 0.002 0.003 \
      --n-group 128 256
  [ $(( $(date +%s) - T0 )) -lt 320 ] && py cosmo_sphere 220 scripts/bench/cosmo.py configs/cosmo_sphere.toml \
      --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
  ;;
80) # issue 30, session 24: the force errors at alpha 0.002..0.005 (monopoles on the H100, quadrupoles on the 16-core PoCL
    # device at 10^5), then the walk's and the new code's tests on the GPU (round 78's)
  py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 4194304 16777216 --sample 1000 --theta 0.5 \
      --alpha 0.002 0.003 0.004 0.005 --orders monopole --json "$D/errors.json"
  py pocl_errors 100 -u scripts/bench/timesteps.py errors --device cpu --n 100000 --sample 1000 --theta 0.5 \
      --alpha 0.002 0.003 0.004 0.005 --orders quadrupole --json "$D/pocl_errors.json"
  HYBRIDTREE_DEVICE=nvidia py tests_gpu 250 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/gravity/test_eps_tree.py tests/gravity/test_opening.py tests/gravity/test_pm_slabs.py \
      tests/parallel/test_mpi_periodic.py tests/cosmo/test_box_block_steps.py
  ;;
79) # issue 30, session 24: the relative walks now COOP = 32 by default (the pieces gone): whole runs with jz-fmm at 2^22
    # and 2^24, the force errors at alpha 0.002..0.005, runs at alpha 0.003 and 0.004, the serial walk as partner
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py runs_default 220 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py errors 120 scripts/bench/timesteps.py errors --device nvidia --n 4194304 16777216 --sample 1000 --theta 0.5 \
      --alpha 0.002 0.003 0.004 0.005 --json "$D/errors.json"
  for al in 0.003 0.004; do [ $(( $(date +%s) - T0 )) -lt 420 ] || break
    py runs_rel_$al 100 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
        --diag-every 8 --set gravity.alpha=$al --json "$D/runs_rel_$al.json"; done
  [ $(( $(date +%s) - T0 )) -lt 480 ] && PYTHONPATH=scripts/tune/serial_walk:$PWD py runs_serial 100 \
      scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 --diag-every 8 \
      --json "$D/runs_serial.json"
  ;;
78) # issue 31, session 23 (not run yet): the new code's tests on the GPU (the mesh in slabs under mpiexec, block steps
    # in a periodic box, the cooperative walk), then block against shared steps of a 64^3 box and the slabs' call
  HYBRIDTREE_DEVICE=nvidia py tests_new 400 -m pytest -q -x tests/parallel/test_mpi_periodic.py tests/cosmo \
      tests/gravity/test_pm_slabs.py tests/gravity/test_treewalk.py tests/gravity/test_pm_device.py
  HYBRIDTREE_DEVICE=nvidia py box_blocks 300 scripts/bench/box_blocks.py --n-grid 64 --steps 16 --z-end 1 \
      --eta 0.2 --shared 4 8 16 --reference 32
  for k in 1 2 4; do HYBRIDTREE_DEVICE=nvidia timeout 200 mpiexec -n $k python scripts/bench/pm_slabs.py --n 16777216 \
      --mesh 256 --repeat 3 >> "$D/pm_slabs.txt" 2>&1; done
  ;;
77) # issue 30, session 23: the cooperative list walk (COOP work-items walk one group from a stack in local memory)
    # against the serial walk with pieces, both criteria, Plummer and cusp, 2^22 and 2^24; eval_lists tunings
  py coop 330 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.002 \
      --variants "" COOP=32 COOP=64 COOP=16
  py eval_tune 110 scripts/tune/relative.py --device nvidia --n 4194304 --models plummer --theta 0.5 --alpha 0.002 \
      --variants TILE=128 SINKS=4 REPLICATE=2 REPLICATE=8 COOP=32,TILE=128
  if [ $(( $(date +%s) - T0 )) -lt 300 ]; then    # whole runs at 2^22 with the cooperative walk and without
    COOP=32 PYTHONPATH=scripts/tune/coop:$PWD py runs_coop32 120 scripts/bench/step.py runs --device nvidia --n 4194304 \
        --schemes plain-mono --steps 32 --diag-every 8 --json "$D/runs_coop32.json"
    py runs_default 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 \
        --diag-every 8 --json "$D/runs_default.json"
  fi
  ;;
76) # issue 30, session 22, final code (7 trials per pass of the Lagrangian radii): whole runs with jz-fmm
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  ;;
75) # issue 30, session 22, final code: Lagrangian radii from (radius, mass) computed once, against the trials per pass
    # (radii.py); per kernel at 2^22 and 2^24; whole runs with jz-fmm
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py radii 120 scripts/tune/radii.py --device nvidia --n 4194304 16777216 --trials 3 7 15
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  ;;
74) # issue 30, session 22: kernels.py with the host's time from each read's return to the next launch; readlat.py with
    # markers and launches; shared steps on refitted trees at 2^22 with fewer reference sinks (round 73 ran out of time)
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
  py readlat 60 scripts/tune/readlat.py --device nvidia --n 16777216
  py refit_4m 200 scripts/tune/refit_shared.py --device nvidia --n 4194304 --k 1 4 8 --sinks 100 --json "$D/refit_4m.json"
  ;;
73) # issue 30, session 22: per kernel again with the cheaper caller lookup of kernels.py (the gaps after blocking reads were
    # partly its own traceback.extract_stack); the latency of a small read (readlat.py); shared steps on refitted trees,
    # a build every K forces (refit_shared.py, an experiment: not an option of the code)
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py readlat 60 scripts/tune/readlat.py --device nvidia --n 16777216
  py refit_4m 200 scripts/tune/refit_shared.py --device nvidia --n 4194304 --k 1 2 4 8 --sinks 300 --json "$D/refit_4m.json"
  py refit_16m 250 scripts/tune/refit_shared.py --device nvidia --n 16777216 --k 1 4 8 --sinks 150 --json "$D/refit_16m.json"
  ;;
72) # issue 30, session 22: small reads waited for by polling the copy's status (transfer.read_small) against the driver's
    # blocking wait (HYBRIDTREE_READ_WAIT=block), per kernel at 2^22 and 2^24; whole runs with jz-fmm
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  HYBRIDTREE_READ_WAIT=block py kernels_block 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels_block.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  ;;
71) # issue 30, session 22, final code: round 70's changes plus the longest list found on the device (4 bytes read) and
    # the extent reduced on the device (48 bytes read): per-kernel times, whole runs with jz-fmm, the cosmological sphere
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py cosmo_sphere 400 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
  ;;
70) # issue 30, session 22: results enqueued back before the list sizes are read, Lagrangian radii on the device with one
    # read, builds without timing waits: per-kernel times and whole runs with jz-fmm at 2^22 and 2^24
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  ;;
68) # issue 30, session 21, final code: results back to the caller's order as a gather (sort_back64); per-kernel times and whole runs with jz-fmm
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  ;;
69) # session 21, final code: the whole suite on the GPU
  HYBRIDTREE_DEVICE=nvidia py pytest_all 560 -m pytest -q -p no:cacheprovider --tb=short -x
  ;;
67) # issue 30, session 21, final code of the round: a level of the reductions per value; whole runs with jz-fmm beside;
    # block steps on the cusp at 2^22 (building every substep, then refits with f = 0.1); a substep's cost; the paper's cosmological sphere
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
  py steps_4m_refit 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 99 --refit-fraction 0.1 --json "$D/steps_4m_refit.json"
  HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
  HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
  py cosmo_sphere 400 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
  ;;
66) # issue 30, session 21: launches typed and cached, no per-force reads of counts and net force, kept buffers grown with headroom:
    # the sort's tunings again, then whole runs at 2^22 and 2^24 (defaults and geometric theta = 0.5) with jz-fmm in the same round
  python3 -m pip install -q --no-index --no-deps --root-user-action=ignore .device/jz/*.whl > /dev/null 2>&1
  py sort 120 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --tuning 256,16,8,4 128,32,8,7 256,8,8,5 128,16,8,6
  py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --json "$D/runs_default.json"
  py runs_geo 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --set gravity.opening='"geometric"' --json "$D/runs_geo.json"
  ;;
64) # issue 30, session 21: device time of every kernel in a step (where the 2^22 step's time goes)
  py kernels 300 scripts/tune/kernels.py --device nvidia --n 1048576 4194304 16777216 --steps 8 --json "$D/kernels.json"
  py kernels_geo 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --set gravity.opening='"geometric"' --json "$D/kernels_geo.json"
  py sort 120 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --tuning 256,16,8,4 128,32,8,7
  ;;
65) # issue 30, session 21: blocking reads and the device's idle gaps in a step, host cost per launch; cProfile of the host
  py kernels 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
  py cprofile 200 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --cprofile
  ;;
1)  # session 3's baseline (the code as it was at commit cc16df4 plus --peer-cuda)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_sort.py tests/gravity/test_device_build.py
  py hybrid_1m 200 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  py grav_1m 120 scripts/bench/force.py --device nvidia --n 1000000 --direct-n --build host device --phases --peer-cuda --json "$D/grav_1m.json"
  py grav_big 200 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n --phases --peer-cuda --json "$D/grav_big.json"
  py grav_pocl 100 scripts/bench/force.py --device cpu --n 1000000 --direct-n --phases --repeat 1
  for g in 32 128 256; do py group_$g 60 scripts/bench/force.py --device nvidia --n 4194304 --direct-n --n-group $g --repeat 1 --sample 300; done
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
  py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
  pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
  ;;
2)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/gravity/test_hybrid.py tests/gravity/test_device_build.py -k "list_walk or upload or device_tree"
  py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1000000 4194304 --kernels tree_walk walk_lists \
      --n-group 32 64 128 256 --tile 1 2 4
  py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  py grav 200 scripts/bench/force.py --device nvidia --n 1000000 4194304 16777216 --direct-n --phases \
      --peer-cuda --json "$D/grav.json"
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
  py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
  pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
  ;;
3)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/gravity/test_hybrid.py tests/gravity/test_device_build.py -k "list_walk or upload or device_tree or self"
  py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1000000 4194304 16777216 --kernels walk_lists \
      --n-group 64 128 256 --tile 1 4 --profile
  py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  py hybrid_1m_quad 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --multipole quadrupole
  py grav 200 scripts/bench/force.py --device nvidia --n 1000000 4194304 16777216 --direct-n --phases --json "$D/grav.json"
  py grav_pocl 150 scripts/bench/force.py --device cpu --n 1000000 --direct-n --phases --repeat 1
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
  py grav_128m 240 scripts/bench/force.py --device nvidia --n 134217728 --direct-n --phases --repeat 1 --sample 200
  pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
  ;;
4)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_hybrid.py \
      tests/gravity/test_device_build.py -k "on_device or restart or list_walk or upload or n_hard"
  py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  py hybrid_1m_host 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --host-steps
  py hybrid_1m_quad 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --multipole quadrupole
  py hybrid_4m 150 scripts/bench/step.py hybrid --n 4194304 --device nvidia --t-end 0.0625 --json
  py hybrid_100k 60 scripts/bench/step.py hybrid --n 100000 --device nvidia --t-end 0.125 --json
  py mpi_pocl 200 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu
  ;;
5)  # session 4: MPI driver, overlapped LET walks, one GPU shared by K processes (issues 5, 7)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/parallel/test_mpi.py tests/parallel/test_mpi_run.py
  py mpi_pocl 100 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu --procs 2 4
  py mpi_pocl_overlap 100 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu --procs 2 4 --overlap
  py mpi_gpu 150 scripts/bench/mpi.py -n 1048576 --steps 2 --device nvidia --procs 1 2 4
  echo "== run_1m" >> "$O/index.txt"; t0=$(date +%s)
  timeout 80 mpiexec -n 2 python -m hybridtree run configs/plummer_1m.toml --device nvidia --quiet \
      --set time.t_end=0.03125 --set output.diag_every=4 --set output.dir="$D/run1m" \
      --set output.snapshot_files=per_process > "$D/run_1m.txt" 2>&1
  echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
  cp "$D/run1m/diagnostics.csv" "$D/run1m/run.log" "$D/" 2>/dev/null; rm -rf "$D/run1m"
  ;;
6)  # session 5: sinks per work-item (direct NI, list-walk SINKS), pinned staging (issue 6)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py \
      tests/device/test_transfer.py tests/gravity/test_treewalk.py tests/gravity/test_hybrid.py -k "direct or sinks or any_n or transfer or round_trip or scratch or list_walk or plain"
  py transfer 90 scripts/bench/transfer.py --device nvidia --n 4194304 16777216 --chunk-mb 4 16 64
  py tune_direct 150 scripts/tune/direct.py --device nvidia --n 1048576 --wg 128 256 512 1024 --ni 1 2 4 --split 0 1
  HYBRIDTREE_CL_OPTIONS=-cl-denorms-are-zero py tune_direct_daz 60 scripts/tune/direct.py --device nvidia \
      --n 1048576 --wg 256 512 --ni 1 2 4 --split 0
  py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
      --n-group 64 128 256 --sinks 1 2 4 --tile 1 2 --profile
  py grav 120 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n --phases
  ;;
7)  # session 5: packed sink groups, unrolled direct tiles, PTX (issue 6)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py \
      tests/gravity/test_device_build.py tests/gravity/test_treewalk.py -k "direct or sinks or groups or list_walk or any_n or plain"
  py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
      --n-group 64 128 256 --sinks 1 2 4 --profile
  py tune_direct 120 scripts/tune/direct.py --device nvidia --n 1048576 --wg 256 512 1024 --ni 1 2 4 \
      --unroll 0 4 8 --split 0
  py ptx_direct 30 scripts/tune/dump_ptx.py --device nvidia --source direct.cl --out "$D/direct.ptx" \
      --define WG=512 NI=1 SPLIT=0 ZERO_GUARD=0
  py ptx_eval 30 scripts/tune/dump_ptx.py --device nvidia --source walklist.cl --out "$D/walklist.ptx" \
      --define WG=128 SINKS=1 TILE=128 ZERO_GUARD=0 QUAD=0
  py grav 120 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n --phases
  ;;
8)  # session 5 final: packed groups (box-limited), defaults SINKS=2 and NI=2; the issue 6 table
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 100 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_build.py \
      tests/gravity/test_treewalk.py -k "groups or list_walk or equals"
  py tune_walk 150 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
      --n-group 128 256 --sinks 1 2 --pack 0 1 --profile
  py grav 200 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n 1048576 \
      --phases --peer-cuda --json "$D/grav.json"
  py scaling 120 scripts/bench/force.py --device nvidia --n 1024 4096 16384 65536 262144 \
      --direct-n 1024 4096 16384 65536 262144 --repeat 3 --sample 200 --json "$D/scaling.json"
  py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1 \
      --json "$D/pocl.json"
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
  py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
  pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
  ;;
9)  # session 5: the direct kernel on PoCL 5 (an abort in round 8), the H100's direct row at 2^20
  echo "== pocl_build" >> "$O/index.txt"; bash scripts/tune/check_pocl_build.sh > "$D/pocl_build.txt" 2>&1
  py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1
  py grav_direct 150 scripts/bench/force.py --device nvidia --n 16777216 --n-group 256 --direct-n 1048576 \
      --phases --repeat 2 --sample 300
  ;;
10) # session 5: the direct kernel without the per-tile branch on PoCL 5 (SELF_BRANCH=0 on CPUs)
  echo "== pocl_build" >> "$O/index.txt"; bash scripts/tune/check_pocl_build.sh > "$D/pocl_build.txt" 2>&1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 60 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py
  py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1
  ;;
11) # session 5: radix-sort sizes on the GPU (never measured), then the force with the fastest
  py tune_sort 80 scripts/tune/sort.py --device nvidia --n 4194304 16777216 --tuning 256,16,8,4 \
      128,16,8,4 256,8,8,4 256,16,8,5 128,32,8,6 128,16,8,6 64,32,8,8 64,16,8,8 32,64,8,8
  best=$(grep "N=  4194304" "$D/tune_sort.txt" | grep "order ok" | sort -k4 -g | head -1 | awk '{print $3}')
  echo "best sort tuning at 2^22: $best" >> "$O/index.txt"
  HYBRIDTREE_SORT_TUNING=$best py grav_sort 90 scripts/bench/force.py --device nvidia \
      --n 4194304 16777216 --direct-n --phases --repeat 3
  ;;
12) # session 6: buffered list writes (LBUF), copies of small groups (REPLICATE), 4 MB chunks; memory
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/device/test_transfer.py -k "list_walk or buffered or copies or release or round_trip"
  py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
      --n-group 128 256 --sinks 2 --profile --variants LBUF=0,REPLICATE=1 LBUF=8,REPLICATE=1 \
      LBUF=16,REPLICATE=1 LBUF=8,REPLICATE=2 LBUF=8,REPLICATE=4 LBUF=8,REPLICATE=8
  py memory 250 scripts/bench/memory.py --device nvidia --n 67108864 134217728 201326592 268435456 \
      --timeout 120 --json "$D/memory.json"
  ;;
13) # session 6: the issue 6 table in one run with the new defaults; hybrid steps re-measured
  py dbg 80 dbg_gpu.py nvidia     # a one-off script (not kept): list walk against the SIMD walk, per LBUF
  py bench_gpu 330 scripts/bench/force.py --targets --device nvidia --cpu-device cpu --peer-cuda --json "$D/bench_gpu.json"
  py hybrid_1m 100 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  ;;
14) # session 6: explicit fma in the opening test; the issue 6 table in one run
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 50 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
      -k "list_walk or buffered or copies or both_walk"
  py bench_gpu 520 scripts/bench/force.py --targets --device nvidia --cpu-device cpu --peer-cuda --json "$D/bench_gpu.json"
  ;;
15) # session 6: the final code's GPU tests, hybrid steps and 2^26 with the new defaults
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
      tests/device/test_transfer.py tests/gravity/test_hybrid.py -k "list_walk or buffered or copies or release or on_device or round_trip"
  py hybrid_1m 60 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
  py grav_64m 200 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
  ;;
16) # issue 17, the whole run on the device: state/reduce/run tests, bench_step with jz-fmm beside
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -p no:cacheprovider tests/integrate/test_state.py \
      tests/device/test_reduce.py tests/run/test_run.py tests/gravity/test_hybrid.py -k "not energy_error"
  ls .device/jz/*.whl > /dev/null 2>&1 && python -m pip install -q --no-index --no-deps \
      --root-user-action=ignore .device/jz/*.whl > "$D/jz_install.txt" 2>&1
  py bench_step 420 scripts/bench/step.py runs --device nvidia --peer --n 4194304 16777216 \
      --schemes plain-mono hybrid-mono --tmp /tmp/bs --json "$D/bench_step.json"
  ;;
17) # issue 17: the other schemes, 2^20, 2^26, and the largest run that steps (cold sphere, 2^27)
  py bench_step 330 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 16777216 \
      --schemes plain-quad hybrid-quad --tmp /tmp/bs --json "$D/bench_step2.json"
  py bench_step_small 60 scripts/bench/step.py runs --device nvidia --n 1048576 \
      --schemes plain-mono hybrid-mono --tmp /tmp/bs --json "$D/bench_step3.json"
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$D/mem_trace.txt" 2>&1 &)
  echo "== run_2e27" >> "$O/index.txt"; t0=$(date +%s)
  timeout 240 python -m hybridtree run configs/plummer_1m.toml --device nvidia --quiet --overwrite \
      --set ics.kind=cold_sphere --set ics.n=134217728 --set time.t_end=0.0078125 \
      --set time.dt=0.001953125 --set output.diag_every=1 --set output.snapshot_dt=0.0078125 \
      --set gravity.multipole=monopole --set gravity.eps=0.01 --set output.dir=/tmp/r27 > "$D/run_2e27.txt" 2>&1
  echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
  pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
  cp /tmp/r27/diagnostics.csv "$D/diag_2e27.csv" 2>/dev/null; ls -la /tmp/r27 > "$D/r27_ls.txt" 2>&1
  ;;
18) # issue 17: cost of the diagnostics at 2^22; snapshots in the background at 2^24
  py bench_diag8 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono \
      --steps 48 --diag-every 8 --tmp /tmp/bs --json "$D/diag8.json"
  py bench_diag48 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono \
      --steps 48 --diag-every 48 --tmp /tmp/bs --json "$D/diag48.json"
  echo "== run_snap_2e24" >> "$O/index.txt"; t0=$(date +%s)
  timeout 200 python -m hybridtree run configs/plummer_1m.toml --device nvidia --overwrite \
      --set ics.n=16777216 --set time.t_end=0.0625 --set output.diag_every=8 \
      --set output.snapshot_dt=0.015625 --set gravity.multipole=monopole --set gravity.eps=0.01 \
      --set output.dir=/tmp/s24 > "$D/run_snap_2e24.txt" 2>&1
  echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
  cp /tmp/s24/diagnostics.csv "$D/diag_snap_2e24.csv" 2>/dev/null; ls -la /tmp/s24 > "$D/s24_ls.txt" 2>&1
  ;;
19) # issue 18: device LET and migration under mpiexec on one H100 (2^22, K = 1, 2, 4)
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -p no:cacheprovider \
      tests/parallel/test_let_device.py tests/parallel/test_mpi.py -k "device or same_input or three"
  py mpi_2e22 240 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
      --json "$D/mpi_2e22.json"
  py mpi_2e22_overlap 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 2 4 \
      --overlap --json "$D/mpi_2e22_overlap.json"
  ;;
20) # issue 18: fewer waits in the LET selection; K processes alone on the GPU; 16-core CPU device
  py mpi_2e22 240 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
      --json "$D/mpi_2e22.json"
  py mpi_2e22_overlap 100 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 4 \
      --overlap --json "$D/mpi_2e22_overlap.json"
  ;;
22) # issue 18: the same on the machine's 16-core PoCL CPU device (2^20 took 4.7 s a step)
  py mpi_pocl 400 scripts/bench/mpi.py -n 262144 --steps 2 --device cpu --procs 1 2 4 \
      --json "$D/mpi_pocl.json"
  ;;
21) # issue 18: the beyond-one-node LET model (2^24, 2^26), on the machine's 16 cores
  py let_model 560 scripts/model/let_model.py --n 16777216 67108864 --jobs 16 --out "$D/let_model.json" \
      --plot "$D/let_model.png"
  ;;
23) # issue 18: hard LETs of the particles within r_out only, one net-force allreduce per force
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -p no:cacheprovider \
      tests/parallel/test_let_device.py tests/parallel/test_mpi.py -k "device or agree"
  py mpi_2e22 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
      --json "$D/mpi_2e22.json"
  py let_model 330 scripts/model/let_model.py --n 16777216 67108864 --jobs 16 --out "$D/let_model.json" \
      --plot "$D/let_model.png"
  ;;
24) # issue 18: hard substeps with the hard LET as a second tree (default) against merged
  py mpi_2e22 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
      --json "$D/mpi_2e22.json"
  py mpi_2e22_merged 120 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 2 4 \
      --hard-tree merged --json "$D/mpi_2e22_merged.json"
  ;;
25) # issue 19: the Python API on the GPU (tests, the caller's clock), the 1M config, quiet builds
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/run/test_api.py \
      tests/device/test_build_log.py tests/test_docs_examples.py
  py api 200 scripts/bench/step.py api --device nvidia --n 1048576 4194304 --steps 16
  py step 150 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 16 \
      --json "$D/step.json"
  py warnings 60 -W error::pyopencl.CompilerWarning -c "import numpy as np; from hybridtree.gravity \
import accelerations as a; f = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, \
device='nvidia'); print('no CompilerWarning escaped', f.device)"
  rm -rf /tmp/p1m; py plummer_1m 300 -m hybridtree run configs/plummer_1m.toml --quiet \
      --set output.dir=/tmp/p1m
  cp /tmp/p1m/run.log /tmp/p1m/diagnostics.csv "$D/" 2>/dev/null; ls -la /tmp/p1m > "$D/p1m_ls.txt"
  ;;
26) # issue 19: the Python API again (O(N) caller order, one report per call); quiet builds
  py api 200 scripts/bench/step.py api --device nvidia --n 1048576 4194304 16777216 --steps 16
  py warnings 60 -c "import warnings, numpy as np, pyopencl; warnings.simplefilter('error', \
pyopencl.CompilerWarning); from hybridtree.gravity import accelerations as a; \
f = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, device='nvidia', \
method='direct'); g = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, \
device='nvidia'); print('no CompilerWarning escaped', f.device)"
  ;;
27) # issue 20: the oct-tree paper's cosmological sphere end to end (ICs, 3584 steps, halos, plots)
  py cosmo_sphere 590 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia \
      --out /tmp/cs --json "$D/cosmo_sphere.json"
  cp /tmp/cs/diagnostics.csv "$D/cosmo_sphere_diagnostics.csv"; cp /tmp/cs/run.log "$D/"
  cp /tmp/cs/*.png "$D/" 2>/dev/null; ls -la /tmp/cs > "$D/cs_ls.txt"
  ;;
28) # issue 20: cosmic variance of the z = 0 mass function: the same sphere, seeds 2 and 3
  for seed in 2 3; do
    py cosmo_seed$seed 290 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia \
        --out /tmp/cs$seed --set ics.seed=$seed --json "$D/cosmo_sphere_seed$seed.json"
  done
  ;;
29) # issue 20: an 8 times larger sphere (R = 90 Mpc, 22.6 M particles, 1024 steps) for the mass function
  py cosmo_big 590 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cb \
      --set ics.n_grid=352 --set ics.box=180.5 --set ics.radius=90.0 --set cosmology.steps=1024 \
      --set output.redshifts=0 --json "$D/cosmo_big.json"
  cp /tmp/cb/diagnostics.csv "$D/cosmo_big_diagnostics.csv"; cp /tmp/cb/*.png "$D/" 2>/dev/null
  ;;
30) # issue 21: block steps and the relative opening criterion: GPU tests, force errors, steps at 2^20
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py
  py cosmo_small 200 -m hybridtree run configs/cosmo_small.toml --set output.dir=/tmp/cs --set gravity.device=nvidia --quiet
  Z0=$(ls /tmp/cs/snapshot_*.hdf5 | tail -1); echo "z=0 snapshot: $Z0" >> "$O/index.txt"
  py errors 400 scripts/bench/timesteps.py errors --device nvidia --n 1048576 4194304 --snapshot "$Z0" --snap-eps 0.04 --json "$D/errors.json"
  py steps_1m 300 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --json "$D/steps_1m.json"
  ;;
32) # issue 21: block steps with tree refits, two eta; the criteria inside runs
  py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_1m.json"
  py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_4m.json"
  py openings 200 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 0.7 --alpha 0.0005 0.001 0.002 --json "$D/openings.json"
  ;;
40) # issue 30: the cost/accuracy curve for the defaults (2^20..2^24, both orders, a z = 0 snapshot), 32-step runs with jz-fmm
  py cosmo_small 200 -m hybridtree run configs/cosmo_small.toml --set output.dir=/tmp/csm --set gravity.device=nvidia --quiet
  Z0=$(ls /tmp/csm/snapshot_*.hdf5 | tail -1); echo "z=0 snapshot: $Z0" >> "$O/index.txt"
  py errors 300 scripts/bench/timesteps.py errors --device nvidia --n 1048576 4194304 16777216 --theta 0.5 0.6 \
      --alpha 0.002 0.003 0.005 --snapshot "$Z0" --snap-eps 0.04 --json "$D/errors.json"
  for m in monopole quadrupole; do py openings_$m 200 scripts/bench/timesteps.py openings --device nvidia \
      --n 4194304 16777216 --theta 0.5 --alpha 0.002 0.003 0.005 --multipole $m --json "$D/openings_$m.json"; done
  ;;
41) # issue 30: 32-step energy runs at 2^22 and 2^24 (both criteria), jz-fmm in the same run; PoCL's curve
  py runs_geo 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --peer --set gravity.opening='"geometric"' --json "$D/runs_geo.json"
  for al in 0.002 0.003; do py runs_rel_$al 150 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 \
      --schemes plain-mono --steps 32 --diag-every 8 --set gravity.opening='"relative"' --set gravity.alpha=$al \
      --json "$D/runs_rel_$al.json"; done
  py pocl_errors 150 scripts/bench/timesteps.py errors --device cpu --n 100000 --sample 1000 --theta 0.5 0.6 \
      --alpha 0.002 0.003 0.005 --json "$D/pocl_errors.json"
  ;;
45) # issue 30, session 15 (tune/no_split: since replaced by tune/serial_walk): whole runs with the relative walks split (the default then) against unsplit, 2^22 and 2^24; GPU tests of the walk
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py tests/gravity/test_opening.py
  for k in 1 2; do N="4194304 16777216"; [ $k = 2 ] && N=4194304
    py runs_split_$k 200 scripts/bench/step.py runs --device nvidia --n $N --schemes plain-mono --steps 32 \
        --diag-every 8 --json "$D/runs_split_$k.json"
    PYTHONPATH=scripts/tune/no_split:$PWD py runs_nosplit_$k 200 scripts/bench/step.py runs --device nvidia \
        --n $N --schemes plain-mono --steps 32 --diag-every 8 --json "$D/runs_nosplit_$k.json"
  done
  ;;
47) # issue 31, session 17: the mesh on the device (reikna FFT), GPU tests; the public call; a 128^3 box run end to end
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_periodic.py tests/gravity/test_pm_device.py tests/cosmo/test_periodic_box.py
  py periodic 200 scripts/bench/periodic.py --device nvidia --n 262144 2097152 16777216 --rcut 4.5 7.0 --theta 0.5 --repeat 2 --sample 1000
  py box128 250 -m hybridtree run configs/cosmo_box.toml --device nvidia --set output.dir="$D/box128"
  py pk128 60 -m hybridtree pk "$D/box128/snapshot_0003.hdf5" --out "$D/pk128_z0.txt"
  rm -f "$D"/box128/snapshot_000[012].hdf5
  ;;
63) # issue 32 / 30, session 20: GOTHIC's M31 at 2^23 for 49.5 Myr with refitted trees between builds (gravity.refit_fraction):
    # half the 1 Gyr run's stepping was tree builds (278 of 938 s); per smallest step against round 62's 0.0407 s (builds every force)
  for f in 0.1 0.5; do
    py m31_23_refit_$f 130 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
        --set gravity.refit_fraction=$f --out /tmp/m31_23r --json "$D/m31_23_refit_$f.json"
  done
  ;;
61|62) # issue 32, session 20: a softening per particle type in the walks (PER_EPS): GPU tests; its cost in the public call at
    # 2^22 and 2^24 (one softening against two per particle); GOTHIC's M31 at 2^23 for 50 Myr with the halo softened twice as much
    # (62: with one softening beside).  Round 62 came after two kernel changes: the lo word read inside REL again (NVIDIA's compiler
    # lost the hi/lo precision with it in a temporary: two walk tests failed in round 61) and a mixed cell opened only for groups
    # softened less than its largest (MIXED_GUARD, GADGET-4's rule; round 61 opened it for all)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 280 -m pytest -q -p no:cacheprovider tests/gravity/test_eps_tree.py \
      tests/gravity/test_eps_per_particle.py tests/run/test_eps_types.py tests/gravity/test_treewalk.py \
      tests/gravity/test_device_build.py tests/gravity/test_softening.py tests/integrate/test_state.py tests/gravity/test_hybrid.py
  py eps_types 150 scripts/bench/eps_types.py --device nvidia --n 4194304 16777216 --sample 40 --json "$D/eps_types.json"
  [ "$R" = 62 ] && py m31_23_one 120 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 \
      --device nvidia --out /tmp/m31_23o --json "$D/m31_23_one.json"
  py m31_23_eps 150 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
      --set gravity.eps_types=0.015625,0.03125 --out /tmp/m31_23e --json "$D/m31_23_eps.json"
  ;;
60) # issue 32, session 20: GOTHIC's M31 model at 2^23 for 1 Gyr (t = 212) in slices, one call each on the warm machine:
    # bash scripts/gpu_round.sh 60 T [new]: the run in .device/m31_23_1gyr (git-ignored: kept between calls while the machine
    # stays warm) up to t = T ('new': started afresh; else continued: an error if the folder is gone); a slice stops itself after
    # WALL_LIMIT s (default 540; a restart point) to be continued; the call that reaches 212 writes the report and deletes the snapshots
  M=$PWD/.device/m31_23_1gyr; T=${2:-212.0}
  if [ "${3:-}" = new ]; then RES=; else RES=--resume; fi
  py m31_23_1gyr_to_$T 580 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 212.0 --device nvidia \
      --snapshot-dt 53.0 --slice-to "$T" $RES --wall-limit "${WALL_LIMIT:-540}" --out "$M" --json "$D/m31_23_1gyr.json"
  cp "$M"/diagnostics.csv "$M"/diagnostics_types.csv "$M"/timebins.csv "$M"/run.log "$M"/galaxy_slices.json "$O/" 2>/dev/null
  [ -e "$D/m31_23_1gyr.json" ] && cp "$D/m31_23_1gyr.json" "$O/" && rm -f "$M"/*.hdf5
  (ls -la "$M"; df -h "$M") > "$O/m31_folder.txt" 2>&1
  cat "$O/index.txt"; tail -c 1500 "$D/m31_23_1gyr_to_$T.txt"
  ;;
55) # issue 32, session 19: particle types and galaxies on the GPU: tests; GOTHIC's M31 model with block steps, 2^23 for 50 Myr (wall per smallest step)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/run/test_particle_types.py \
      tests/integrate/test_state.py tests/ics/test_galaxy.py tests/parallel/test_mpi_run.py
  py m31_23_short 280 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
      --out /tmp/m31_23 --json "$D/m31_23_short.json"
  ;;
59) # session 19 review: SPLIT_WEIGHT in walkcommon.cl/treewalk.cl (the spline's split weight written once): GPU tests of the walks
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_softening.py \
      tests/gravity/test_treewalk.py tests/gravity/test_hybrid.py tests/gravity/test_eps_per_particle.py
  ;;
58) # issue 32, session 19: a softening per particle in the direct kernel (PER_EPS): GPU tests
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_eps_per_particle.py \
      tests/gravity/test_direct.py tests/gravity/test_softening.py
  ;;
57) # issue 32, session 19: round 56's 2^20 M31 for 1 Gyr again, alone (it took more than 320 s there); its logs kept
  py m31_20_1gyr 560 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 1048576 --t-end 212.0 --device nvidia \
      --out "$D/m31_20" --json "$D/m31_20_1gyr.json"
  rm -f "$D"/m31_20/*.hdf5
  ;;
56) # issue 32, session 19: GOTHIC's M31 model with block steps: 2^20 for 1 Gyr (the disk's stability), 2^23 for 125 Myr
  py m31_20_1gyr 320 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 1048576 --t-end 212.0 --device nvidia \
      --out /tmp/m31_20 --json "$D/m31_20_1gyr.json"
  py m31_23_long 220 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 26.5 --device nvidia \
      --out /tmp/m31_23l --json "$D/m31_23_125myr.json"
  ;;
54) # issue 31, session 19: hybridtree's own convergence on GADGET-4's 64^3 ICs (.device/g4, carried): theta, mesh, split, rcut,
    # steps; P(k) of each, z = 0 positions of two back for halo profiles against GADGET-4's snapshot
  ICS=$PWD/.device/g4/snapshot_ics_000.hdf5
  run_ht() { local name=$1 steps=$2; shift 2; echo "== ht_$name" >> "$O/index.txt"; local t0=$(date +%s)
    timeout 200 bash scripts/gadget4/compare_hybridtree.sh "$ICS" - "$D/ht_$name" "$steps" nvidia "$@" > "$D/ht_$name.txt" 2>&1
    echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; }
  run_ht 512 512
  run_ht tight 1024 --set gravity.theta=0.25 --set gravity.softening=spline --set gravity.pm_grid=128 --set gravity.rcut=9
  run_ht 512_pm128 512 --set gravity.pm_grid=128
  run_ht 512_theta025 512 --set gravity.theta=0.25
  run_ht 512_asmth2 512 --set gravity.asmth=2
  run_ht 512_rcut45 512 --set gravity.rcut=4.5
  for v in 512 tight; do python - "$D/ht_$v/run/snapshot_0003.hdf5" "$O/ht_${v}_z0.hdf5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as g:
    for name in f:
        if not name.startswith("PartType"):
            f.copy(name, g)
    for a, v in f.attrs.items():
        g.attrs[a] = v
    for t in [n for n in f if n.startswith("PartType")]:
        p = g.create_group(t)
        for name in ("Coordinates", "ParticleIDs", "Masses"):
            if name in f[t]:
                f.copy(f"{t}/{name}", p)
PY
  done
  rm -f "$D"/ht_*/run/*.hdf5
  ;;
53) # issue 31, session 19: GADGET-4 64^3 (relative criterion, ErrTolForceAcc 0.005) on the machine's 16 CPU cores, continued over
    # calls (gadget4/device_run.sh, .device/g4pkg from gadget4/pack_device.sh); on the first call hybridtree runs GADGET-4's ICs on the GPU
    # meanwhile; once GADGET-4 is done: P(k) of its snapshots, the displacement shells, its snapshots (without Potential) back
  G4W=$PWD/.device/g4work; ICS=$G4W/run64/ics/snapshot_ics_000.hdf5
  ( OPENING=relative ERRTOL=0.005 bash scripts/gadget4/device_run.sh 64 "$G4W" 16 "${G4_SECONDS:-580}" > "$O/g4.txt" 2>&1 ) &
  G4PID=$!
  for i in $(seq 90); do [ -s "$ICS" ] && break; sleep 2; done
  if [ ! -e "$G4W/hybridtree_done" ]; then
    lscpu > "$D/lscpu.txt" 2>&1
    run_ht() { local name=$1 steps=$2; shift 2; echo "== ht_$name" >> "$O/index.txt"; local t0=$(date +%s)
      timeout 150 bash scripts/gadget4/compare_hybridtree.sh "$ICS" - "$G4W/ht_$name" "$steps" nvidia "$@" > "$D/ht_$name.txt" 2>&1
      echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; }
    run_ht 512 512
    run_ht 1024 1024
    run_ht 512_spline 512 --set gravity.softening=spline
    run_ht 512_relative 512 --set gravity.opening=relative
    run_ht 2048_spline 2048 --set gravity.softening=spline
    touch "$G4W/hybridtree_done"
  fi
  wait $G4PID
  cp -r "$G4W"/ht_* "$D/" 2>/dev/null; rm -f "$D"/ht_*/run/*.hdf5
  if [ -e "$G4W/run64/output/snapshot_003.hdf5" ]; then
    G=$G4W/run64/output
    for k in 1 2 3; do py pk_g4_$k 60 -m hybridtree pk "$G/snapshot_00$k.hdf5" --mesh 128 --out "$D/pk_gadget4_$k.txt"; done
    for v in "$G4W"/ht_*; do py shells_$(basename "$v") 120 scripts/gadget4/displacement_shells.py "$ICS" "$G" "$v/run"; done
    cp -r "$G/powerspecs" "$G/cpu.txt" "$G/timings.txt" "$G/fof_tab_003.hdf5" "$G4W/run64/param.txt" "$G4W/run64/walltime.txt" "$D/" 2>/dev/null
    for k in 0 2 3; do python - "$G/snapshot_00$k.hdf5" "$O/g4_snapshot_00$k.hdf5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as g:
    for name in f:
        if name != "PartType1":
            f.copy(name, g)
    for a, v in f.attrs.items():
        g.attrs[a] = v
    p = g.create_group("PartType1")
    for name in ("Coordinates", "Velocities", "ParticleIDs"):
        f.copy(f"PartType1/{name}", p)
PY
    done
  fi
  grep -h "Sync-Point" "$G4W/run64/log.txt" | tail -1 >> "$O/index.txt"
  ;;
52) # session 18: round 51 again within its time (the float64 spline reference on the host at 2^20 took minutes): 2^22, 2^24 and direct 2^18, 200 sampled sinks
  for s in plummer spline; do
    py force_$s 250 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n 262144 \
        --softening $s --sample 200 --json "$D/force_$s.json"
  done
  ;;
51) # session 18: GADGET's spline softening (cl/softening.cl): GPU tests of the force kernels; the public call's cost against Plummer at 2^20-2^24, tree and direct
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_softening.py \
      tests/gravity/test_treewalk.py tests/gravity/test_direct.py tests/gravity/test_periodic.py tests/gravity/test_hybrid.py
  for s in plummer spline; do
    py force_$s 200 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n 1048576 \
        --softening $s --json "$D/force_$s.json"
  done
  ;;
50) # issue 31, session 18: periodic boxes on many processes (mesh summed over processes, periodic LET): GPU tests; 128^3 on 1 and 2 processes sharing the H100, P(k) of both
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/parallel/test_mpi_periodic.py \
      tests/cosmo/test_periodic_box.py tests/gravity/test_periodic.py tests/gravity/test_pm_device.py tests/parallel/test_let_device.py
  for k in 1 2; do
    echo "== box128_k$k" >> "$O/index.txt"; t0=$(date +%s.%N)
    timeout 300 mpiexec -n $k python -m hybridtree run configs/cosmo_box.toml --device nvidia --set output.dir="$D/box128_k$k" \
        --set 'output.snapshot_files="per_process"' > "$D/box128_k$k.txt" 2>&1
    echo "   rc=$? wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" >> "$O/index.txt"
    py pk128_k$k 60 -m hybridtree pk "$(ls "$D"/box128_k$k/snapshot_0003*.hdf5 | head -1)" --out "$D/pk128_k${k}_z0.txt"
    cp "$D/box128_k$k/diagnostics.csv" "$D/box128_k${k}_diagnostics.csv"; rm -f "$D"/box128_k$k/snapshot_*.hdf5
  done
  ;;
49) # issue 31, session 17: the configs' 512 steps: configs/cosmo_box.toml (128^3) and the 256^3 box, each with P(k) and halos
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for n in 128 256; do
    py box$n 330 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=$n \
        --set gravity.eps=$(python3 -c "print(100 / 0.7 / $n / 30)") --set output.dir="$D/box$n"
    py pk$n 60 -m hybridtree pk "$D/box$n/snapshot_0003.hdf5" --out "$D/pk${n}_z0.txt"
    py halos$n 200 -m hybridtree halos "$D/box$n/snapshot_0003.hdf5"
    rm -f "$D"/box$n/snapshot_*.hdf5
  done
  ;;
48) # issue 31, session 17: a 256^3 box of 100 Mpc/h from z = 49 to 0 (the issue's speed target), its P(k)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  py box256 480 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 --set gravity.eps=0.0186 \
      --set output.dir="$D/box256"
  py pk256 60 -m hybridtree pk "$D/box256/snapshot_0003.hdf5" --out "$D/pk256_z0.txt"
  rm -f "$D"/box256/snapshot_*.hdf5
  ;;
46) # issue 31, session 16: periodic forces by TreePM (the PERIODIC walk on the GPU, host mesh): GPU tests and timings
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_periodic.py tests/gravity/test_treewalk.py tests/tools/test_vendor_compile.py
  py periodic 400 scripts/bench/periodic.py --device nvidia --n 262144 2097152 16777216 --rcut 4.5 7.0 --theta 0.5 0.7
  ;;
44) # issue 30, session 15: long group walks continued in pieces (SPLIT_VISITS, PIECES; first equal parts, then octaves around the group: this version) at 2^22 and 2^24
  V=""; for sv in 1024 2048 4096; do for pc in 32 48 64; do V="$V SPLIT_VISITS=$sv,PIECES=$pc"; done; done
  py split_4m 300 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 --variants "" $V
  py split_16m 250 scripts/tune/relative.py --device nvidia --n 16777216 --theta 0.5 --alpha 0.002 --repeat 1 \
      --variants "" SPLIT_VISITS=2048,PIECES=48 SPLIT_VISITS=2048,PIECES=64 SPLIT_VISITS=4096,PIECES=64
  ;;
43) # issue 30, session 15: do the longest group walks set walk_lists's time (a visit cap), and what theta_min costs in accuracy
  for tm in 0.25 0.35 0.5; do py rel_tm$tm 200 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 \
      --alpha 0.002 --theta-min $tm --variants "" $( [ $tm = 0.25 ] && echo MAX_VISITS=1000 MAX_VISITS=2000 MAX_VISITS=4000 MAX_VISITS=8000 ); done
  py errors 300 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 0.003 \
      --theta-min 0.25 0.35 0.5 --json "$D/errors.json"
  ;;
42) # issue 30: the paper's cosmological sphere with the defaults (relative α = 0.002), with quadrupoles, and geometric θ = 0.6 (the paper's); linear growth against D(a) and the isolated sphere's linear theory.  Variants as arguments: bash scripts/gpu_round.sh 42 mono quad
  shift
  for v in "$@"; do
    case $v in mono) S=();; quad) S=(--set 'gravity.multipole="quadrupole"');;
                geo) S=(--set 'gravity.opening="geometric"');;
                qgeo) S=(--set 'gravity.opening="geometric"' --set 'gravity.multipole="quadrupole"');; esac
    py cs_$v 330 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs_$v "${S[@]}" --json "$D/cs_$v.json"
    cp /tmp/cs_$v/diagnostics.csv "$D/cs_${v}_diagnostics.csv" 2>/dev/null
    py growth_$v 200 scripts/bench/growth.py configs/cosmo_sphere.toml /tmp/cs_$v --json "$D/growth_$v.json"
  done
  ;;
37) # issue 34: the device probe on the H100 and PoCL 5; the whole suite on the GPU; a 2^22 step
  py devices 120 -m hybridtree devices
  HYBRIDTREE_DEVICE=nvidia py pytest_all 470 -m pytest -q -p no:cacheprovider --tb=line --deselect tests/tools/test_oclgrind.py --deselect tests/tools/test_vendor_compile.py
  ;;
38) # issue 34: speed unchanged where rsqrt is exact: 2^22 steps and the API force
  py step_4m 300 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 48 --diag-every 8 --json "$D/step_4m.json"
  py api 200 scripts/bench/step.py api --device nvidia --n 4194304 --steps 16
  ;;
39) # issue 34: the whole suite on the GPU, final code
  HYBRIDTREE_DEVICE=nvidia py pytest_all 560 -m pytest -q -p no:cacheprovider --tb=short
  ;;
36) # issue 21: the criteria's wall times again, the list room reset per configuration (round 33's grew)
  py openings 250 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --theta-min 0.01 0.25 --json "$D/openings.json"
  py errors 250 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --json "$D/errors.json"
  ;;
35) # final code of session 10 (issues 21, 22): GPU tests of the changed kernels; step time unchanged
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 400 -m pytest -q -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py \
      tests/gravity/test_treewalk.py tests/gravity/test_direct.py tests/device/test_reduce.py tests/device/test_device_limits.py tests/integrate/test_state.py
  py openings 120 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 --json "$D/openings.json"
  ;;
34) # issue 21, final code: GPU tests; block against shared steps (warm-up first), 2^20 and 2^22
  HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py
  py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_1m.json"
  py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_4m.json"
  ;;
33) # issue 21: theta_min against the relative walk's tail; tree refits in the block steps at 2^22 (refits and --rebuild were removed after this round: docs/benchmarks.md §11)
  py openings 250 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.002 --theta-min 0.01 0.25 0.35 --json "$D/openings.json"
  py errors 200 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --json "$D/errors.json"
  for rb in 0.5 1.0; do py steps_4m_$rb 200 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --rebuild $rb --shared-from 6 --json "$D/steps_4m_$rb.json"; done
  ;;
31) # issue 21: block against shared steps on the cusp (largest step 0.5, to t = 1), 2^20 and 2^22
  py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --json "$D/steps_1m.json"
  py steps_4m 380 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --json "$D/steps_4m.json"
  ;;
*) shift; py custom 580 "$@" ;;
esac
tar czf "$O/results.tgz" -C "$D" .
