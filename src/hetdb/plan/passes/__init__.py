"""Optimizer passes, one per module; each is ``run(plan, ctx) -> plan`` and keeps the root schema."""
