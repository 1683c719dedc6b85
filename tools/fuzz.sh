#!/usr/bin/env bash
# Builds the libFuzzer target over the bundle decoder (tools/BundleFuzzer) and runs a campaign.
#
#   tools/fuzz.sh [SECONDS] [extra libFuzzer flags...]
#
# SECONDS defaults to 600. The corpus lives in .build-fuzz/corpus (seeded from every .tmb under
# Protocol/vectors/, valid, invalid and fuzz/); crashes, hangs and out-of-memory inputs land in
# .build-fuzz/artifacts/. Replay one with: .build-fuzz/release/tidemark-fuzz FILE
# The campaign runs at low priority (nice 10).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-600}"
shift || true
scratch=.build-fuzz
corpus="$scratch/corpus"
artifacts="$scratch/artifacts"
# The largest vector is about 5 kB; 64 kB leaves room for splices and several frames while
# keeping each run fast.
max_len=65536

# -sanitize=fuzzer instruments the code and links libFuzzer; TIDEMARK_LIBFUZZER swaps the
# standalone @main for one that runs libFuzzer's driver. AddressSanitizer checks memory safety too.
swift build -c release --product tidemark-fuzz --scratch-path "$scratch" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DTIDEMARK_LIBFUZZER

mkdir -p "$corpus" "$artifacts"
find Protocol/vectors -name '*.tmb' -exec cp {} "$corpus/" \;
# The encrypted envelope (Protocol/encryption.md): each valid vector as an age file for the fuzz
# target's fixed identity (tools/BundleFuzzer/FuzzIdentity.swift; `tidemark-fuzz --recipient`
# in a standalone build prints this recipient), so mutations reach the age header parser, the
# chunk reader and, through them, the decoder.
fuzz_recipient=age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj
if command -v age >/dev/null; then
    for vector in Protocol/vectors/valid/*.tmb; do
        age -r "$fuzz_recipient" -o "$corpus/$(basename "$vector" .tmb).age.tmb" "$vector"
    done
fi
# Random mutations of DEFLATE data rarely inflate, so they seldom reach the records inside
# compressed frames. Add each vector with its compressed frames stored uncompressed instead: the
# signature no longer verifies, but every byte the record reader sees is now directly mutable.
if command -v python3 >/dev/null; then
    python3 - "$corpus" "$max_len" Protocol/vectors/*/*.tmb <<'PYTHON'
import os, sys, zlib
out, max_len = sys.argv[1], int(sys.argv[2])
for path in sys.argv[3:]:
    data = open(path, "rb").read()
    if len(data) < 44 or data[:8] != b"\x89TMB\r\n\x1a\n":
        continue
    plain, offset, changed = bytearray(data[:44]), 44, False
    while offset + 6 <= len(data):
        kind, flags, length = data[offset], data[offset + 1], int.from_bytes(data[offset + 2:offset + 6], "big")
        payload = data[offset + 6:offset + 6 + length]
        if flags == 1 and kind != 0x7F and len(payload) >= 4:
            try:
                payload, flags, changed = zlib.decompress(payload[4:], -15), 0, True
            except zlib.error:
                pass
        plain += bytes([kind, flags]) + len(payload).to_bytes(4, "big") + payload
        offset += 6 + length
    if changed and len(plain) <= max_len:
        plain += data[offset:]
        name = os.path.basename(path)[:-len(".tmb")]
        open(os.path.join(out, name + ".uncompressed.tmb"), "wb").write(plain)
PYTHON
fi

# Every limit turns a resource problem (memory, time) into a reported artifact. -malloc_limit_mb
# catches any single allocation past the limit; -rss_limit_mb the process as a whole, which under
# AddressSanitizer also counts freed memory held in quarantine and allocator caches: keep those
# small and returned to the system, or a long campaign reports a false out-of-memory (campaign 1
# did, on an input that peaks at 55 MB when run alone).
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=32:allocator_release_to_os_interval_ms=500}"
exec nice -n 10 "$scratch/release/tidemark-fuzz" "$corpus" \
    -max_len="$max_len" -rss_limit_mb=512 -malloc_limit_mb=512 -timeout=5 -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$@"
