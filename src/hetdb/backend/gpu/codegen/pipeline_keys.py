"""String join keys in generated pipeline kernels (pipeline_gen.py's probes).

A probe's key column that is a string becomes the join build's id of its string (exec/keys.py
StringKeyEncoder, the ids the build's hash table holds; -1 for a string no build row has, which
matches nothing):
- a dictionary column (probe input or an earlier probe's payload): its code looks the id up in a
  per-dictionary table the executor fills (a ``Lookup`` with ``join_key``);
- a plain-string probe input (offsets and bytes): the kernel hashes the row's string and finds it in
  the build encoder's table of strings on the device (string_hash.cuh ``string_key_id`` over
  backend/gpu/string_keys.py's store and slots: a ``Lookup`` with ``plain``, whose launch arguments
  are that table).
"""

from __future__ import annotations

from hetdb.backend.gpu.codegen.expr3 import Emitter, ExprError, Lookup
from hetdb.plan.expr import ColumnRef


def emit_string_key(em: Emitter, p: int, c: int, k) -> None:
    """Set key ``c`` of probe ``p`` (``pb{p}[c]``, its NULL flag ``pn{p}``, the hash ``ph{p}``) from the
    string key expression ``k``; refuses (ExprError) a key that is neither kind of column."""
    if k.dtype.kind == "string" and isinstance(k, ColumnRef) and k.cid in em.plain:
        i, nullable = em.plain[k.cid]
        lk = Lookup(len(em.lookups), k, k.cid, join_key=(p, c), plain=True)
        em.lookups.append(lk)
        t = f"lut{lk.index}"
        em.emit(f"pb{p}[{c}] = string_key_id(chr{i} + off{i}[row], off{i}[row + 1] - off{i}[row], {t}_off, "
                f"{t}_chr, {t}_hash, {t}_slots, {t}_mask);  // the build's id of the string (-1: none)")
        if nullable:
            em.emit(f"pn{p} = pn{p} || !pipe::is_valid(val{i}, row);")
    else:
        if k.dtype.kind != "string" or not (isinstance(k, ColumnRef) and k.cid in em.dict_cids):
            raise ExprError(f"string join key {k} is not a dictionary-encoded column")
        code = em.column(k.cid)
        lk = Lookup(len(em.lookups), k, k.cid, join_key=(p, c))
        em.lookups.append(lk)
        em.emit(f"pb{p}[{c}] = lut{lk.index}_val[{code.value}];  // the build's id of the string (-1: none)")
        if code.valid != "true":
            em.emit(f"pn{p} = pn{p} || !({code.valid});")
    em.emit(f"ph{p} = pipe::hash_step(ph{p}, pb{p}[{c}]);")


def string_table_params(lk: Lookup) -> list[str]:
    """Kernel parameters of a plain-string key's table of strings (``Lookup.plain``)."""
    t = f"lut{lk.index}"
    return [f"const long long* __restrict__ {t}_off", f"const unsigned char* __restrict__ {t}_chr",
            f"const unsigned long long* __restrict__ {t}_hash", f"const long long* __restrict__ {t}_slots",
            f"long long {t}_mask"]
