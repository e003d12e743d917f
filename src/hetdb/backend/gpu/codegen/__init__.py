"""Fused pipeline kernels generated from the expression IR (scan -> filter -> probe -> aggregate).

Importing this package does not import CuPy: specs and CUDA source are plain Python; running a
pipeline needs a GPU.
"""

from __future__ import annotations

from hetdb.backend.gpu.codegen.expr_cuda import ExprError, translate
from hetdb.backend.gpu.codegen.generate import KernelSource, generate
from hetdb.backend.gpu.codegen.runtime import (
    AggregateResult,
    DenseJoinTable,
    FusedPipeline,
    Selection,
    compile_fused_pipeline,
    dense_build,
    domain_of,
)
from hetdb.backend.gpu.codegen.spec import (
    AGGREGATE,
    SELECTION,
    AggregateSpec,
    DenseProbe,
    FusedPipelineSpec,
)

__all__ = ["AGGREGATE", "SELECTION", "AggregateResult", "AggregateSpec", "DenseJoinTable", "DenseProbe",
           "ExprError", "FusedPipeline", "FusedPipelineSpec", "KernelSource", "Selection",
           "compile_fused_pipeline", "dense_build", "domain_of", "generate", "translate"]
