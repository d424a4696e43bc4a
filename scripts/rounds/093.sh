# round 93: issue 30, session 26: the relative walk's rate against the geometric one at alpha = 0.003 on the H200 machine
py rate 200 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
