"""Name resolution: the relations a SELECT's FROM clause makes visible, and the enclosing scopes of
correlated subqueries."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from hetdb.errors import CatalogError, SqlError, UnsupportedError
from hetdb.plan.expr import ColumnRef, Field


@dataclass
class Rel:
    """One FROM item: its alias and its visible columns (name -> Field), in order."""

    alias: str
    columns: list[tuple[str, Field]]
    hidden: set[str] = field(default_factory=set)  # names a USING join merged into an earlier rel

    def lookup(self, name: str) -> Field | None:
        for n, f in self.columns:
            if n == name:
                return f
        return None


@dataclass
class Scope:
    rels: list[Rel]
    parent: Scope | None = None
    correlated: set[str] = field(default_factory=set)  # cids of the parent scope referenced here

    def local_cids(self) -> set[str]:
        return {f.cid for r in self.rels for _, f in r.columns}

    def _find(self, table: str | None, name: str) -> list[tuple[Rel, Field]]:
        hits = []
        for r in self.rels:
            if table is not None and r.alias != table:
                continue
            if table is None and name in r.hidden:
                continue
            f = r.lookup(name)
            if f is not None:
                hits.append((r, f))
        return hits

    def resolve(self, table: str | None, name: str) -> ColumnRef:
        """The column ``table.name`` (or ``name``) of this scope, else of the enclosing scope (a
        correlated reference); CatalogError with a suggestion when nothing matches."""
        table_l = table.lower() if table else None
        name_l = name.lower()
        hits = self._find(table_l, name_l)
        if len(hits) > 1:
            where = ", ".join(f"{r.alias}.{name_l}" for r, _ in hits)
            raise SqlError(f"column reference '{name}' is ambiguous: it could be {where}; qualify it")
        if hits:
            f = hits[0][1]
            return ColumnRef(f.dtype, f.cid, f.nullable)
        if self.parent is not None:
            try:
                ref = self.parent.resolve(table, name)
            except CatalogError:
                pass
            else:
                if ref.cid not in self.parent.local_cids():
                    raise UnsupportedError(
                        f"column '{name}' refers to a query two or more levels out; hetdb "
                        "decorrelates subqueries that reference their immediate enclosing query only")
                self.correlated.add(ref.cid)
                return ref
        raise self._unknown(table_l, name_l)

    def _unknown(self, table: str | None, name: str) -> CatalogError:
        if table is not None and not any(r.alias == table for r in self._all_rels()):
            aliases = sorted({r.alias for r in self._all_rels()})
            return CatalogError(f"unknown table or alias '{table}' in '{table}.{name}'"
                                + _suggest(table, aliases))
        cands = sorted({f"{r.alias}.{n}" if table else n for r in self._all_rels()
                        if table is None or r.alias == table for n, _ in r.columns})
        full = f"{table}.{name}" if table else name
        return CatalogError(f"unknown column '{full}'" + _suggest(full, cands))

    def _all_rels(self) -> list[Rel]:
        out, s = [], self
        while s is not None:
            out.extend(s.rels)
            s = s.parent
        return out


def _suggest(word: str, candidates: list[str]) -> str:
    m = difflib.get_close_matches(word, candidates, n=1, cutoff=0.5)
    if m:
        return f"; did you mean '{m[0]}'?"
    if candidates and len(candidates) <= 12:
        return f"; known: {', '.join(candidates)}"
    return ""


def suggest(word: str, candidates: list[str]) -> str:
    """'; did you mean ...?' text for error messages (empty when nothing is close)."""
    return _suggest(word, candidates)
