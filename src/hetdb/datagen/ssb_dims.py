"""SSB dimension tables: date, part, customer, supplier (rules in shared/benchmarks/ssb.md)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from hetdb import types as T
from hetdb.column import Batch, Column
from hetdb.datagen import strings as S
from hetdb.datagen.chunks import Field, rng_for

# The 92 colour words of TPC-H (P_NAME); SSB draws p_color and p_name from them.
COLORS = (
    "almond antique aquamarine azure beige bisque black blanched blue blush brown burlywood burnished "
    "chartreuse chiffon chocolate coral cornflower cornsilk cream cyan dark deep dim dodger drab firebrick "
    "floral forest frosted gainsboro ghost goldenrod green grey honeydew hot indian ivory khaki lace "
    "lavender lawn lemon light lime linen magenta maroon medium metallic midnight mint misty moccasin "
    "navajo navy olive orange orchid pale papaya peach peru pink plum powder puff purple red rose rosy "
    "royal saddle salmon sandy seashell sienna sky slate smoke snow spring steel tan thistle tomato "
    "turquoise violet wheat white yellow").split()

NATIONS = ("ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
           "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU",
           "CHINA", "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES")
REGIONS = ("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST")
_REGION_MEMBERS = {
    "AFRICA": ("ALGERIA", "ETHIOPIA", "KENYA", "MOROCCO", "MOZAMBIQUE"),
    "AMERICA": ("ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"),
    "ASIA": ("INDIA", "INDONESIA", "JAPAN", "CHINA", "VIETNAM"),
    "EUROPE": ("FRANCE", "GERMANY", "ROMANIA", "RUSSIA", "UNITED KINGDOM"),
    "MIDDLE EAST": ("EGYPT", "IRAN", "IRAQ", "JORDAN", "SAUDI ARABIA"),
}
NATION_REGION = np.array([next(REGIONS.index(r) for r, ms in _REGION_MEMBERS.items() if n in ms)
                          for n in NATIONS], dtype=np.int32)
# City code = 10 * nation + digit.
CITIES = tuple(f"{n[:9]:<9}{d}" for n in NATIONS for d in range(10))
SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")

MFGRS = tuple(f"MFGR#{m}" for m in range(1, 6))
CATEGORIES = tuple(f"MFGR#{m}{c}" for m in range(1, 6) for c in range(1, 6))
# Brand code = 40 * category + (b - 1); b is not zero-padded, so brands have 8 or 9 characters.
BRANDS = tuple(f"{cat}{b}" for cat in CATEGORIES for b in range(1, 41))
TYPES = tuple(f"{a} {b} {c}" for a in ("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO")
              for b in ("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED")
              for c in ("TIN", "NICKEL", "BRASS", "STEEL", "COPPER"))
CONTAINERS = tuple(f"{a} {b}" for a in ("SM", "LG", "MED", "JUMBO", "WRAP")
                   for b in ("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"))

FIRST_DAY = dt.date(1992, 1, 1)
LAST_DAY = dt.date(1998, 12, 31)
NUM_DAYS = (LAST_DAY - FIRST_DAY).days + 1  # 2557
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
# d_daynuminweek: Sunday = 1 ... Saturday = 7.
WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
SEASONS = ("Christmas", "Summer", "Winter", "Spring", "Fall")
_SEASON_OF_MONTH = (2, 2, 2, 3, 1, 1, 1, 1, 4, 4, 0, 0)
HOLIDAYS = {(12, 24), (1, 1), (2, 20), (4, 20), (5, 20), (7, 20), (8, 20), (9, 20), (10, 20), (11, 20)}

TABLE_PART, TABLE_CUSTOMER, TABLE_SUPPLIER = 1, 2, 3

DATE_SCHEMA = (
    Field("d_datekey", T.INT32), Field("d_date", T.STRING), Field("d_dayofweek", T.STRING),
    Field("d_month", T.STRING), Field("d_year", T.INT32), Field("d_yearmonthnum", T.INT32),
    Field("d_yearmonth", T.STRING), Field("d_daynuminweek", T.INT32), Field("d_daynuminmonth", T.INT32),
    Field("d_daynuminyear", T.INT32), Field("d_monthnuminyear", T.INT32), Field("d_weeknuminyear", T.INT32),
    Field("d_sellingseason", T.STRING), Field("d_lastdayinweekfl", T.INT32),
    Field("d_lastdayinmonthfl", T.INT32), Field("d_holidayfl", T.INT32), Field("d_weekdayfl", T.INT32),
)
PART_SCHEMA = (
    Field("p_partkey", T.INT32), Field("p_name", T.STRING), Field("p_mfgr", T.STRING),
    Field("p_category", T.STRING), Field("p_brand1", T.STRING), Field("p_color", T.STRING),
    Field("p_type", T.STRING), Field("p_size", T.INT32), Field("p_container", T.STRING),
)
SUPPLIER_SCHEMA = (
    Field("s_suppkey", T.INT32), Field("s_name", T.STRING), Field("s_address", T.STRING),
    Field("s_city", T.STRING), Field("s_nation", T.STRING), Field("s_region", T.STRING),
    Field("s_phone", T.STRING),
)
CUSTOMER_SCHEMA = (
    Field("c_custkey", T.INT32), Field("c_name", T.STRING), Field("c_address", T.STRING),
    Field("c_city", T.STRING), Field("c_nation", T.STRING), Field("c_region", T.STRING),
    Field("c_phone", T.STRING), Field("c_mktsegment", T.STRING),
)


def datekeys() -> np.ndarray:
    """yyyymmdd of every day 1992-01-01 … 1998-12-31, indexed by days since 1992-01-01."""
    days = np.arange(NUM_DAYS).astype("timedelta64[D]") + np.datetime64(FIRST_DAY.isoformat(), "D")
    years = days.astype("datetime64[Y]").astype(np.int64) + 1970
    months = days.astype("datetime64[M]").astype(np.int64) % 12 + 1
    dom = (days - days.astype("datetime64[M]")).astype(np.int64) + 1
    return (years * 10000 + months * 100 + dom).astype(np.int32)


def date_batch() -> Batch:
    """The whole date table (2,557 rows, one per day); never scaled with SF."""
    rows = []
    for k in range(NUM_DAYS):
        d = FIRST_DAY + dt.timedelta(days=k)
        weekday = (d.weekday() + 1) % 7  # Python: Monday = 0; here Sunday = 0
        dayofyear = d.timetuple().tm_yday
        last_of_month = (d + dt.timedelta(days=1)).month != d.month
        rows.append((d.year * 10000 + d.month * 100 + d.day, f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
                     weekday, d.month - 1, d.year, d.year * 100 + d.month,
                     f"{MONTHS[d.month - 1][:3]}{d.year}", weekday + 1, d.day, dayofyear, d.month,
                     dayofyear // 7 + 1, _SEASON_OF_MONTH[d.month - 1], int(weekday == 6),
                     int(last_of_month), int((d.month, d.day) in HOLIDAYS), int(1 <= weekday <= 5)))
    cols = list(zip(*rows))

    def ints(i: int) -> Column:
        return Column(T.INT32, data=np.array(cols[i], dtype=np.int32))

    yearmonths = list(dict.fromkeys(cols[6]))  # rows are in date order, so this is chronological
    ym_code = {s: i for i, s in enumerate(yearmonths)}
    columns = {
        "d_datekey": ints(0),
        "d_date": S.plain_strings(cols[1]),
        "d_dayofweek": S.dict_column(np.array(cols[2]), WEEKDAYS),
        "d_month": S.dict_column(np.array(cols[3]), MONTHS),
        "d_year": ints(4), "d_yearmonthnum": ints(5),
        "d_yearmonth": S.dict_column(np.array([ym_code[s] for s in cols[6]]), yearmonths),
        "d_daynuminweek": ints(7), "d_daynuminmonth": ints(8), "d_daynuminyear": ints(9),
        "d_monthnuminyear": ints(10), "d_weeknuminyear": ints(11),
        "d_sellingseason": S.dict_column(np.array(cols[12]), SEASONS),
        "d_lastdayinweekfl": ints(13), "d_lastdayinmonthfl": ints(14), "d_holidayfl": ints(15),
        "d_weekdayfl": ints(16),
    }
    return Batch(columns, NUM_DAYS)


def _three_distinct(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three distinct values in 0..m-1 per row, each ordered triple equally likely."""
    a = rng.integers(0, m, n)
    b = rng.integers(0, m - 1, n)
    c = rng.integers(0, m - 2, n)
    b += b >= a
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    c += c >= lo
    c += c >= hi
    return a, b, c


