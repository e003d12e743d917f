"""How the CPU backend sets libgomp's waiting (backend/cpu/__init__.py): PASSIVE by default,
spinning with HETDB_OMP_SPINCOUNT, nothing where the user set a variable of OpenMP's."""

from __future__ import annotations

from hetdb.backend.cpu import omp_wait_settings


def test_default_is_passive() -> None:
    assert omp_wait_settings({}) == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_spin_count_asked_for() -> None:
    assert omp_wait_settings({"HETDB_OMP_SPINCOUNT": "20000"}) == {"GOMP_SPINCOUNT": "20000"}
    assert omp_wait_settings({"HETDB_OMP_SPINCOUNT": "0"}) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert omp_wait_settings({"HETDB_OMP_SPINCOUNT": "x"}) == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_the_users_settings_win() -> None:
    assert omp_wait_settings({"OMP_WAIT_POLICY": "ACTIVE"}) == {}
    assert omp_wait_settings({"GOMP_SPINCOUNT": "5", "HETDB_OMP_SPINCOUNT": "20000"}) == {}
