#!/bin/sh
# usage: without_library.sh SONAME SCRATCH PROGRAM [ARGS...]
# Runs PROGRAM in a mount namespace of its own where the dynamic loader cannot find SONAME: the folder that
# holds it (as /etc/ld.so.cache names it) is covered by an overlay in which the file is removed (a whiteout).
# Nothing outside the namespace changes. Needs root (CAP_SYS_ADMIN), and util-linux's unshare.
set -eu
soname="$1" scratch="$2"
shift 2
path="$(/sbin/ldconfig -p | awk -v soname="$soname" '$1 == soname && /x86-64/ { print $NF; exit }')"
[ -n "$path" ] || { echo "without_library.sh: ldconfig knows no $soname" >&2; exit 97; }
folder="$(dirname "$path")"
mkdir -p "$scratch/upper" "$scratch/work"
mknod "$scratch/upper/$soname" c 0 0
exec unshare --mount --propagation private /bin/sh -c '
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$1" || exit 98
  shift 2
  exec "$@"' sh "$folder" "$scratch" "$@"
