"""One result for pipelines that compute the same thing: a common table expression referenced twice
(TPC-H q15's ``revenue0``: its aggregate and the ``max`` over it) is bound twice, as two pipelines
that differ only in their column ids. The second takes the first one's result, its columns renamed,
instead of scanning and aggregating again.

Taken: pipelines of a table scan, filters and projections into a hash aggregation, with no
dependency on another pipeline, on the CPU and on the GPU (where the first one may have run fused or
compiled: its result is the aggregation's batches either way; one it did not run, such as a dense
fused pipeline deferred into another's kernel, leaves no result and nothing is shared). Two are the same when every field of their operators is (the
dataclasses' repr, operator ids left out), with column ids numbered in order of appearance.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from hetdb.column import Batch
from hetdb.exec.operators.aggregate import HashAggregate
from hetdb.exec.operators.base import ExecContext
from hetdb.exec.operators.basic import FilterOp, ProjectOp
from hetdb.exec.operators.scan import TableScan

_CID = re.compile(r"""cid=('[^']*'|"[^"]*")""")


def signature(pipe: Any) -> str | None:
    """The pipeline's operators with column ids canonical, or None when the pipeline is not taken."""
    src, sink = pipe.source, pipe.sink
    if pipe.deps or not isinstance(src, TableScan) or not isinstance(sink, HashAggregate) or src.runtime_filters:
        return None
    if any(not isinstance(op, (FilterOp, ProjectOp)) for op in pipe.ops):
        return None
    text = flat_repr([dataclasses.replace(op, op_id=0) for op in
                      (dataclasses.replace(src, skip=frozenset()), *pipe.ops, sink)])
    names: dict[str, str] = {}

    def canonical(m: re.Match) -> str:
        return f"cid=c{names.setdefault(m.group(1)[1:-1], str(len(names)))}"

    text = _CID.sub(canonical, text)
    if not src.skip <= names.keys():
        return None
    return text + repr(sorted(names[c] for c in src.skip))


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


def _fields(sink: HashAggregate) -> list[str]:
    return [f.cid for f, _ in sink.keys] + [f.cid for f, _ in sink.aggs]


def reuse(ctx: ExecContext, pipe: Any) -> bool:
    """Give ``pipe`` the result of an earlier pipeline of the query that computes the same (True),
    else remember it as one a later pipeline may reuse once it has run (False)."""
    sig = signature(pipe)
    if sig is None:
        return False
    seen: dict[str, Any] = ctx.__dict__.setdefault("_shared_results", {})
    first = seen.get(sig)
    if first is None or first.pid not in ctx.results:
        seen[sig] = pipe
        return False
    result = ctx.results[first.pid]
    if not all(isinstance(b, Batch) for b in result):
        return False  # spilled slices: this pipeline runs
    xp = ctx.backend.xp
    if not all(isinstance(a, xp.ndarray) for b in result for c in b.columns.values() for a in c.held_arrays()):
        return False  # (on the GPU: a small result a host pipeline took to the host) this one runs
    rename = dict(zip(_fields(first.sink), _fields(pipe.sink)))
    ctx.results[pipe.pid] = [Batch({rename[k]: c for k, c in b.columns.items()}, b.num_rows) for b in result]
    ctx.stat(pipe.sink.op_id).fused = f"the result of pipeline {first.pid} (the same subplan), not computed again"
    return True
