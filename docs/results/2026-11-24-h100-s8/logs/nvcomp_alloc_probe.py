"""What nvCOMP allocates on the device while hetdb decodes LZ4 string pages (sizes per decode call)."""
import sys
import numpy as np
import cupy
from nvidia import nvcomp
from hetdb.backend.gpu import strings_codec
from hetdb.storage import Database

log = []
class Buf:
    def __init__(self, nbytes):
        self.mem = cupy.cuda.alloc(max(1, nbytes)); self.ptr = int(self.mem.ptr)
def alloc(nbytes, stream):
    log.append(int(nbytes)); return Buf(nbytes)
nvcomp.set_device_allocator(alloc)
db = Database.open(sys.argv[1])
for spec in sys.argv[2].split(","):
    table, column = spec.split(".")
    r = db.table(table)
    for rg in range(min(4, r.num_row_groups)):
        loc = r.page_location(column, rg)
        with open(loc.path, "rb") as f:
            f.seek(loc.offset); host = np.frombuffer(f.read(loc.length), np.uint8)
        raw = cupy.asarray(host)
        log.clear()
        for rep in range(2):
            strings_codec.decode_string_page(raw, r.page_sections(column, rg), r.row_group_rows(rg), r.page_codec(column, rg), spec)
            print(f"{spec} rg {rg} call {rep}: stored {loc.length} B, decoded {r.decoded_bytes(column, rg)} B, "
                  f"nvCOMP allocations {len(log)}: total {sum(log)} B, largest {max(log, default=0)} B", flush=True)
            log.clear()
