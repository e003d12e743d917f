"""decode.cuh's random-access decoders (the bit extraction the GPU runs) against the CPU encoder, built
as a host program with nvcc: runs without a GPU wherever nvcc is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from codec_cases import case_files, cases

KERNELS = Path(__file__).resolve().parents[2] / "src" / "hetdb" / "backend" / "gpu" / "kernels"


@pytest.fixture(scope="module")
def checker(tmp_path_factory) -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    exe = tmp_path_factory.mktemp("decode-host") / "check"
    subprocess.run([nvcc, "-std=c++17", "-x", "cu", f"-I{KERNELS}", str(Path(__file__).with_name("decode_host_check.cu")),
                    "-o", str(exe)], check=True, capture_output=True, timeout=300)
    return str(exe)


def test_host_decode_matches_cpu_encoder(checker, tmp_path) -> None:
    args, expected = case_files(tmp_path, cases())
    subprocess.run([checker, *args], check=True, timeout=120)
    for label, out, image in expected:
        assert np.array_equal(np.fromfile(out, dtype=np.int64), image), label
    assert len(expected) >= 4 * len(cases())
