-- each line's share of its order and its rank within the order (lineitem, aggregate OVER a partition)
SELECT l_returnflag, count(*) AS lines, sum(CASE WHEN rk = 1 THEN 1 ELSE 0 END) AS top_lines,
       avg(share) AS avg_share
FROM (
    SELECT l_returnflag,
           rank() OVER (PARTITION BY l_orderkey ORDER BY l_extendedprice DESC) AS rk,
           l_extendedprice / sum(l_extendedprice) OVER (PARTITION BY l_orderkey) AS share
    FROM lineitem
)
GROUP BY l_returnflag
ORDER BY l_returnflag
