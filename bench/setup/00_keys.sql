-- 2,000,000 text keys and bigint keys shared by the placement cases.
DROP TABLE IF EXISTS bench_keys;
CREATE TABLE bench_keys AS
    SELECT 'tenant-' || i AS k, (i * 2654435761)::bigint AS n
    FROM generate_series(1, 2000000) AS i;
