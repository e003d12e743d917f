-- S3: substring match (expected fraction of rows kept ~4.4e-4)
select * from t where memo like '%abcd%';
