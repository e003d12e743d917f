# .whl holds duckdb, sqlglot, tpchgen wheels and nvcomp-slim.tar.xz (nvidia-nvcomp-cu13's cp312 module and
# libnvcomp.so.6); each is installed into /tmp/hetdb-site once, which stays while the machine is held
S=/tmp/hetdb-site; mkdir -p $S
for w in .whl/*.whl; do [ -f "$w" ] || continue; m=$S/.ok-$(basename $w)
  [ -f $m ] || { python3 -m pip install -q --no-index --no-deps --target $S $w 2>&1 | grep -v WARNING | tail -2; touch $m; }; done
[ -f .whl/nvcomp-slim.tar.xz ] && [ ! -f $S/.ok-nvcomp ] && tar xJf .whl/nvcomp-slim.tar.xz -C $S && touch $S/.ok-nvcomp
export PYTHONPATH=$S:$PWD/src PATH=$S/bin:$PATH NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
B=/tmp/hetdb-bench
python3 -c "import duckdb; print('duckdb', duckdb.__version__)" 2>&1 | tail -1
python3 -c "import nvidia.nvcomp as n; print('nvcomp', n.__version__)" 2>&1 | tail -1
