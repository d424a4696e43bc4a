# round 62: the commands of round 61 (see there)
. "$ROUNDS/061.sh"
