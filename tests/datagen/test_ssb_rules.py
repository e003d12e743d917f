"""Every column rule of shared/benchmarks/ssb.md, checked with DuckDB on generated SF 0.1 data."""

from __future__ import annotations

import duckdb

from hetdb.datagen import ssb
from hetdb.datagen import ssb_dims as D


def one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple:
    return con.execute(sql).fetchone()


def values(con: duckdb.DuckDBPyConnection, sql: str) -> set:
    return {r[0] for r in con.execute(sql).fetchall()}


def test_row_counts_sf_0_1(ssb_small):
    sz = ssb.sizes(0.1)
    counts = {t: one(ssb_small, f"select count(*) from {t}")[0] for t in ssb.TABLES}
    assert counts["date"] == 2557
    assert counts["part"] == sz.part == 20_000
    assert counts["supplier"] == sz.supplier == 200
    assert counts["customer"] == sz.customer == 3_000
    assert one(ssb_small, "select count(distinct lo_orderkey) from lineorder")[0] == sz.orders == 150_000
    assert abs(counts["lineorder"] - 600_000) < 6_000  # 4 lines per order on average


def test_lineorder_order_structure(ssb_small):
    # orderkey = ((i >> 3) << 5) | (i & 7) for i = 1..orders: the inverse recovers every i exactly once
    n, lo, hi = one(ssb_small, """
        select count(*), min(i), max(i) from (
          select distinct ((lo_orderkey >> 5) << 3) | (lo_orderkey & 7) as i from lineorder)""")
    assert (n, lo, hi) == (150_000, 1, 150_000)
    assert one(ssb_small, "select count(*) from lineorder where (lo_orderkey >> 3) & 3 <> 0")[0] == 0
    # linenumbers are exactly 1..L with L in 1..7, and every L occurs
    bad, lmin, lmax, nl = one(ssb_small, """
        select sum(case when c <> m or mn <> 1 then 1 else 0 end), min(c), max(c), count(distinct c) from (
          select lo_orderkey, count(*) c, max(lo_linenumber) m, min(lo_linenumber) mn
          from lineorder group by lo_orderkey)""")
    assert (bad, lmin, lmax, nl) == (0, 1, 7, 7)
    # order-level values are the same on every line of an order
    n_orders, varying = one(ssb_small, """
        select count(*), sum(case when count_c > 1 then 1 else 0 end) from (
          select lo_orderkey, count(distinct (lo_custkey, lo_orderdate, lo_orderpriority, lo_ordtotalprice))
            as count_c from lineorder group by lo_orderkey)""")
    assert n_orders == 150_000 and varying == 0


def test_lineorder_custkey(ssb_small):
    ncust = ssb.sizes(0.1).customer
    lo, hi, div3, distinct = one(ssb_small, """select min(lo_custkey), max(lo_custkey),
        sum(case when lo_custkey % 3 = 0 then 1 else 0 end), count(distinct lo_custkey) from lineorder""")
    assert lo >= 1 and hi <= ncust and div3 == 0
    assert distinct == ncust - ncust // 3  # two thirds of customers appear (all of them at this size)


def test_lineorder_dates(ssb_small):
    ndays, lo, hi = one(ssb_small, "select count(distinct lo_orderdate), min(lo_orderdate), "
                                   "max(lo_orderdate) from lineorder")
    assert (ndays, lo, hi) == (2406, 19920101, 19980802)
    lag_lo, lag_hi, nlag, unjoined = one(ssb_small, """
        select min(lag), max(lag), count(distinct lag), sum(case when lag is null then 1 else 0 end) from (
          select date_diff('day', strptime(lo_orderdate::varchar, '%Y%m%d'),
                           strptime(lo_commitdate::varchar, '%Y%m%d')) lag from lineorder)""")
    assert (lag_lo, lag_hi, nlag, unjoined) == (30, 90, 61, 0)
    # every order date and commit date joins the date table
    assert one(ssb_small, "select count(*) from lineorder "
                          "where lo_orderdate not in (select d_datekey from date) "
                          "or lo_commitdate not in (select d_datekey from date)")[0] == 0


