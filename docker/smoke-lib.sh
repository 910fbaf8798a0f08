# What the smoke scripts share (sourced, not run): `say` and `fail` under the name $SMOKE,
# and `compose_cmd`, Docker's compose plugin or Debian's docker-compose (installed when
# neither is there).
start=$(date +%s)
say() { echo "[$SMOKE $(( $(date +%s) - start ))s] $*"; }
fail() { echo "$SMOKE: FAILED: $*" >&2; exit 1; }

if docker compose version >/dev/null 2>&1; then
    compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    compose_cmd=(docker-compose)
else
    say "installing Debian's docker-compose"
    if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && $sudo apt-get install -y -qq docker-compose >/dev/null
    compose_cmd=(docker-compose)
fi
