# round 133: issue 57, session 33: the Pareto fronts of block against shared steps on the H200 at 2^22 with
# the code of 3dae039 (the cusp: Hernquist halo + satellite to t = 0.5; GOTHIC's M31 model to t = 10.5), each
# run by the caller's clock (scripts/bench/pareto.py)
HYBRIDTREE_DEVICE=nvidia py pareto_cusp 200 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --json "$O/cusp.jsonl" --plot "$O/cusp.png"
HYBRIDTREE_DEVICE=nvidia py pareto_m31 330 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.2 0.1 --shared 3 4 5 --ref 6 --json "$O/m31.jsonl" --plot "$O/m31.png"