def part_batch(seed: int, chunk: int, start: int, stop: int) -> Batch:
    """Parts with keys start+1 … stop."""
    rng = rng_for(seed, TABLE_PART, chunk)
    n = stop - start
    keys = np.arange(start + 1, stop + 1, dtype=np.int32)
    color, name1, name2 = _three_distinct(rng, n, len(COLORS))
    mfgr = rng.integers(0, 5, n)
    category = mfgr * 5 + rng.integers(0, 5, n)
    brand = category * 40 + rng.integers(0, 40, n)
    columns = {
        "p_partkey": Column(T.INT32, data=keys),
        "p_name": S.concat(n, [S.word(name1, COLORS), S.literal(" "), S.word(name2, COLORS)]),
        "p_mfgr": S.dict_column(mfgr, MFGRS),
        "p_category": S.dict_column(category, CATEGORIES),
        "p_brand1": S.dict_column(brand, BRANDS),
        "p_color": S.dict_column(color, COLORS),
        "p_type": S.dict_column(rng.integers(0, len(TYPES), n), TYPES),
        "p_size": Column(T.INT32, data=rng.integers(1, 51, n).astype(np.int32)),
        "p_container": S.dict_column(rng.integers(0, len(CONTAINERS), n), CONTAINERS),
    }
    return Batch(columns, n)


