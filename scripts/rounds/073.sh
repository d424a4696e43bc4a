# round 73: issue 30, session 22: per kernel again with the cheaper caller lookup of kernels.py (the gaps after blocking reads were
# partly its own traceback.extract_stack); the latency of a small read (readlat.py); shared steps on refitted trees,
# a build every K forces (refit_shared.py, an experiment: not an option of the code)
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py readlat 60 scripts/tune/readlat.py --device nvidia --n 16777216
py refit_4m 200 scripts/tune/refit_shared.py --device nvidia --n 4194304 --k 1 2 4 8 --sinks 300 --json "$D/refit_4m.json"
py refit_16m 250 scripts/tune/refit_shared.py --device nvidia --n 16777216 --k 1 4 8 --sinks 150 --json "$D/refit_16m.json"
