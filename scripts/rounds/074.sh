# round 74: issue 30, session 22: kernels.py with the host's time from each read's return to the next launch; readlat.py with
# markers and launches; shared steps on refitted trees at 2^22 with fewer reference sinks (round 73 ran out of time)
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
py readlat 60 scripts/tune/readlat.py --device nvidia --n 16777216
py refit_4m 200 scripts/tune/refit_shared.py --device nvidia --n 4194304 --k 1 4 8 --sinks 100 --json "$D/refit_4m.json"
