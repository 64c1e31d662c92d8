#!/bin/bash
# A stand-in for the docker CLI in the boot tests (installed as `docker` first on PATH): no engine,
# no image; `run` runs the container's command as a plain process in the mounted host folder, so the
# VM kit's scripts, dl-launch, dl-train and the signals between them are the real ones. What it
# fakes: pulling (recorded), the container's file system (the -v folder only) and its environment
# (only PATH=$FAKE_DOCKER_PATH, HOME and the -e variables), `stop` (SIGTERM to the process that
# `run --name` started, then waiting for it as docker stop does). Every call is appended to
# $FAKE_DOCKER_STATE/calls.
set -euo pipefail

state=${FAKE_DOCKER_STATE:?FAKE_DOCKER_STATE must name a folder for the fake engine}
mkdir -p "$state/images"
echo "docker $*" >>"$state/calls"
image_file() { echo "$state/images/${1//\//_}"; }

command=${1:?usage: docker COMMAND ...}
shift
case "$command" in
  image)
    [ "${1:-}" = inspect ] || { echo "fake docker: image ${1:-} is not supported" >&2; exit 125; }
    [ -f "$(image_file "$2")" ]
    ;;
  pull)
    [ "${1:-}" = -q ] && shift
    touch "$(image_file "$1")"
    echo "$1"
    ;;
  rm)
    exit 0
    ;;
  stop)
    [ "$1" = --time ] || { echo "fake docker: stop expects --time N NAME" >&2; exit 125; }
    grace=$2 name=$3
    pid=$(cat "$state/$name.pid" 2>/dev/null) || { echo "Error: No such container: $name" >&2; exit 1; }
    kill -TERM "$pid" 2>/dev/null || exit 0
    # docker stop returns once the container has exited (SIGKILL after the grace time).
    timeout "$grace" tail --pid="$pid" -f /dev/null -s 0.1 || kill -KILL "$pid" 2>/dev/null || true
    ;;
  run)
    host='' inside='' workdir='' name=''
    env_args=(PATH="${FAKE_DOCKER_PATH:?}" HOME="${HOME:-/root}")
    while [ $# -gt 0 ]; do
      case "$1" in
        --rm) shift ;;
        --name) name=$2; shift 2 ;;
        --gpus | --shm-size | --ulimit) shift 2 ;;
        -v) host=${2%%:*} inside=${2#*:}; shift 2 ;;
        -w) workdir=$2; shift 2 ;;
        -e) env_args+=("$2=${!2:-}"); shift 2 ;;
        -*) echo "fake docker: run option $1 is not supported" >&2; exit 125 ;;
        *) break ;;
      esac
    done
    image=${1:?fake docker: run needs an image}
    shift
    [ -f "$(image_file "$image")" ] || { echo "Unable to find image '$image' locally" >&2; exit 125; }
    # The container's paths are the mounted folder's on the host.
    args=()
    for a in "$@"; do args+=("${a//$inside/$host}"); done
    [ -n "$workdir" ] && cd "${workdir//$inside/$host}"
    [ -n "$name" ] && echo $$ >"$state/$name.pid"
    exec env -i "${env_args[@]}" "${args[@]}"
    ;;
  *)
    echo "fake docker: '$command' is not supported" >&2
    exit 125
    ;;
esac