def _party_columns(rng: np.random.Generator, prefix: str, label: str, start: int, stop: int
                   ) -> dict[str, Column]:
    """Columns shared by customer and supplier (key, name, address, city, nation, region, phone)."""
    n = stop - start
    keys = np.arange(start + 1, stop + 1, dtype=np.int32)
    nation = rng.integers(0, len(NATIONS), n)
    city = nation * 10 + rng.integers(0, 10, n)
    address = S.random_chars(rng, n, 6, 24)
    phone = rng.integers(0, 10_000_000_000, n)  # the 10 random digits ddd-ddd-dddd
    return {
        f"{prefix}key": Column(T.INT32, data=keys),
        f"{prefix[:2]}name": S.concat(n, [S.literal(f"{label}#"), S.digits(keys, 9)]),
        f"{prefix[:2]}address": S.concat(n, [address]),
        f"{prefix[:2]}city": S.dict_column(city, CITIES),
        f"{prefix[:2]}nation": S.dict_column(nation, NATIONS),
        f"{prefix[:2]}region": S.dict_column(NATION_REGION[nation], REGIONS),
        f"{prefix[:2]}phone": S.concat(n, [
            S.digits(nation + 10, 2), S.literal("-"), S.digits(phone // 10_000_000, 3), S.literal("-"),
            S.digits(phone // 10_000 % 1000, 3), S.literal("-"), S.digits(phone % 10_000, 4)]),
    }


def customer_batch(seed: int, chunk: int, start: int, stop: int) -> Batch:
    """Customers with keys start+1 … stop."""
    rng = rng_for(seed, TABLE_CUSTOMER, chunk)
    columns = _party_columns(rng, "c_cust", "Customer", start, stop)
    columns["c_mktsegment"] = S.dict_column(rng.integers(0, len(SEGMENTS), stop - start), SEGMENTS)
    return Batch(columns, stop - start)


def supplier_batch(seed: int, chunk: int, start: int, stop: int) -> Batch:
    """Suppliers with keys start+1 … stop."""
    rng = rng_for(seed, TABLE_SUPPLIER, chunk)
    return Batch(_party_columns(rng, "s_supp", "Supplier", start, stop), stop - start)
