"""hetdb info's GPUDirect Storage line: kvikio absent, in compatibility mode, or using cuFile."""

from __future__ import annotations

from types import SimpleNamespace

from hetdb.io.gds import gds_status


def fake_kvikio(**defaults) -> SimpleNamespace:
    return SimpleNamespace(defaults=SimpleNamespace(**defaults))


def test_gds_status_from_kvikio_defaults():
    assert gds_status(fake_kvikio(is_compat_mode_preferred=lambda: False)) == "GDS"
    assert gds_status(fake_kvikio(is_compat_mode_preferred=lambda: True)) == "installed, compat mode"
    assert gds_status(fake_kvikio(compat_mode=lambda: True)) == "installed, compat mode"  # older kvikio

    def broken():
        raise RuntimeError("cuFile driver not loaded")

    assert gds_status(fake_kvikio(is_compat_mode_preferred=broken)).startswith("installed, compat mode (")


def test_gds_status_without_kvikio(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "kvikio", None)  # import kvikio raises ImportError
    assert gds_status() == "not installed"


def test_info_prints_the_gds_line(capsys, monkeypatch):
    import sys

    from hetdb.cli.main import main

    monkeypatch.setitem(sys.modules, "kvikio", None)
    monkeypatch.setattr("hetdb.backend.gpu.device.gpu_available", lambda: False)  # no bandwidth runs
    assert main(["info"]) == 0
    assert "GPUDirect Storage (kvikio): not installed" in capsys.readouterr().out
