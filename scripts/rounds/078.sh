# round 78: issue 31, session 23 (not run yet): the new code's tests on the GPU (the mesh in slabs under mpiexec, block steps
# in a periodic box, the cooperative walk), then block against shared steps of a 64^3 box and the slabs' call
HYBRIDTREE_DEVICE=nvidia py tests_new 400 -m pytest -q -x tests/parallel/test_mpi_periodic.py tests/cosmo \
    tests/gravity/test_pm_slabs.py tests/gravity/test_treewalk.py tests/gravity/test_pm_device.py
HYBRIDTREE_DEVICE=nvidia py box_blocks 300 scripts/bench/box_blocks.py --n-grid 64 --steps 16 --z-end 1 \
    --eta 0.2 --shared 4 8 16 --reference 32
for k in 1 2 4; do HYBRIDTREE_DEVICE=nvidia timeout 200 mpiexec -n $k python scripts/bench/pm_slabs.py --n 16777216 \
    --mesh 256 --repeat 3 >> "$D/pm_slabs.txt" 2>&1; done
