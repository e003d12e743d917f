# .whl holds duckdb, sqlglot, tpchgen wheels and a slim nvCOMP (cp312 module + libnvcomp.so) as a tarball
# (64 MiB carry limit); installed into /tmp/hetdb-site, which stays while the machine is held.
S=/tmp/hetdb-site
if [ ! -d $S/nvidia/nvcomp ]; then
  python3 -m pip install -q --no-index --no-deps --target $S .whl/*.whl 2>&1 | grep -v WARNING | tail -2
  tar xJf .whl/nvcomp-slim.tar.xz -C $S
fi
export PYTHONPATH=$S:$PWD/src PATH=$S/bin:$PATH NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
B=/tmp/hetdb-bench
python3 -c "import duckdb, nvidia.nvcomp as n; print('duckdb', duckdb.__version__, 'nvcomp', n.__version__)" 2>&1 | tail -1
