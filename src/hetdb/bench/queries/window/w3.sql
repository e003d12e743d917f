-- running sum of each customer's spending ordered by date
SELECT year(o_orderdate) AS y, count(*) AS orders, max(running) AS max_running, sum(running) AS sum_running
FROM (
    SELECT o_orderdate,
           sum(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running
    FROM orders
)
GROUP BY y
ORDER BY y
