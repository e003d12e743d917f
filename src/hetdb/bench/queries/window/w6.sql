-- quartiles of all orders by price (ntile over one global order)
SELECT quartile, count(*) AS orders, min(o_totalprice) AS lo, max(o_totalprice) AS hi
FROM (
    SELECT o_totalprice, ntile(4) OVER (ORDER BY o_totalprice, o_orderkey) AS quartile
    FROM orders
)
GROUP BY quartile
ORDER BY quartile
