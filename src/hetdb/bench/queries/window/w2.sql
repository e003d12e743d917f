-- rank and dense_rank of each customer's orders by date and by priority
SELECT o_orderpriority, count(*) AS orders, sum(r) AS sum_rank, max(r) AS max_rank, sum(dr) AS sum_dense_rank
FROM (
    SELECT o_orderpriority,
           rank() OVER (PARTITION BY o_custkey ORDER BY o_orderdate) AS r,
           dense_rank() OVER (PARTITION BY o_custkey ORDER BY o_orderpriority) AS dr
    FROM orders
)
GROUP BY o_orderpriority
ORDER BY o_orderpriority
