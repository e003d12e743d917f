. ckpt/env.sh
mkdir -p $OUT/rel9
A=/tmp/rel9-fuzz-gpu; B=/tmp/rel9-fuzz-gpu-dev
timeout -k 5 85 python3 tests/differential/fuzz_main.py --dir $A --seed 20261125 --queries 100000 \
    --cases 4000:100000 --device gpu --jobs 8 --gpu-jobs 8 --seconds 62 > $OUT/rel9/final-fuzz-gpu-A.log 2>&1 &
timeout -k 5 85 python3 tests/differential/fuzz_main.py --dir $B --seed 20261126 --queries 100000 \
    --values device --device gpu --jobs 8 --gpu-jobs 8 --seconds 62 > $OUT/rel9/final-fuzz-gpu-B.log 2>&1 &
wait
tar czf $OUT/rel9/final-fuzz-gpu-results.tgz -C /tmp rel9-fuzz-gpu rel9-fuzz-gpu-dev
grep -hE "^fuzz campaign|^gpu:|failures:|FAILED" $OUT/rel9/final-fuzz-gpu-A.log $OUT/rel9/final-fuzz-gpu-B.log
