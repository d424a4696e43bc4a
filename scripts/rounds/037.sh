# round 37: issue 34: the device probe on the H100 and PoCL 5; the whole suite on the GPU; a 2^22 step
py devices 120 -m hybridtree devices
HYBRIDTREE_DEVICE=nvidia py pytest_all 470 -m pytest -q -p no:cacheprovider --tb=line --deselect tests/tools/test_oclgrind.py --deselect tests/tools/test_vendor_compile.py
