"""Assembly of a generated pipeline kernel (pipeline_gen.py): its parameters, the tile loop around
the row body the stages emitted, the materializing and marking sinks' outputs, the flush of an
aggregation without GROUP BY, and the kernel's name (a hash of its text)."""

from __future__ import annotations

import hashlib

from hetdb.backend.gpu.codegen.expr_cuda import ctype, masked
from hetdb.backend.gpu.codegen.pipeline_kernel import (
    _COLUMN_OF,
    _NAME,
    PAGE_PTRS,
    PAGED_CODECS,
    PL_BLOCK,
    PL_ITEMS,
    PL_TILE,
    TILE_CODECS,
    Accumulator,
    GroupKeyOut,
    PipelineKernel,
    _comment,
    _plain_string,
)
from hetdb.backend.gpu.codegen.pipeline_keys import string_table_params
from hetdb.backend.gpu.codegen.pipeline_spec import MarkBuildSink, MaterializeSink, ProbeStage


class AssemblyGen:
    """pipeline_gen._Gen's kernel assembly (a mixin: ``self.em``, ``self.spec``, ``self.paged``,
    ``self.probe_rows``, ``self.marks``, ``self.keyless``, ``self.zero_signs`` are the generator's)."""

    # ---- assembly ---------------------------------------------------------------------------------
    def finish(self, accs: list[Accumulator], keys: list[GroupKeyOut]) -> PipelineKernel:
        spec, em = self.spec, self.em
        params: list[str] = []
        if self.paged:
            for inp in spec.inputs:
                self._check_type(inp, read=False)
            params += ["const long long* __restrict__ pl_pages", "long long pl_num_pages", "long long num_tiles"]
        for k, inp in enumerate(spec.inputs):
            if self.paged:
                break
            self._check_type(inp, read=False)
            if _plain_string(inp):
                params += [f"const long long* __restrict__ off{k}", f"const unsigned char* __restrict__ chr{k}"]
            else:
                ptr = ctype(inp.dtype) if inp.codec == "plain" else "unsigned char"
                params.append(f"const {ptr}* __restrict__ col{k}")
            if inp.nullable:
                params.append(f"const bool* __restrict__ val{k}")
        if not self.paged:
            params.append("long long n")
            params.append("long long num_tiles")
        for lk in em.lookups:
            if lk.plain:
                params += string_table_params(lk)
                continue
            vt = "long long" if lk.join_key is not None else ctype(lk.expr.dtype)
            params += [f"const {vt}* __restrict__ lut{lk.index}_val",
                       f"const bool* __restrict__ lut{lk.index}_valid"]
        payloads = []
        for p, s in enumerate(spec.stages):
            if not isinstance(s, ProbeStage):
                continue
            params += [f"const i64* __restrict__ b{p}_slots", f"u64 b{p}_mask",
                       f"const i64* __restrict__ b{p}_keys", f"i64 b{p}_n",
                       f"const u64* __restrict__ b{p}_hashes", f"const i64* __restrict__ b{p}_start",
                       f"const i64* __restrict__ b{p}_count", f"const i64* __restrict__ b{p}_rows",
                       f"const i64* __restrict__ b{p}_vidx", f"int b{p}_nonempty", f"int b{p}_has_null"]
            for j, inp in enumerate(s.payload):
                if inp.build_row:
                    continue  # (the kernel reads only its build row)
                params.append(f"const {ctype(inp.dtype)}* __restrict__ b{p}_pay{j}")
                if inp.nullable:
                    params.append(f"const bool* __restrict__ b{p}_payv{j}")
            payloads.append(s.payload)
        rows_out = tuple(p for p in self.probe_rows if spec.stages[p].kind in ("inner", "left", "single"))
        marks_out = tuple(sorted(self.marks))
        if isinstance(spec.sink, MaterializeSink):
            params += ["long long* __restrict__ out_rows", "unsigned long long out_cap",
                       "unsigned long long* __restrict__ out_count"]
            params += [f"long long* __restrict__ out_b{p}" for p in rows_out]
            params += [f"signed char* __restrict__ out_m{p}" for p in marks_out]
            em.emit("// materialize: a warp-aggregated output position")
            em.emit("const unsigned long long o = pipe::claim(out_count);")
            em.open("if (o < out_cap) {")
            em.emit("out_rows[o] = pl_base + row;" if self.paged else "out_rows[o] = row;")
            for p in rows_out:
                em.emit(f"out_b{p}[o] = br{p};")
            for p in marks_out:
                m = self.marks[p]
                em.emit(f"out_m{p}[o] = ({m.valid}) ? ({m.value} ? 1 : 0) : 2;")
            em.close()
        elif isinstance(spec.sink, MarkBuildSink):
            params.append("unsigned char* __restrict__ out_marked")
        else:
            params += ["int* __restrict__ g_state", "i64* __restrict__ g_keys", "u64 g_mask",
                       "unsigned long long* __restrict__ g_used", "u64 g_max",
                       "unsigned long long* __restrict__ g_overflow"]
        params += [f"i64* __restrict__ acc{a}" for a in range(len(accs))]
        params.append("unsigned long long* __restrict__ errors")
        params.append("unsigned long long* __restrict__ arith_err")  # codegen/checked.py
        if self.zero_signs:
            params.append("long long pl_row0")  # rows of the earlier launches into the same table
        params += [lit.declaration() for lit in self.literals]  # (expr_cuda.literal_params)
        out = ["// compiled pipeline"] + [f"// {_comment(line)}" for line in masked(spec).describe().splitlines()]
        out += em.globals
        out += [f"#define PL_BLOCK {PL_BLOCK}", f"#define PL_ITEMS {PL_ITEMS}", f"#define PL_TILE {PL_TILE}",
                f'extern "C" __global__ void __launch_bounds__(PL_BLOCK) {_NAME}(',
                "    " + ",\n    ".join(params) + ") {"]
        tiled = [(k, inp) for k, inp in enumerate(spec.inputs) if inp.codec in TILE_CODECS]
        per_tile = ("for", "dict")  # made per tile: they load the tile's block directory entry once
        if not self.paged:
            out += [f"  const pipe::{_COLUMN_OF[inp.codec]}<{ctype(inp.dtype)}> in{k}{{col{k}}};"
                    for k, inp in enumerate(spec.inputs)
                    if inp.codec not in TILE_CODECS and inp.codec not in per_tile and not _plain_string(inp)]
        out += [f"  const EncodedPage pg{k} = encoded_page(col{k});" for k, _ in tiled]
        if tiled or any(inp.codec == "paged_tile" for inp in spec.inputs):
            out.append("  __shared__ i64 pl_smem[HETDB_DECODE_SMEM_I64];")
        keyless = self.keyless
        if keyless:
            out.append("  bool pl_any = false;")
            out += [f"  i64 kl{a} = {x.acc}::identity();" for a, x in enumerate(accs)]
        if self.paged:
            out.append("  long long pl_page = -1;")
        out.append("  for (long long t = blockIdx.x; t < num_tiles; t += gridDim.x) {")
        if not self.paged:
            out += [f"    const pipe::{_COLUMN_OF[inp.codec]}<{ctype(inp.dtype)}> in{k}{{col{k}, t * PL_TILE}};"
                    for k, inp in enumerate(spec.inputs) if inp.codec in per_tile]
        if self.paged:  # this tile's page: its rows, first global row and column pointers
            width = PAGE_PTRS * len(spec.inputs)
            out += ["    const long long pl_p = pl_page = fused::NextPage(pl_pages, pl_num_pages, t, pl_page);",
                    "    const long long pl_first = (t - pl_pages[pl_p]) * PL_TILE;",
                    "    const long long pl_base = pl_pages[pl_num_pages + 1 + pl_p];",
                    "    const long long n = pl_pages[2 * pl_num_pages + 1 + pl_p];",
                    f"    const long long* pl_ptr = pl_pages + 3 * pl_num_pages + 1 + pl_p * {width};"]
            for k, inp in enumerate(spec.inputs):
                ptr = f"pl_ptr[{PAGE_PTRS * k}]"
                if _plain_string(inp):
                    out += [f"    const long long* __restrict__ off{k} = (const long long*){ptr};",
                            f"    const unsigned char* __restrict__ chr{k} = "
                            f"(const unsigned char*)pl_ptr[{PAGE_PTRS * k + 2}];"]
                elif inp.codec in PAGED_CODECS:
                    ct = ctype(inp.dtype)
                    out.append(f"    const pipe::PageColumn<{ct}> in{k}{{(const unsigned char*){ptr}, "
                               f"pl_ptr[{PAGE_PTRS * k + 2}], pl_first}};")
                else:
                    ct = ctype(inp.dtype)
                    out.append(f"    const pipe::PlainColumn<{ct}> in{k}{{(const {ct}*){ptr}}};")
                if inp.nullable:
                    out.append(f"    const bool* val{k} = (const bool*)pl_ptr[{PAGE_PTRS * k + 1}];")
            paged_tiled = [k for k, inp in enumerate(spec.inputs) if inp.codec == "paged_tile"]
            if paged_tiled:
                # a delta or rle page's tile: every thread of the block decodes it together (the
                # page, so the branch, is the same for the whole block)
                out.append("    const int pl_num = n - pl_first < PL_TILE ? (int)(n - pl_first) : PL_TILE;")
            for k in paged_tiled:
                ct = ctype(spec.inputs[k].dtype)
                out += [f"    {ct} tl{k}[PL_ITEMS];",
                        f"    const bool tt{k} = in{k}.tiled();",
                        f"    if (tt{k}) in{k}.load_tile<PL_BLOCK, PL_ITEMS>(pl_first, tl{k}, pl_num, pl_smem);"]
        if tiled:
            # every thread of the block decodes the tile together (the loaders synchronise the block)
            out.append("    const int pl_num = n - t * PL_TILE < PL_TILE ? (int)(n - t * PL_TILE) : PL_TILE;")
            for k, inp in tiled:
                out += [f"    {ctype(inp.dtype)} tl{k}[PL_ITEMS];",
                        f"    {TILE_CODECS[inp.codec]}<PL_BLOCK, PL_ITEMS>(pg{k}, t * PL_TILE, tl{k}, pl_num, pl_smem);"]
        out += ["#pragma unroll",
                "    for (int it = 0; it < PL_ITEMS; ++it) {",
                "      const long long row = " + ("pl_first" if self.paged else "t * PL_TILE")
                + " + threadIdx.x + it * PL_BLOCK;",
                "      if (row >= n) continue;"]
        out += em.lines
        while em.indent > 3:
            em.close()
            out.append(em.lines[-1])
        out += ["    }", "  }"]
        if keyless:
            out += _keyless_flush(accs)
        out.append("}")
        body = "\n".join(out) + "\n"
        name = "pipe_" + hashlib.sha256(body.encode()).hexdigest()[:16]
        return PipelineKernel(name, body.replace(_NAME, name), tuple(em.lookups), tuple(accs), tuple(keys),
                              tuple(payloads), rows_out, marks_out, tuple(self.literals))


