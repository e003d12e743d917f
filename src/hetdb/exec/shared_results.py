"""One result for pipelines that compute the same thing: a common table expression referenced twice
(TPC-H q15's ``revenue0``: its aggregate and the ``max`` over it) is bound twice, as two pipelines
that differ only in their column ids. The second takes the first one's result, its columns renamed,
instead of scanning and aggregating again. A build pipeline's copy shares the first one's hash table
and key encoders, its rows' columns renamed. Probes and runtime filters name the build they read by
the pipeline that computed it, so a chain of builds bound twice is shared link by link.

Taken: pipelines of a table scan, filters, projections and hash probes into a hash aggregation or a
hash build (TPC-H q11's nation and supplier builds, bound once for the query and once for its
subquery), on the CPU and on the GPU (where the first one may have run fused or compiled: its result
is the same either way; one it did not run, such as a fact-side build deferred into its consumer's
fused kernel, leaves only an empty stand-in and nothing is shared from it: sharing one gave wrong
answers on the GPU, session 20's build_chain_twice counted 0 rows against DuckDB's 546). Two are the same when every field of their
operators is (the dataclasses' repr, operator ids left out), with column ids numbered in order of
appearance.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hetdb.column import Batch
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.join import HashProbe
from hetdb.exec.operators.join_build import BuildSide, HashBuild
from hetdb.exec.operators.scan import TableScan

_CID = re.compile(r"""cid=('[^']*'|"[^"]*")""")


_BASE_ENTRIES = 1024
# id(pipeline) -> (pipeline, its text with the pipelines it reads left out, those pipelines' ids): a
# plan from the plan cache is the same objects every run, and its text costs milliseconds to make
_bases: dict[int, tuple[Any, str | None, tuple[int, ...]]] = {}


def signature(pipe: Any, same: dict[int, int] | None = None) -> str | None:
    """The pipeline's operators with column ids canonical, or None when the pipeline is not taken.
    ``same``: pipeline id -> the id of the pipeline whose result it took (the builds a pipeline probes
    and filters its scan by are named by the pipeline that computed them)."""
    hit = _bases.get(id(pipe))
    if hit is None or hit[0] is not pipe:
        hit = (pipe, *_base(pipe))
        if len(_bases) >= _BASE_ENTRIES:
            _bases.pop(next(iter(_bases)))
        _bases[id(pipe)] = hit
    text, pids = hit[1], hit[2]
    if text is None:
        return None
    same = same or {}
    return text + repr([same.get(pid, pid) for pid in pids])


def _base(pipe: Any) -> tuple[str | None, tuple[int, ...]]:
    src, sink = pipe.source, pipe.sink
    if not isinstance(src, TableScan) or not isinstance(sink, (HashAggregate, HashBuild)):
        return None, ()
    if any(not isinstance(op, (FilterOp, ProjectOp, HashProbe)) for op in pipe.ops):
        return None, ()
    scan = dataclasses.replace(src, skip=frozenset(), runtime_filters=tuple((keys, -1) for keys, _ in src.runtime_filters))
    # a probe names its build by pipeline (appended by ``signature``) and by the build operator; the
    # cids it emits (a set of names) are compared after the text below has numbered them
    probes = [op for op in pipe.ops if isinstance(op, HashProbe)]
    ops = [dataclasses.replace(op, build_pipeline=-1, build=dataclasses.replace(op.build, op_id=0), emit=frozenset())
           if isinstance(op, HashProbe) else op for op in pipe.ops]
    emits = [op.emit for op in probes]
    text = flat_repr([dataclasses.replace(op, op_id=0) for op in (scan, *ops, sink)])
    names: dict[str, str] = {}

    def canonical(m: re.Match) -> str:
        return f"cid=c{names.setdefault(m.group(1)[1:-1], str(len(names)))}"

    text = _CID.sub(canonical, text)
    if not src.skip <= names.keys() or not all(e is None or e <= names.keys() for e in emits):
        return None, ()
    text += repr(sorted(names[c] for c in src.skip)) + repr([None if e is None else sorted(names[c] for c in e)
                                                              for e in emits])
    return text, tuple(pid for _, pid in src.runtime_filters) + tuple(op.build_pipeline for op in probes)


class _Text(str):
    """Text already written out (a marker on flat_repr's stack)."""


