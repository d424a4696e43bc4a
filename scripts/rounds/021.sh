# round 21: issue 18: the beyond-one-node LET model (2^24, 2^26), on the machine's 16 cores
py let_model 560 scripts/model/let_model.py --n 16777216 67108864 --jobs 16 --out "$D/let_model.json" \
    --plot "$D/let_model.png"
