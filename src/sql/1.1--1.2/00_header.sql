-- chash 1.1 -> 1.2 upgrade script, assembled from src/sql/1.1--1.2/*.sql
-- in name order.  chash--1.0.sql and the sources of chash--1.0--1.1.sql
-- (src/sql/1.0--1.1/) are frozen as released; a fresh install of 1.2 runs
-- 1.0, then 1.0 -> 1.1, then this script, and t/003_upgrade.pl checks that
-- updating a used 1.0 or 1.1 database gives the catalog of a fresh install.

\echo Use "ALTER EXTENSION chash UPDATE TO '1.2'" to load this file. \quit