def flat_repr(obj: Any) -> str:
    """The text of dataclasses, lists, tuples and dicts nested in ``obj`` (each dataclass as its name
    and its repr fields, everything else by ``repr``), written in one walk with an explicit stack:
    ``repr`` of a nested dataclass builds every level's text again inside its parent's, which is
    quadratic in the depth (an OR chain of 8,000 terms spent 9 s and gigabytes of copies there)."""
    out: list[str] = []
    stack: list[Any] = [obj]
    while stack:
        x = stack.pop()
        if type(x) is _Text:
            out.append(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            parts: list[Any] = [_Text(type(x).__qualname__ + "(")]
            for f in dataclasses.fields(x):
                if f.repr:
                    parts += [_Text(f.name + "="), getattr(x, f.name), _Text(", ")]
            stack.append(_Text(")"))
            stack.extend(reversed(parts))
        elif type(x) in (list, tuple):
            opening, closing = ("[", "]") if type(x) is list else ("(", ")")
            parts = [_Text(opening)]
            for item in x:
                parts += [item, _Text(", ")]
            stack.append(_Text(closing))
            stack.extend(reversed(parts))
        elif type(x) is dict:
            parts = [_Text("{")]
            for k, v in x.items():
                parts += [k, _Text(": "), v, _Text(", ")]
            stack.append(_Text("}"))
            stack.extend(reversed(parts))
        else:
            out.append(repr(x))
    return "".join(out)


def _fields(sink: Any) -> list[str]:
    if isinstance(sink, HashBuild):
        return [f.cid for f in sink.fields]
    return [f.cid for f, _ in sink.keys] + [f.cid for f, _ in sink.aggs]


def _renamed(batch: Batch, rename: dict[str, str]) -> Batch:
    return Batch({rename.get(k, k): c for k, c in batch.columns.items()}, batch.num_rows)


def _kind(pipe: Any) -> tuple | None:
    """What two pipelines with equal signatures have in common, cheap to compare (the scanned table,
    the operators' types), or None when the pipeline is not taken. A signature text costs ~1 ms; most
    queries have no two pipelines of one kind, so a pipeline's text is made only once a second
    pipeline of its kind comes (``_signed``)."""
    src, sink = pipe.source, pipe.sink
    if not isinstance(src, TableScan) or not isinstance(sink, (HashAggregate, HashBuild)):
        return None
    if any(not isinstance(op, (FilterOp, ProjectOp, HashProbe)) for op in pipe.ops):
        return None
    return (src.scan.table, type(sink), tuple(type(op) for op in pipe.ops))


def _signed(ctx: ExecContext, pipe: Any, same: dict[int, int]) -> str | None:
    """``pipe``'s signature, or None when it is not taken or is the first pipeline of its kind in
    this query: that one waits unsigned, and when a second comes it is signed and remembered as it
    would have been when it ran (the builds it names by pipeline ran before it, so ``same`` holds
    for them what it held then)."""
    kind = _kind(pipe)
    if kind is None:
        return None
    waiting: dict[tuple, list[Any]] = ctx.__dict__.setdefault("_shared_kinds", {})
    alone = [pipe]
    earlier = waiting.setdefault(kind, alone)
    if earlier is alone:
        return None
    seen: dict[str, Any] = ctx.__dict__.setdefault("_shared_results", {})
    for first in earlier:
        sig = signature(first, same)
        if sig is not None and sig not in seen:
            seen[sig] = first
    earlier.clear()  # signed from now on: every later pipeline of the kind is signed as it comes
    return signature(pipe, same)


def remember_kept(ctx: ExecContext, pipe: Any) -> None:
    """``pipe`` did not run: its result was kept from an earlier run of the plan (exec/kept_builds.py)
    and is in ``ctx.results``; a later pipeline computing the same takes it as from a run."""
    sig = _signed(ctx, pipe, ctx.__dict__.setdefault("_shared_pids", {}))
    if sig is not None:
        ctx.__dict__.setdefault("_shared_results", {}).setdefault(sig, pipe)


def reuse(ctx: ExecContext, pipe: Any) -> bool:
    """Give ``pipe`` the result of an earlier pipeline of the query that computes the same (True),
    else remember it as one a later pipeline may reuse once it has run (False)."""
    same: dict[int, int] = ctx.__dict__.setdefault("_shared_pids", {})
    sig = _signed(ctx, pipe, same)
    if sig is None:
        return False
    seen: dict[str, Any] = ctx.__dict__.setdefault("_shared_results", {})
    first = seen.get(sig)
    if (first is None or first.pid not in ctx.results or first.pid == pipe.pid
            or first.pid in ctx.__dict__.get("_placeholder_results", ())):
        # (no result yet, or only a deferred build's empty stand-in: exec/pipeline.placeholders)
        seen[sig] = pipe
        return False
    result = ctx.results[first.pid]
    if isinstance(result, BuildSide):
        if result.partitions is not None:
            return False  # a spilled (partitioned) build: this one runs
        batches = [result.batch]
    elif all(isinstance(b, Batch) for b in result):
        batches = result
    else:
        return False  # spilled slices: this pipeline runs
    xp = ctx.backend.xp
    if not all(isinstance(a, xp.ndarray) for b in batches for c in b.columns.values() for a in c.held_arrays()):
        return False  # (on the GPU: a small result a host pipeline took to the host) this one runs
    rename = dict(zip(_fields(first.sink), _fields(pipe.sink)))
    if isinstance(result, BuildSide):  # the same hash table and key encoders, the rows' columns renamed
        ctx.results[pipe.pid] = dataclasses.replace(result, batch=_renamed(result.batch, rename))
    else:
        ctx.results[pipe.pid] = [_renamed(b, rename) for b in result]
    same[pipe.pid] = same.get(first.pid, first.pid)
    ctx.stat(pipe.sink.op_id).fused = f"the result of pipeline {first.pid} (the same subplan), not computed again"
    return True
