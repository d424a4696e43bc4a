# round 123: issue 30, session 30, final code: radix_scatter's store order a define (SORTED_STORES: GPUs 1, CPUs 0, where the
# sorted order cost PoCL 15-25 %): the sort's and build's GPU tests (both orders), the sort at the defaults
HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider --tb=short tests/gravity/test_device_sort.py \
    tests/gravity/test_device_build.py tests/integrate/test_state.py
py sort 60 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5 \
    --tuning 256,8,8,4,1 256,8,8,4,0
