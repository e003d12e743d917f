"""Which scans deliver paged under budgets: python ckpt/pdiag.py DB limit1,limit2 q1.1,q2.1,..."""
import sys, collections
import hetdb
from hetdb.bench.suites import load_queries
from hetdb.backend.gpu import stream as gs
seen = []
orig = gs.PageStreamer.__init__
def init(self, *a, **k):
    orig(self, *a, **k)
    seen.append(self)
gs.PageStreamer.__init__ = init
db = sys.argv[1]
for lim in sys.argv[2].split(","):
    opts = {} if lim == "0" else {"gpu_memory_limit": int(lim)}
    for q in load_queries("ssb", sys.argv[3].split(",")):
        for run in range(2):
            seen.clear()
            con = hetdb.connect(db, device="gpu", create=False, **opts); con.sql(q.sql).arrow(); con.close()
        for s in seen:
            if s.reader.num_rows < 10_000_000: continue
            print(f"limit {lim} {q.name}: {s.reader.name} cols {s.columns} compressed {s.compressed} decoded {sorted(s.decoded)} "
                  f"cache {'yes' if s.cache is not None else 'no'} mode {s.router.mode} paged {s.paged} rgs {len(s.row_groups)}")
