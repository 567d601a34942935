#!/usr/bin/env bash
# `spool bench stream --url` against a real nginx on 127.0.0.1: a 30-second file served at about twice
# its bit rate (limit_rate) for the first-audio figures, and an hour of audio served as fast as
# the link goes for the resident set. Usage: scripts/stream-bench.sh [extra bench options, e.g. --json out.json];
# CONFIGURATION=debug uses the debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
configuration=${CONFIGURATION:-release}
swift build -c "$configuration" --product spool
spool=.build/$configuration/spool
root=$(mktemp -d)
trap 'kill "$(cat "$root/nginx.pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$root"' EXIT
mkdir -p "$root/www" "$root/temp"
# Thirty seconds of pink noise for the first-audio figures, and an hour for the resident set,
# both Ogg Vorbis made here (sox and oggenc, from setup).
sox -q -n -r 44100 -c 2 -b 16 -t wav - synth 30 pinknoise vol 0.3 | oggenc -Q -q 3 -o "$root/www/long.ogg" -
sox -q -n -r 22050 -c 1 -b 16 -t wav - synth 3600 pinknoise vol 0.3 | oggenc -Q -q 0 -o "$root/www/hour.ogg" -
file=$root/www/long.ogg
# Twice the file's bit rate, in bytes per second, from what `spool info --json` says.
bitrate=$("$spool" info --json "$file" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["bitRate"])')
rate=$(( bitrate * 2 / 8 ))
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$root/nginx.conf" <<CONF
daemon off;
master_process off;
pid $root/nginx.pid;
error_log $root/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $root/temp; proxy_temp_path $root/temp; fastcgi_temp_path $root/temp;
    uwsgi_temp_path $root/temp; scgi_temp_path $root/temp;
    types { audio/mpeg mp3; audio/ogg ogg; }
    server {
        listen 127.0.0.1:$port;
        root $root/www;
        location /slow/ { alias $root/www/; limit_rate $rate; }
    }
}
CONF
/usr/sbin/nginx -c "$root/nginx.conf" -p "$root" &
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.1)" 2>/dev/null && break
    sleep 0.1
done
echo "nginx on 127.0.0.1:$port; $(basename "$file") at $rate bytes/s (twice its bit rate of $bitrate)"
"$spool" bench stream --url "http://127.0.0.1:$port/slow/$(basename "$file")" \
    --memory-url "http://127.0.0.1:$port/hour.ogg" "$@"
