-- moving average of a customer's last five orders (ROWS frame), days since the previous order
SELECT o_orderstatus, count(*) AS orders, avg(moving_avg) AS avg_moving_avg, max(moving_avg) AS max_moving_avg,
       avg(gap_days) AS avg_gap_days
FROM (
    SELECT o_orderstatus,
           avg(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey
                                   ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS moving_avg,
           o_orderdate - lag(o_orderdate) OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) AS gap_days
    FROM orders
)
GROUP BY o_orderstatus
ORDER BY o_orderstatus
