// Host program checking decode.cuh's random-access decoders against the CPU encoder (no GPU needed):
// for each argument "<encoded file> <n> <out file>" it decodes every value with decode_value (delta:
// bp_get of the deltas plus the block base, as load_tile_delta sums them) and writes int64 values.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "decode.cuh"

int main(int argc, char** argv) {
  for (int a = 1; a + 2 < argc; a += 3) {
    FILE* f = fopen(argv[a], "rb");
    if (!f) return 2;
    std::vector<unsigned char> buf;
    int c;
    while ((c = fgetc(f)) != EOF) buf.push_back((unsigned char)c);
    fclose(f);
    buf.resize(buf.size() + 64, 0);  // aligned reads past the end stay inside the allocation
    long long n = atoll(argv[a + 1]);
    EncodedPage p = encoded_page(buf.data());
    if (p.n != n) return 3;
    std::vector<long long> out(n);
    if (p.codec == HETDB_CODEC_DELTA) {
      const long long* bases = (const long long*)p.body;
      BpStream deltas = bp_stream(p.body + 8 * bp_blocks(n), n);
      unsigned long long acc = 0;
      for (long long i = 0; i < n; ++i) {
        if ((i & 1023) == 0) acc = (unsigned long long)bases[i >> 10];
        acc += (unsigned long long)bp_get(deltas, i);
        out[i] = (long long)acc;
      }
    } else {
      for (long long i = 0; i < n; ++i) out[i] = decode_value(p, i);
    }
    FILE* o = fopen(argv[a + 2], "wb");
    fwrite(out.data(), sizeof(long long), n, o);
    fclose(o);
  }
  return 0;
}
