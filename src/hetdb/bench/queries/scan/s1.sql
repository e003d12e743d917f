-- S1: simple predicate over two columns (expected fraction of rows kept ~4.0e-3)
select * from t where x between y - 2 and y + 2;
