"""Diagnosis: which run and which option makes the paged top-N gather the wrong s_hi."""
import sys
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(ROOT / "tests" / "differential"))

from diff_check import TOTAL, mismatch  # noqa: E402
from diff_data import build_nulls, dataset  # noqa: E402

import hetdb  # noqa: E402

SQLS = {
    "topn": "SELECT id, d, s_hi, f64 FROM nulls WHERE d > DATE '1995-01-01' ORDER BY i64 DESC NULLS LAST, id LIMIT 25",
    "topn_nostr": "SELECT id, d, f64 FROM nulls WHERE d > DATE '1995-01-01' ORDER BY i64 DESC NULLS LAST, id LIMIT 25",
    "sort_all": "SELECT id, s_hi FROM nulls WHERE d > DATE '1995-01-01' ORDER BY i64 DESC NULLS LAST, id",
    "filter_str": "SELECT id, s_hi FROM nulls WHERE d > DATE '1995-01-01'",
}
VARIANTS = {
    "default": {},
    "batch0": {"gpu_batch_bytes": 0},
    "noearly": {"gpu_early_scan": False, "gpu_host_small_builds": False},
    "noreuse": {"reuse_fused_state": False},
}


def test_diag(tmp_path_factory):
    db = dataset(tmp_path_factory.mktemp("diag-nulls"), "nulls", build_nulls)
    lines = []
    for qn, sql in SQLS.items():
        ref = db.reference(sql)
        for vn, opts in VARIANTS.items():
            with hetdb.connect(db.path, device="gpu", **opts) as con:
                for run in range(3):
                    res = con.sql(sql)
                    diff = mismatch(res.arrow(), ref, TOTAL if "ORDER" in sql else None, 1e-9)
                    lines.append(f"{qn:10s} {vn:8s} run {run}: {'ok' if diff is None else diff}")
                    if diff is not None and run == 0 and vn == "default":
                        lines.append(con.explain(sql, analyze=True))
    print("\n".join(lines))