def _keyless_flush(accs: list[Accumulator]) -> list[str]:
    """After the tile loop of an aggregation without GROUP BY: the threads' register states (kl{a})
    combined across the warp (shuffles: every thread of the block leaves the tile loop) and the
    block (shared memory), then one group update per block. Compiled as host C++ (tests'
    sequential run of a kernel, one thread at a time) every thread updates the group itself."""
    nw = PL_BLOCK // 32
    na = max(len(accs), 1)
    update = ["i64 kb[1] = {0};",
              "const u64 h = pipe::hash_step(HETDB_HASH_SEED, 0);  // (no key bits, nb = 0)",
              "const i64 g = pipe::group_slot<1>(g_state, g_keys, g_mask, 0, kb, 0, h, g_used, g_max, g_overflow);",
              "if (g >= 0) {", *[f"  {x.acc}::merge(acc{a} + g, kl{a});" for a, x in enumerate(accs)], "}"]
    out = ["#if defined(__CUDACC__) || defined(__CUDACC_RTC__)",
           f"  __shared__ i64 kl_smem[{nw * na}];", f"  __shared__ int kl_any[{nw}];",
           "  const bool kl_some = __any_sync(0xffffffffu, pl_any);",
           "  for (int off = 16; off > 0; off >>= 1) {",
           *[f"    kl{a} = {x.acc}::combine(kl{a}, __shfl_xor_sync(0xffffffffu, kl{a}, off));"
             for a, x in enumerate(accs)],
           "  }",
           "  if ((threadIdx.x & 31) == 0) {",
           "    kl_any[threadIdx.x >> 5] = kl_some ? 1 : 0;",
           *[f"    kl_smem[{a * nw} + (threadIdx.x >> 5)] = kl{a};" for a in range(len(accs))],
           "  }",
           "  __syncthreads();",
           "  if (threadIdx.x == 0) {",
           "    bool any = false;",
           f"    for (int w = 0; w < {nw}; ++w) any = any || kl_any[w] != 0;",
           f"    for (int w = 1; w < {nw}; ++w) {{",
           *[f"      kl{a} = {x.acc}::combine(kl{a}, kl_smem[{a * nw} + w]);" for a, x in enumerate(accs)],
           "    }",
           "    if (any) {", *[f"      {line}" for line in update], "    }",
           "  }",
           "#else",
           "  if (pl_any) {", *[f"    {line}" for line in update], "  }",
           "#endif"]
    return out
