#!/usr/bin/env bash
# Hand check of the linux-arm64 binary on an x64 machine, under qemu user-mode emulation:
# --version, user add, token, serve, upload a PNG, /img/{uuid}/100w decodes as WebP.
#   apt-get install -y qemu-user libc6-arm64-cross libstdc++6-arm64-cross
#   bun run build && bash bench/binary/arm64-check.sh
set -euo pipefail
BIN="$(cd "$(dirname "$0")/../.." && pwd)/dist/resd-linux-arm64"
WORK="$(mktemp -d)"; trap 'pkill -f "qemu-aarch64 $WORK/resd serve" || true; rm -rf "$WORK"' EXIT
cp "$BIN" "$WORK/resd"; cd "$WORK"
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu HOME="$WORK"
run() { qemu-aarch64 "$WORK/resd" "$@"; }
run --version
run user add a@example.com --password pw --role admin --api --dir site >/dev/null
T="$(run token a@example.com --dir site)"
run serve --dir site --port 3350 --host 127.0.0.1 > log 2>&1 &
for _ in $(seq 1 120); do curl -s -o /dev/null http://127.0.0.1:3350/health && break; sleep 0.5; done
python3 - <<'PY'
import struct, zlib
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
raw = b''.join(b'\x00' + b'\x10\x80\xf0' * 640 for _ in range(480))
open('p.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 640, 480, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
PY
M="$(curl -s -X POST http://127.0.0.1:3350/api/v1/.files -H "Authorization: Bearer $T" -F file=@p.png | jq -r '.files | keys[0]')"
curl -s -o t.webp http://127.0.0.1:3350/img/$M/100w
file t.webp | grep -q "Web/P image.*100x75" && echo "arm64 binary: OK (upload and /img 100w → WebP 100x75)" || { echo "arm64 binary: FAILED"; file t.webp; tail log; exit 1; }
