# round 167: issue 57, session 39: the block-step tests on the H200 (time.rebin's included), then M31 over ten
# times the span (t = 105) with time.rebin = step at η = 0.2 (the config's), at 2^22 and 2^23 against the
# converged runs of rounds 164 and 165 (carried: .device/refs; their shared rows are those rounds')
HYBRIDTREE_DEVICE=nvidia py pytest_blocks 150 -m pytest -q -p no:cacheprovider -n 0 --tb=short \
    tests/integrate/test_block_rebin.py tests/integrate/test_block_steps.py tests/integrate/test_timesteps.py
HYBRIDTREE_DEVICE=nvidia py m31_long_22_eta02 150 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
    --seed 2 --long --eta 0.2 --rebin step --shared --ref 4 --ref-file .device/refs/ref_long_22.npz \
    --json "$O/m31_long_22_eta02.jsonl"
HYBRIDTREE_DEVICE=nvidia py m31_long_23_eta02 220 scripts/bench/pareto.py m31 --device nvidia --n 8388608 \
    --seed 2 --long --eta 0.2 --rebin step --shared --ref 4 --ref-file .device/refs/ref_long_23.npz \
    --json "$O/m31_long_23_eta02.jsonl"
