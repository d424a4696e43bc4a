# round 16: issue 17, the whole run on the device: state/reduce/run tests, bench_step with jz-fmm beside
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -p no:cacheprovider tests/integrate/test_state.py \
    tests/device/test_reduce.py tests/run/test_run.py tests/gravity/test_hybrid.py -k "not energy_error"
ls .device/jz/*.whl > /dev/null 2>&1 && python -m pip install -q --no-index --no-deps \
    --root-user-action=ignore .device/jz/*.whl > "$D/jz_install.txt" 2>&1
py bench_step 420 scripts/bench/step.py runs --device nvidia --peer --n 4194304 16777216 \
    --schemes plain-mono hybrid-mono --tmp /tmp/bs --json "$D/bench_step.json"
