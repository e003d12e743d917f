// String join/group key ids on the device (backend/gpu/string_keys.py): an open-addressing table of
// ids whose strings live in a store (offsets int64[count+1], chars); a string maps to the id of the
// equal stored string, or claims a slot for itself. No key sentinel: slots hold ids (>= 0) or -1.
#include "string_hash.cuh"

typedef unsigned char u8;

extern "C" __global__ void strkey_hash(const i64* __restrict__ offsets, const u8* __restrict__ chars, i64 n,
                                       u64* __restrict__ out) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x)
    out[r] = string_hash(chars + offsets[r], offsets[r + 1] - offsets[r]);
}

// Each string r of the input finds the slot of its string (linear probing from hash & mask). A slot
// holds an id: below ``base`` a stored string (store_*), from ``base`` on the input string id - base
// that claimed it in this launch. With ``add`` an empty slot is claimed (CAS) for id base + r and
// claim_slot[r] records it (else -1); without, an empty slot means "no such string": out[r] = -1.
// The table has at least twice as many slots as it can hold ids, so probing ends.
extern "C" __global__ void strkey_map(const i64* __restrict__ offsets, const u8* __restrict__ chars,
                                      const u64* __restrict__ hashes, i64 n,
                                      const i64* __restrict__ store_offsets, const u8* __restrict__ store_chars,
                                      const u64* __restrict__ store_hashes, i64 base,
                                      i64* slots, i64 mask, int add,
                                      i64* __restrict__ out, i64* __restrict__ claim_slot) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const u64 h = hashes[r];
    const u8* s = chars + offsets[r];
    const i64 len = offsets[r + 1] - offsets[r];
    i64 slot = (i64)(h & (u64)mask);
    i64 id = -1, claimed = -1;
    while (true) {
      i64 cur = *((volatile i64*)&slots[slot]);
      if (cur < 0) {
        if (!add) break;
        cur = (i64)atomicCAS((unsigned long long*)&slots[slot], (unsigned long long)-1LL,
                             (unsigned long long)(base + r));
        if (cur < 0) {
          id = base + r;
          claimed = slot;
          break;
        }
      }
      u64 ch;
      const u8* cs;
      i64 clen;
      if (cur >= base) {
        const i64 j = cur - base;
        ch = hashes[j];
        cs = chars + offsets[j];
        clen = offsets[j + 1] - offsets[j];
      } else {
        ch = store_hashes[cur];
        cs = store_chars + store_offsets[cur];
        clen = store_offsets[cur + 1] - store_offsets[cur];
      }
      if (ch == h && clen == len && same_bytes(cs, s, len)) {
        id = cur;
        break;
      }
      slot = (slot + 1) & mask;
    }
    out[r] = id;
    claim_slot[r] = claimed;
  }
}

// Ids claimed in a launch of strkey_map (base + r) become base + rank[r], the rank among the claiming
// rows (the stored order): in the rows' ids and in the claimed slots.
extern "C" __global__ void strkey_renumber(i64* __restrict__ ids, const i64* __restrict__ claim_slot,
                                           const i64* __restrict__ rank, i64 n, i64 base, i64* slots) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    const i64 id = ids[r];
    if (id >= base) ids[r] = base + rank[id - base];
    if (claim_slot[r] >= 0) slots[claim_slot[r]] = base + rank[r];
  }
}

// Rehash: stored id r (distinct strings, so no comparison) into an empty table of mask + 1 slots.
extern "C" __global__ void strkey_reinsert(const u64* __restrict__ hashes, i64 n, i64* slots, i64 mask) {
  for (i64 r = blockIdx.x * (i64)blockDim.x + threadIdx.x; r < n; r += (i64)gridDim.x * blockDim.x) {
    i64 slot = (i64)(hashes[r] & (u64)mask);
    while (atomicCAS((unsigned long long*)&slots[slot], (unsigned long long)-1LL, (unsigned long long)r) !=
           (unsigned long long)-1LL)
      slot = (slot + 1) & mask;
  }
}
