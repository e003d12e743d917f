# session 17 diagnostic run: warm timelines (placement on/off), co-processing vs worker count
source ckpt/env.sh
source ckpt/s16lib.sh
mkdir -p $OUT/main $OUT/d
nvidia-smi --query-gpu=name,memory.total --format=csv > $OUT/d/gpu.txt 2>&1
gen ssb-sf20 ssb --sf 20
cd scripts
timeout -k 5 170 python3 warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q4.1 --runs 3 --deliveries \
  --variant base: --variant noplace:gpu_decoded_placement=false > $OUT/d/timeline.log 2>&1; echo "timeline rc=$?"
grep -E "^q" $OUT/d/timeline.log | cut -c1-200
timeout -k 5 200 python3 coprocess_warm_table.py $B/ssb-sf20 --queries q1.1,q1.3 --repeat 3 \
  --modes gpu,on@3,on@5,on@9,on,on-si,cpu-hot > $OUT/d/co.log 2>&1; echo "co rc=$?"
grep -E "^q|geomean" $OUT/d/co.log | cut -c1-160
