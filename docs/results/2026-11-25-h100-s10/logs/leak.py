import gc, sys, tempfile, types
sys.path.insert(0, "tests/backend")
import cupy
import test_gpu_stream_batch as t
from hetdb.storage import Database
from hetdb.backend.gpu.stream import PageStreamer

class F:
    def mktemp(self, name):
        import pathlib; return pathlib.Path(tempfile.mkdtemp(prefix=name))
path = t.db_path.__wrapped__(F())
reader = Database.open(path, create=False).table("t")
pool = cupy.get_default_memory_pool()
for attempt in range(2):
    host = t.tier(); b = t.budget()
    cupy.cuda.Device().synchronize(); used = pool.used_bytes()
    s = PageStreamer(reader, t.COLUMNS, budget=b, host_cache=host, batch_bytes=t.per_group(reader, t.COLUMNS, 2),
                     depth=2, row_groups=[1, 2, 3, 4])
    it = s.batches(); rgs, batch = next(it); del batch
    s.close(); gc.collect()
    print("attempt", attempt, "leak", pool.used_bytes() - used)
    live = [o for o in gc.get_objects() if isinstance(o, cupy.ndarray)]
    print("live cupy arrays", len(live), sum(a.nbytes for a in live))
    for a in sorted(live, key=lambda a: -a.nbytes)[:6]:
        refs = gc.get_referrers(a)
        print(" ", a.shape, a.dtype, a.nbytes, [type(r).__name__ + (":" + ",".join(list(r.keys())[:6]) if isinstance(r, dict) else "") for r in refs if r is not live][:4])
    del it, s
    gc.collect(); print("after del it, s:", pool.used_bytes() - used)
