# round 47: issue 31, session 17: the mesh on the device (reikna FFT), GPU tests; the public call; a 128^3 box run end to end
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_periodic.py tests/gravity/test_pm_device.py tests/cosmo/test_periodic_box.py
py periodic 200 scripts/bench/periodic.py --device nvidia --n 262144 2097152 16777216 --rcut 4.5 7.0 --theta 0.5 --repeat 2 --sample 1000
py box128 250 -m hybridtree run configs/cosmo_box.toml --device nvidia --set output.dir="$D/box128"
py pk128 60 -m hybridtree pk "$D/box128/snapshot_0003.hdf5" --out "$D/pk128_z0.txt"
rm -f "$D"/box128/snapshot_000[012].hdf5
