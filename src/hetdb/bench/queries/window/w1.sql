-- top-3 orders per customer by price (row_number per partition, QUALIFY)
SELECT rn, count(*) AS orders, sum(o_totalprice) AS total
FROM (
    SELECT o_totalprice,
           row_number() OVER (PARTITION BY o_custkey ORDER BY o_totalprice DESC, o_orderkey) AS rn
    FROM orders
    QUALIFY rn <= 3
)
GROUP BY rn
ORDER BY rn
