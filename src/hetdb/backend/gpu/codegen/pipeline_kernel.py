"""What a compiled pipeline kernel is (pipeline_gen.py makes it): its tile shape, the codecs its
inputs are read in, the page-table layout of paged kernels, and the generated source with its
accumulators and group keys."""

from __future__ import annotations

from dataclasses import dataclass

from hetdb import types as T
from hetdb.backend.gpu.codegen.expr3 import Lookup
from hetdb.backend.gpu.codegen.expr_cuda import LiteralParam
from hetdb.backend.gpu.codegen.pipeline_spec import Input

PL_BLOCK = 128
PL_ITEMS = 4
PL_TILE = PL_BLOCK * PL_ITEMS
HEADER = "pipeline.cuh"
MAX_KEYS = 16
_NAME = "@KERNEL_NAME@"
_KEY_KINDS = ("int32", "int64", "date", "decimal", "timestamp", "float64", "bool")
_ORDERED = ("int32", "int64", "date", "decimal", "timestamp", "float64")
# codec -> the pipe:: column reading it by random access; TILE_CODECS decode a tile up front
_COLUMN_OF = {"plain": "PlainColumn", "const": "ConstColumn", "for": "ForColumn", "dict": "DictColumn"}
TILE_CODECS = {"delta": "load_tile_delta", "rle": "load_tile_rle"}
# codecs of a paged kernel's inputs whose pages may be kept compressed (pipe::PageColumn: the page
# table says per page whether it is a value array or an encoded data section): "paged" pages are
# plain or random-access (const, for, dict), "paged_tile" ones may also be delta or rle pages, whose
# tiles decode into registers before the row loop
PAGED_CODECS = ("paged", "paged_tile")

# Page table (int64) of a paged kernel: [tile start per page + total tiles][first row per page]
# [rows per page][per page, per input: value pointer, validity pointer, 0 plain / 1 encoded data
# section (plain strings: offsets pointer, validity pointer, bytes pointer)]
PAGE_PTRS = 3


@dataclass(frozen=True)
class Accumulator:
    """One 8-byte accumulator per group slot: aggregate ``agg``'s state ``part`` ("sum", "cnt",
    "val"); ``acc`` the fused:: struct; ``kind`` how to read it ("i64", "f64", "order_f64")."""

    agg: int
    part: str
    acc: str
    kind: str


@dataclass(frozen=True)
class GroupKeyOut:
    """How group key ``k`` comes back: its SQL type and, for strings, the cid whose dictionary
    its codes index."""

    dtype: T.DataType
    dict_cid: str | None
    build_rows_of: str | None = None  # the values are build rows of this plain-string payload column
    expr: object | None = None        # the values are codes of dict_cid; the key is expr over them


@dataclass(frozen=True)
class PipelineKernel:
    name: str
    body: str
    lookups: tuple[Lookup, ...]
    accumulators: tuple[Accumulator, ...]
    group_keys: tuple[GroupKeyOut, ...]
    probe_payloads: tuple[tuple[Input, ...], ...]   # per probe, the payload columns passed in order
    row_outputs: tuple[int, ...] = ()    # materialize: stage indexes whose build row is written
    mark_outputs: tuple[int, ...] = ()   # materialize: stage indexes whose mark is written
    # the literals' values, passed after every other argument (expr_cuda.literal_params)
    literals: tuple[LiteralParam, ...] = ()

    def full_source(self) -> str:
        """pipeline.cuh (headers inlined) and the kernel: what NVRTC compiles (made once per kernel)."""
        from hetdb.backend.gpu.compile import kernel_source

        return kernel_source(HEADER, self.name, self.body)


def _plain_string(inp: Input) -> bool:
    """A plain-string input of the probe side (offsets and bytes; read through LIKE only)."""
    return inp.dtype.kind == "string" and not inp.dictionary and not inp.build_row and inp.codec == "plain"


def _comment(text: str) -> str:
    return text.replace("*/", "* /").replace("\n", " ")
