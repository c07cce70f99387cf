#!/usr/bin/env bash
# Serves a folder over HTTP on this machine, with the byte ranges `ffcv` reads a .beton URL by
# (`python3 -m http.server` answers no ranges), until Ctrl-C:
#   tools/serve.sh DIR [--port N] [--address A]
# prints "serving DIR at http://A:PORT/" and runs nginx in the foreground: the nginx that
# tools/setup.sh unpacks into build/_deps (or one on PATH), with a configuration of its own in a
# temporary folder that is removed when it stops. Port 0 (the default) takes a free one.
set -euo pipefail
usage() { echo "usage: tools/serve.sh DIR [--port N] [--address A]" >&2; exit 2; }
[ $# -ge 1 ] || usage
root=$1
shift
port=0 address=127.0.0.1
while [ $# -gt 0 ]; do
  case $1 in
    --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    --address) [ $# -ge 2 ] || usage; address=$2; shift 2 ;;
    *) usage ;;
  esac
done
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -le 65535 ] ||
  { echo "serve.sh: --port must be 0..65535, got '$port'" >&2; exit 2; }
[ -d "$root" ] || { echo "serve.sh: '$root' is not a folder" >&2; exit 2; }
root=$(cd "$root" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
nginx=$here/build/_deps/nginx/usr/sbin/nginx
[ -x "$nginx" ] || nginx=$(command -v nginx || true)
[ -n "$nginx" ] || { echo "serve.sh: no nginx: run tools/setup.sh (it unpacks one)" >&2; exit 1; }
if [ "$port" = 0 ]; then
  port=$(python3 -c 'import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$address")
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ffcv-serve-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/temp"
temps=""
for kind in client_body proxy fastcgi uwsgi scgi; do
  temps+="  ${kind}_temp_path $work/temp/$kind;"$'\n'
done
cat >"$work/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log stderr;
pid $work/nginx.pid;
events { worker_connections 512; }
http {
  access_log off;
$temps  default_type application/octet-stream;
  server { listen $address:$port; root "$root"; }
}
CONF
echo "serving $root at http://$address:$port/ (Ctrl-C stops)"
# nginx in the background so that the trap runs when a signal stops this script.
"$nginx" -p "$work" -c "$work/nginx.conf" -e stderr &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"; exit 130' INT
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"; exit 143' TERM
wait "$server"
