"""Backends: one kernel protocol (base.py), CPU and GPU implementations."""
