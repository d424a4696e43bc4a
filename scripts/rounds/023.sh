# round 23: issue 18: hard LETs of the particles within r_out only, one net-force allreduce per force
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -p no:cacheprovider \
    tests/parallel/test_let_device.py tests/parallel/test_mpi.py -k "device or agree"
py mpi_2e22 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
    --json "$D/mpi_2e22.json"
py let_model 330 scripts/model/let_model.py --n 16777216 67108864 --jobs 16 --out "$D/let_model.json" \
    --plot "$D/let_model.png"
