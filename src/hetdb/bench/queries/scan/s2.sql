-- S2: arithmetic-heavy predicate (expected fraction of rows kept ~4.2e-6)
select * from t
where sqrt((x - 200) * (x - 200) + (y - 300) * (y - 300) + (z - 400) * (z - 400)) < 10;
