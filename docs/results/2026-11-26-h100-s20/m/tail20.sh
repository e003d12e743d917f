. ckpt/env.sh >/dev/null
export B
timeout 90 python3 scripts/warm_timeline.py $B/ssb-sf20 --queries q1.1,q2.1,q3.1,q4.1 --runs 7 --deliveries --variant base: --variant nosmall:smalltail=0 > $OUT/tl.log 2>&1; grep -E '^q[0-9.]+ |^geomean' $OUT/tl.log | cut -c1-150
grep -E '^q[0-9.]+ (base|nosmall)' $OUT/tl.log | while read -r l; do echo "${l%%:*}: $(echo "$l" | grep -oE 'after last copy: [^|]*|p[0-9]:ResultSource [0-9.-]+|end [0-9.]+ \||arrow x1 [0-9.]+ms|leak_check x1 [0-9.]+ms|gc x[0-9]+ [0-9.]+ms' | tr '\n' ' ')"; done

