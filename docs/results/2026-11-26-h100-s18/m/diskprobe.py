"""How fast can this disk be read? The bench's ceiling (fresh temp file) vs the database's own files.
usage: python3 ckpt/diskprobe.py DB"""
import os, sys, time, mmap
from concurrent.futures import ThreadPoolExecutor
from hetdb.bench.ceilings import measure_disk_read
from hetdb.bench.environment import drop_os_cache
db = sys.argv[1]
MiB = 1 << 20
for size, thr in ((256, 8), (256, 8), (1024, 8), (1024, 16), (1024, 32)):
    r = measure_disk_read(db, size * MiB, thr)
    print(f"temp file {size} MiB threads {thr}: best {r['bytes_per_s']/1e9:.2f} GB/s by block "
          f"{ {int(b)//MiB: round(v/1e9, 2) for b, v in r['by_block_bytes'].items()} }", flush=True)
files = []
for dp, _, names in os.walk(db):
    for n in names:
        p = os.path.join(dp, n); files.append((os.path.getsize(p), p))
files.sort(reverse=True)
def read_files(paths, block, threads):
    jobs = []
    for p in paths:
        size = os.path.getsize(p)
        for off in range(0, size - size % 4096, block):
            jobs.append((p, off, min(block, size - size % 4096 - off)))
    fds = {p: os.open(p, os.O_RDONLY | os.O_DIRECT) for p in paths}
    def work(t):
        buf = mmap.mmap(-1, block); tot = 0
        for p, off, n in jobs[t::threads]:
            tot += os.preadv(fds[p], [memoryview(buf)[:n]], off)
        buf.close(); return tot
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        tot = sum(ex.map(work, range(threads)))
    dt = time.perf_counter() - t0
    for fd in fds.values(): os.close(fd)
    return tot, dt
chosen, tot = [], 0
for s, p in files:
    if tot > 2 << 30: break
    chosen.append(p); tot += s
for block, thr in ((8 * MiB, 8), (8 * MiB, 16), (1 * MiB, 16), (1 * MiB, 32), (256 << 10, 32), (128 << 10, 64), (8 * MiB, 32)):
    drop_os_cache([db])
    n, dt = read_files(chosen, block, thr)
    print(f"db files ({len(chosen)} files {n/1e9:.2f} GB) block {block>>10} KiB threads {thr}: {n/dt/1e9:.2f} GB/s", flush=True)
