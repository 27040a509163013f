-- chash 1.0 -> 1.1 upgrade script, assembled from src/sql/1.0--1.1/*.sql
-- in name order.  chash--1.0.sql is frozen as released; a fresh install
-- of 1.1 runs it and then this script (as contrib's extensions do), and
-- t/003_upgrade.pl checks that ALTER EXTENSION chash UPDATE from a used
-- 1.0 database gives the catalog of a fresh install.

\echo Use "ALTER EXTENSION chash UPDATE TO '1.1'" to load this file. \quit
