# round 86: the commands of round 85 (see there)
. "$ROUNDS/085.sh"
