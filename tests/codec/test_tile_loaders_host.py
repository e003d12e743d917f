"""decode.cuh's tile loaders (the cooperative delta/rle prefix decode, the for/dict/const loaders) against
the CPU encoder, run as a host program that plays a CUDA thread block with one thread per CUDA thread
(tile_host_check.cpp): runs without a GPU wherever g++ with C++20 is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from codec_cases import case_files, cases, width_blocks

KERNELS = Path(__file__).resolve().parents[2] / "src" / "hetdb" / "backend" / "gpu" / "kernels"


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not installed")
    exe = tmp_path_factory.mktemp("tile-host") / "check"
    subprocess.run([gxx, "-std=c++20", "-O1", "-pthread", f"-I{KERNELS}",
                    str(Path(__file__).with_name("tile_host_check.cpp")), "-o", str(exe)],
                   check=True, capture_output=True, timeout=300)
    return str(exe)


# (threads, items): tiles of 384 values straddle the 1024-value blocks; 512 is the compiled
# pipelines' tile (two per block); 256 x 4 the whole-page decoder's and fused_block256's 1024 (rle: 4
# run lengths per thread; for/dict: the lane walk of blocks of width <= 4)
@pytest.mark.parametrize("shape", [(128, 3), (128, 4), pytest.param((256, 4), marks=pytest.mark.slow)])
def test_tile_loaders_match_cpu_encoder(checker, tmp_path, shape) -> None:
    every = {**cases(), "widths_0_64": width_blocks(1, 333), "widths_0_64_full": width_blocks(2, 0)}
    args, expected = case_files(tmp_path, every)
    subprocess.run([checker, *map(str, shape), *args], check=True, timeout=600)
    for label, out, image in expected:
        got = np.fromfile(out, dtype=np.int64)
        assert np.array_equal(got, image), f"{label}: first difference at {int(np.argmax(got != image))}"
    assert len(expected) >= 4 * len(cases())