def test_lineorder_line_values(ssb_small):
    row = one(ssb_small, """select min(lo_quantity), max(lo_quantity), count(distinct lo_quantity),
        min(lo_discount), max(lo_discount), count(distinct lo_discount), min(lo_tax), max(lo_tax),
        count(distinct lo_tax), min(lo_partkey), max(lo_partkey), min(lo_suppkey), max(lo_suppkey),
        count(distinct lo_suppkey) from lineorder""")
    assert row == (1, 50, 50, 0, 10, 11, 0, 8, 9, 1, row[10], 1, 200, 200)
    assert 19_900 < row[10] <= 20_000  # partkey range = part count below SF 1
    assert values(ssb_small, "select distinct lo_orderpriority from lineorder") == set(ssb.PRIORITIES)
    assert values(ssb_small, "select distinct lo_shippriority from lineorder") == {"0"}
    assert values(ssb_small, "select distinct lo_shipmode from lineorder") == set(ssb.SHIPMODES)


def test_lineorder_derived_prices(ssb_small):
    wrong = one(ssb_small, """
        with p as (select *, 90000 + (lo_partkey // 10) % 20001 + 100 * (lo_partkey % 1000) as rp
                   from lineorder)
        select count(*), sum(case when lo_extendedprice <> rp * lo_quantity
                                   or lo_revenue <> (lo_extendedprice * (100 - lo_discount)) // 100
                                   or lo_supplycost <> (6 * rp) // 10 then 1 else 0 end) from p""")
    assert wrong[0] > 500_000 and wrong[1] == 0
    checked, bad = one(ssb_small, """
        select count(*), sum(case when tot <> lo_ordtotalprice then 1 else 0 end) from (
          select lo_orderkey, any_value(lo_ordtotalprice) lo_ordtotalprice,
                 sum(((lo_extendedprice * (100 - lo_discount)) // 100) * (100 + lo_tax) // 100) tot
          from lineorder group by lo_orderkey)""")
    assert checked == 150_000 and bad == 0


def test_part_columns(ssb_small):
    con = ssb_small
    assert values(con, "select distinct p_mfgr from part") == {f"MFGR#{m}" for m in range(1, 6)}
    assert one(con, "select count(distinct p_category), count(distinct p_brand1), count(distinct p_type), "
                    "count(distinct p_container), count(distinct p_color), min(p_size), max(p_size), "
                    "count(distinct p_size) from part") == (25, 1000, 150, 40, 92, 1, 50, 50)
    # category = mfgr + digit 1..5; brand = category + 1..40 without zero padding
    bad = one(con, """select count(*) from part where
        not regexp_full_match(p_category, 'MFGR#[1-5][1-5]') or p_category[1:6] <> p_mfgr
        or not regexp_full_match(p_brand1, 'MFGR#[1-5][1-5]([1-9]|[1-3][0-9]|40)')
        or p_brand1[1:7] <> p_category""")[0]
    assert bad == 0
    assert values(con, "select distinct length(p_brand1) from part") == {8, 9}
    assert "MFGR#2239" in values(con, "select distinct p_brand1 from part")
    # colour and the two name words: three distinct TPC-H colour words
    words = values(con, "select unnest(string_split(p_name, ' ')) from part") | values(
        con, "select p_color from part")
    assert words == set(D.COLORS) and len(D.COLORS) == 92
    assert one(con, """select count(*) from part where len(string_split(p_name, ' ')) <> 2
        or string_split(p_name, ' ')[1] = string_split(p_name, ' ')[2]
        or p_color in (string_split(p_name, ' ')[1], string_split(p_name, ' ')[2])""")[0] == 0
    assert values(con, "select distinct p_type from part") == set(D.TYPES)
    assert values(con, "select distinct p_container from part") == set(D.CONTAINERS)
    assert one(con, "select min(p_partkey), max(p_partkey), count(distinct p_partkey) from part") == (
        1, 20_000, 20_000)


