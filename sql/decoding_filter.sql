-- The decoding filter of output plugin 'chash' (docs/shards.md, "Online
-- moves of every slot method"): what chash_decoding_filter_create records
-- for a logical slot.  The plugin itself, decoding through a
-- subscription, is in t/155_decoding_filter.pl (it needs wal_level logical).

\i sql/include/bad.sql

SELECT chash_create_directory('dec', ARRAY['s1', 's2'], 64, key_type => 'bigint');
CREATE TABLE dec_rows (tenant_id bigint, id int, PRIMARY KEY (tenant_id, id));
SELECT chash_add_table('dec', 'public.dec_rows', 'tenant_id');
SELECT chash_add_table('dec', 'public.not_here', 'tenant_id');   -- no such table in this database
SELECT chash_pin('dec', '7', 's2');
SELECT chash_slot('dec', '7') AS pinned_slot \gset

-- slots and tenants, canonical; the slots' pinned tenants are excepted;
-- only the registered tables present here, with their tenant columns
SELECT chash_decoding_filter_create('chash_move_1', 'dec', ARRAY[0, :pinned_slot], ARRAY['+0012']);
SELECT slot_name, directory, slot_count, slot_method, key_type, slots = ARRAY[0, :pinned_slot] AS slots,
       tenants, except_tenants, tables = ARRAY['dec_rows'::regclass::oid] AS tables, tenant_columns
  FROM chash_decoding_filter;
-- a tenant named in the filter is not excepted although pinned
SELECT chash_decoding_filter_create('chash_move_1', 'dec', ARRAY[:pinned_slot], ARRAY['7']);
SELECT tenants, except_tenants FROM chash_decoding_filter;
-- registered again: replaced
SELECT chash_decoding_filter_create('chash_move_1', 'dec', tenants => ARRAY['5']);
SELECT slots, tenants, except_tenants FROM chash_decoding_filter;
SELECT relname, reloptions FROM pg_class WHERE relname = 'chash_decoding_filter';

SELECT bad($$SELECT chash_decoding_filter_create('chash_move_2', 'dec')$$);
SELECT bad($$SELECT chash_decoding_filter_create('chash_move_2', 'nope', ARRAY[1])$$);
SELECT bad($$SELECT chash_decoding_filter_create('chash_move_2', 'dec', ARRAY[64])$$);
SELECT bad($$SELECT chash_decoding_filter_create('chash_move_2', 'dec', ARRAY[1, NULL])$$);
SELECT bad($$SELECT chash_decoding_filter_create('chash_move_2', 'dec', tenants => ARRAY['x'])$$);

SELECT chash_decoding_filter_drop('chash_move_1');
SELECT chash_decoding_filter_drop('chash_move_1');
SELECT count(*) FROM chash_decoding_filter;

DROP TABLE dec_rows;
SELECT chash_drop_directory('dec');
