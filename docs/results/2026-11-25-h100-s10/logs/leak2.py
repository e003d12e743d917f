import gc, sys, tempfile
sys.path.insert(0, "tests/backend")
import cupy
import test_gpu_stream_batch as t
from hetdb.storage import Database
from hetdb.backend.gpu.stream import PageStreamer

class F:
    def mktemp(self, name):
        import pathlib; return pathlib.Path(tempfile.mkdtemp(prefix=name))
def main():
    reader = Database.open(t.db_path.__wrapped__(F()), create=False).table("t")
    pool = cupy.get_default_memory_pool()
    host = t.tier(); b = t.budget()
    cupy.cuda.Device().synchronize(); used = pool.used_bytes()
    s = PageStreamer(reader, t.COLUMNS, budget=b, host_cache=host, batch_bytes=t.per_group(reader, t.COLUMNS, 2),
                     depth=2, row_groups=[1, 2, 3, 4])
    it = s.batches(); rgs, batch = next(it); del batch
    s.close(); del it, s; gc.collect()
    print("leak", pool.used_bytes() - used)
    big = max((o for o in gc.get_objects() if isinstance(o, cupy.ndarray)), key=lambda a: a.nbytes)
    seen = set(); frontier = [big]
    for depth in range(7):
        nxt = []
        for o in frontier:
            for r in gc.get_referrers(o):
                if id(r) in seen or r is frontier or r is nxt or type(r).__name__ in ("frame",):
                    continue
                seen.add(id(r))
                desc = type(r).__name__
                if isinstance(r, dict): desc += ":" + ",".join(map(str, list(r.keys())[:5]))
                if type(r).__name__ == "function": desc += ":" + r.__qualname__
                if type(r).__name__ == "cell": desc += ":cell"
                print("  " * depth, depth, desc[:150])
                if not (isinstance(r, dict) and "__name__" in r and "__loader__" in r):
                    nxt.append(r)
        frontier = nxt[:12]
main()
