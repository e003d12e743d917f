-- lag/lead over the lines of each order (lineitem)
SELECT l_linenumber, count(*) AS lines, sum(prev_diff) AS sum_prev_diff, sum(next_qty) AS sum_next_qty,
       count(prev_diff) AS with_prev
FROM (
    SELECT l_linenumber,
           l_extendedprice - lag(l_extendedprice) OVER (PARTITION BY l_orderkey ORDER BY l_linenumber) AS prev_diff,
           lead(l_quantity, 1, 0) OVER (PARTITION BY l_orderkey ORDER BY l_linenumber) AS next_qty
    FROM lineitem
)
GROUP BY l_linenumber
ORDER BY l_linenumber