def _check_party(con: duckdb.DuckDBPyConnection, t: str, p: str, label: str, n: int) -> None:
    assert one(con, f"select min({p}key), max({p}key), count(distinct {p}key) from {t}") == (1, n, n)
    nations = {(i, name) for i, name in enumerate(D.NATIONS)}
    rows = ",".join(f"({i}, '{name}', '{D.REGIONS[D.NATION_REGION[i]]}')" for i, name in nations)
    con.execute(f"create or replace temp table nations_ref as "
                f"select * from (values {rows}) v(n, name, region)")
    bad = one(con, f"""select count(*), sum(case when
          {p[:2]}name <> '{label}#' || lpad({p}key::varchar, 9, '0')
          or not regexp_full_match({p[:2]}address, '[0-9A-Za-z]{{6,24}}')
          or {p[:2]}region <> r.region
          or {p[:2]}city <> rpad({p[:2]}nation[1:9], 9, ' ') || right({p[:2]}city, 1)
          or not regexp_full_match(right({p[:2]}city, 1), '[0-9]')
          or not regexp_full_match({p[:2]}phone, '[0-9]{{2}}-[0-9]{{3}}-[0-9]{{3}}-[0-9]{{4}}')
          or {p[:2]}phone[1:2]::int <> 10 + r.n then 1 else 0 end)
        from {t} join nations_ref r on r.name = {p[:2]}nation""")
    assert bad == (n, 0)
    lengths = values(con, f"select distinct length({p[:2]}address) from {t}")
    assert min(lengths) == 6 and max(lengths) == 24


def test_customer_and_supplier(ssb_small):
    _check_party(ssb_small, "customer", "c_cust", "Customer", 3_000)
    _check_party(ssb_small, "supplier", "s_supp", "Supplier", 200)
    assert values(ssb_small, "select distinct c_mktsegment from customer") == set(D.SEGMENTS)
    assert one(ssb_small, "select count(distinct c_city), count(distinct c_nation), "
                          "count(distinct c_region) from customer") == (250, 25, 5)
    cities = values(ssb_small, "select distinct c_city from customer")
    assert {"UNITED KI1", "UNITED KI5", "ALGERIA  0"} <= cities and len(D.CITIES) == 250


def test_date_table(ssb_small):
    con = ssb_small
    n, bad = one(con, """
        with d as (select *, strptime(d_datekey::varchar, '%Y%m%d')::date as day from date)
        select count(*), sum(case when
             d_date <> monthname(day) || ' ' || day(day) || ', ' || year(day)
          or d_dayofweek <> dayname(day) or d_month <> monthname(day) or d_year <> year(day)
          or d_yearmonthnum <> year(day) * 100 + month(day)
          or d_yearmonth <> left(monthname(day), 3) || year(day)
          or d_daynuminweek <> dayofweek(day) + 1 or d_daynuminmonth <> day(day)
          or d_daynuminyear <> dayofyear(day) or d_monthnuminyear <> month(day)
          or d_weeknuminyear <> dayofyear(day) // 7 + 1
          or d_lastdayinweekfl <> (dayname(day) = 'Saturday')::int
          or d_lastdayinmonthfl <> (day = last_day(day))::int
          or d_weekdayfl <> (dayofweek(day) between 1 and 5)::int
          or d_sellingseason <> case when month(day) in (11, 12) then 'Christmas'
                                     when month(day) between 5 and 8 then 'Summer'
                                     when month(day) <= 3 then 'Winter'
                                     when month(day) = 4 then 'Spring' else 'Fall' end
          or d_holidayfl <> ((month(day), day(day)) in ((12, 24), (1, 1), (2, 20), (4, 20), (5, 20),
                                                         (7, 20), (8, 20), (9, 20), (10, 20), (11, 20)))::int
          then 1 else 0 end) from d""")
    assert (n, bad) == (2557, 0)
    assert one(con, "select min(d_datekey), max(d_datekey), count(distinct d_datekey) from date") == (
        19920101, 19981231, 2557)
    assert one(con, "select min(d_datekey), max(d_datekey) from date "
                    "where d_year = 1994 and d_weeknuminyear = 6") == (19940204, 19940210)
    assert one(con, "select count(*) from date where d_holidayfl = 1")[0] == 70
    assert one(con, "select d_date, d_yearmonth from date where d_datekey = 19971201") == (
        "December 1, 1997", "Dec1997")
