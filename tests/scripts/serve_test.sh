#!/usr/bin/env bash
# tools/serve.sh serves a folder with byte ranges: `ffcv inspect` reads a .beton through it, and
# SIGTERM stops it with nothing left running and its temporary folder gone.
#   serve_test.sh FFCV
set -euo pipefail
ffcv=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$ffcv" write imagenet-like --count 20 --classes 2 --output "$work/data/x.beton" --quiet
TMPDIR=$work "$here/tools/serve.sh" "$work/data" >"$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "^serving" "$work/serve.out" && break
  sleep 0.1
done
url=$(sed -n 's/^serving .* at \(http:[^ ]*\) .*/\1/p' "$work/serve.out")
[ -n "$url" ] || { echo "no URL: $(cat "$work/serve.out")"; exit 1; }
ok=0
for _ in $(seq 50); do
  if "$ffcv" inspect "${url}x.beton" >"$work/inspect.out" 2>&1; then ok=1; break; fi
  sleep 0.1
done
[ $ok = 1 ] || { echo "inspect failed: $(cat "$work/inspect.out")"; exit 1; }
grep -q "20 samples\|samples: 20\|\"num_samples\": 20" "$work/inspect.out" ||
  { echo "unexpected report: $(cat "$work/inspect.out")"; exit 1; }
kill -TERM "$server"
status=0
wait "$server" || status=$?
[ $status = 143 ] || { echo "serve.sh exited $status on SIGTERM, expected 143"; exit 1; }
leftover=$(find "$work" -maxdepth 1 -name 'ffcv-serve-*')
[ -z "$leftover" ] || { echo "left behind: $leftover"; exit 1; }
if grep -qas "ffcv-serve-" /proc/[0-9]*/cmdline; then echo "nginx still running"; exit 1; fi
# A bad call is refused with exit 2.
if "$here/tools/serve.sh" "$work/absent" 2>/dev/null; then exit 1; fi
echo "serve.sh: ok"
