# round 120: issue 30, session 30: per-type diagnostics summed on the device (cl/reduce.cl type_mass) against 5428bf2
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
