-- chash 1.0 install script, assembled from src/sql/*.sql in name order.

\echo Use "CREATE EXTENSION chash" to load this file. \quit
