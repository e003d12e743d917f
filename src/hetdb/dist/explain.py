"""EXPLAIN [ANALYZE] of a distributed plan: every stage's pipelines, and with ANALYZE per exchange and
worker the bytes sent (raw Arrow bytes and bytes on the wire after compression), encode and decode
times, bytes received, and the exchange's message counts per level (or inside/across hosts)."""

from __future__ import annotations

from typing import Any

from hetdb.dist.lowering import DistPlan
from hetdb.dist.worker import plan_stage


def _stage_header(dplan: DistPlan, stage) -> str:
    where = "worker 0" if stage.single else f"each of {dplan.workers} workers"
    if stage.exchange == "result":
        out = "result"
    elif stage.exchange == "hash":
        out = "hash exchange on [" + ", ".join(map(str, stage.keys)) + "]"
    else:
        out = f"{stage.exchange} exchange"
    note = f" ({stage.note})" if stage.note else ""
    return f"Stage {stage.sid} on {where} -> {out}{note}"


def _ratio(raw: int, wire: int) -> str:
    return f"{raw / wire:.2f}x" if wire else "-"


def _message_line(msgs: list[tuple], hosts: tuple | None) -> str:
    """Message counts and wire bytes inside and across hosts, per level of a two-level exchange
    (hash: level 1 inside hosts, level 2 across; broadcast: level 1 to the own host's workers and
    one relay per other host, level 2 from the relays to their host's workers)."""

    def split(sel: list[tuple]) -> str:
        inside = [m for m in sel if hosts is None or hosts[m[0]] == hosts[m[5]]]
        across = [m for m in sel if hosts is not None and hosts[m[0]] != hosts[m[5]]]
        return (f"{len(inside)} inside hosts = {sum(m[4] for m in inside):,} bytes; "
                f"{len(across)} across hosts = {sum(m[4] for m in across):,} bytes")

    if any(m[1] == 2 for m in msgs):
        return "messages: " + " | ".join(f"level {lv}: {split([m for m in msgs if m[1] == lv])}" for lv in (1, 2))
    return f"messages (one level): {split(msgs)}"


def format_plan(dplan: DistPlan, stats: dict[str, Any] | None = None) -> str:
    """EXPLAIN of a distributed plan: every stage's pipelines; with ``stats`` (EXPLAIN ANALYZE) each
    stage's operator counters from worker 0 and the exchange's traffic per worker."""
    lines = [f"Distributed plan: {dplan.workers} worker(s), {len(dplan.stages)} stage(s)"]
    if dplan.fallback:
        lines.append(f"Runs on one worker: {dplan.fallback}")
    stats = stats or {}
    if stats.get("workers_lost"):
        lines.extend(f"Retried after: {x}" for x in stats["workers_lost"])
    hosts = stats.get("worker_hosts")
    by_stage: dict[int, list[dict]] = {}
    for s in stats.get("stages", []):
        by_stage.setdefault(s["stage"], []).append(s)
    for stage in dplan.stages:
        lines.append(_stage_header(dplan, stage))
        tasks = by_stage.get(stage.sid, [])
        runs = sorted((s for s in tasks if not s.get("relay")), key=lambda s: s["worker"])
        text = runs[0]["plan"] if runs else plan_stage(stage, 0, dplan.workers, {}).format()
        lines.extend("  " + ln for ln in text.splitlines())
        for s in runs:
            raw, wire = sum(m[3] for m in s["messages"]), sum(m[4] for m in s["messages"])
            line = (f"  worker {s['worker']}: rows out={s['rows']:,} time={s['seconds'] * 1000:.1f} ms "
                    f"sent raw={raw:,} wire={wire:,} ({_ratio(raw, wire)}) "
                    f"encode={s['encode_seconds'] * 1000:.1f} ms")
            if s.get("collective"):  # encoded, sent and decoded where it lands in one step
                line += f" collective exchange ({s['collective']})={s['exchange_seconds'] * 1000:.1f} ms"
            if s["decode_seconds"]:
                line += f" decode inputs={s['decode_seconds'] * 1000:.1f} ms"
            lines.append(line)
        if not runs or stage.exchange == "result":
            continue
        # (recipient, level, rows, raw bytes, wire bytes, sender)
        msgs = [(*m, s["worker"]) for s in tasks for m in s["messages"]]
        received: dict[int, int] = {}
        for m in msgs:
            received[m[0]] = received.get(m[0], 0) + m[4]
        recv = ", ".join(f"worker {w}={b:,}" for w, b in sorted(received.items()))
        lines.append(f"  exchange bytes received: {recv or 'none'}")
        lines.append("  " + _message_line(msgs, tuple(hosts) if hosts else None))
    return "\n".join(lines)
