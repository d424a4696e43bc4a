# round 72: issue 30, session 22: small reads waited for by polling the copy's status (transfer.read_small) against the driver's
# blocking wait (HYBRIDTREE_READ_WAIT=block), per kernel at 2^22 and 2^24; whole runs with jz-fmm
jz_wheels
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
HYBRIDTREE_READ_WAIT=block py kernels_block 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels_block.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
