# round 136: issue 57, session 33: the Pareto fronts again at 2^22 with the code after Simulation()'s ID check
# lost numpy's unique (3.6 s of each run's 4.7 s set-up on this host, round 133's fixed cost); and the walk's
# memory tests on the GPU with the plan's reduction rows
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 40 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=line \
    tests/gravity/test_walk_memory.py
HYBRIDTREE_DEVICE=nvidia py pareto_cusp 110 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --json "$O/cusp.jsonl" --plot "$O/cusp.png"
HYBRIDTREE_DEVICE=nvidia py pareto_m31 150 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.2 0.1 --shared 3 4 5 --ref 6 --json "$O/m31.jsonl" --plot "$O/m31.png"
