/*
 * directory_rows.c - reading and checking rows of the directory tables,
 * shared by the full load (directory_load.c) and the catch-up
 * (directory_apply.c): shard names to indexes, tenants in canonical form,
 * the steps of a migration in flight, the step index (directory_rows.h)
 *
 * Every value is checked before it is used; a bad row is 55000, naming
 * the directory and the row (directory_load.c says why).
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "directory_rows.h"

/* 55000 for a row of table that routing cannot use. */
void
directory_bad_row(const char *name, int name_len, const char *table, char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("directory \"%.*s\" has an invalid row in table \"%s\"",
					chash_quote_len(name, name_len), name, table),
			 errdetail_internal("%s", detail),
			 errhint("Correct or delete the row; routing through the directory fails until then.")));
}

/* A quoted piece of user text for a detail message. */
char *
directory_quoted(text *t)
{
	const char *s = VARDATA_ANY(t);
	size_t		len = VARSIZE_ANY_EXHDR(t);

	return psprintf("\"%.*s\"", chash_quote_len(s, len), s);
}

bool
directory_text_is(text *t, const char *s)
{
	size_t		len = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

int
directory_row_state(text *value, state_kind kind)
{
	if (value == NULL)
		return -1;
	return state_parse(kind, VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
}

char *
directory_state_list(state_kind kind)
{
	StringInfoData list;
	int			count = state_count(kind);

	initStringInfo(&list);
	for (int i = 0; i < count; i++)
		appendStringInfo(&list, "%s%s", i == 0 ? "" : i == count - 1 ? " or " : ", ",
						 state_name(kind, i));
	return list.data;
}

/* A key "column = name" on a text column. */
void
directory_name_key(ScanKeyData *key, Relation rel, AttrNumber attnum, text *name)
{
	ScanKeyEntryInitialize(key, 0, attnum, BTEqualStrategyNumber, InvalidOid,
						   TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attcollation,
						   F_TEXTEQ, PointerGetDatum(name));
}

/* The index of a shard named in a row; -1 when it is null or unknown. */
int32
directory_loader_shard_index(DirectoryLoader *loader, text *shard)
{
	if (shard == NULL)
		return -1;
	return shard_names_find(&loader->shard_names, VARDATA_ANY(shard), VARSIZE_ANY_EXHDR(shard));
}

/* The 55000 for a row whose shard shard_index() refused. */
void
directory_loader_bad_shard(DirectoryLoader *loader, const char *table, char *row_desc, text *shard)
{
	if (shard == NULL)
		BAD_ROW(loader, table, "%s has a null shard.", row_desc);
	BAD_ROW(loader, table, "%s names shard %s, which is not a shard of the directory.",
			row_desc, directory_quoted(shard));
}

/* A tenant of a row: not null and in the key type's canonical form. */
text *
directory_loader_tenant(DirectoryLoader *loader, text *tenant, const char *table, const char *row_desc)
{
	if (tenant == NULL)
		BAD_ROW(loader, table, "%s has a null tenant.", row_desc);
	if (!tenant_is_canonical(loader->dir->ktype, VARDATA_ANY(tenant), VARSIZE_ANY_EXHDR(tenant)))
		BAD_ROW(loader, table, "%s has tenant %s, which is not a canonical %s.",
				row_desc, directory_quoted(tenant), key_type_name(loader->dir->ktype));
	return tenant;
}

void
directory_loader_map_shards(DirectoryLoader *loader)
{
	RouteDirectory *dir = loader->dir;
	size_t		capacity = shard_names_capacity(dir->nshards);

	shard_names_init(&loader->shard_names, palloc0(sizeof(tenant_map_entry) * capacity), capacity);
	for (int i = 0; i < dir->nshards; i++)
	{
		text	   *n = dir->shards[i].name;

		CHECK_FOR_INTERRUPTS();
		if (!shard_names_add(&loader->shard_names, VARDATA(n), VARSIZE(n) - VARHDRSZ, i))
			BAD_ROW(loader, directory_table_names[T_SHARD], "Shard %s appears more than once.", directory_quoted(n));
	}
}

/*
 * Reads the steps of one running migration (or its step only_step, when
 * not 0); keeps those in flight, appending to refs and dir->steps.
 */
void
directory_load_migration_steps(DirectoryLoader *loader, Relation rel, int64 migration,
							   int32 only_step, step_ref **refs, int *count, int *capacity)
{
	RouteDirectory *dir = loader->dir;
	TupleDesc	desc = RelationGetDescr(rel);
	const char *table = directory_table_names[T_STEP];
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key[0], COLUMN(loader, C_STEP_MIGRATION), BTEqualStrategyNumber, F_INT8EQ,
				Int64GetDatum(migration));
	ScanKeyInit(&key[1], COLUMN(loader, C_STEP_STEP), BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(only_step));
	/* all steps of a migration: only those in flight, when an index has them */
	if (only_step == 0 && OidIsValid(loader->catalog->step_in_flight))
		scan = systable_beginscan(rel, loader->catalog->step_in_flight, true, loader->snapshot, 1, key);
	else
		scan = systable_beginscan(rel, loader->catalog->indexes[T_STEP], true, loader->snapshot,
								  only_step != 0 ? 2 : 1, key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		text	   *state_text = directory_row_text(tuple, desc, COLUMN(loader, C_STEP_STATE));
		int			state;
		bool		step_null;
		bool		slot_null;
		Datum		step_d = directory_row_value(tuple, desc, COLUMN(loader, C_STEP_STEP), &step_null);
		Datum		slot_d = directory_row_value(tuple, desc, COLUMN(loader, C_STEP_SLOT), &slot_null);
		text	   *tenant = directory_row_text(tuple, desc, COLUMN(loader, C_STEP_TENANT));
		text	   *to_shard;
		int32		step;
		char	   *row_desc;
		step_ref   *r;
		RouteStep  *s;

		CHECK_FOR_INTERRUPTS();
		if (step_null)
			BAD_ROW(loader, table, "A step of migration " INT64_FORMAT " has a null step number.",
					migration);
		step = DatumGetInt32(step_d);
		state = directory_row_state(state_text, STATE_STEP);
		if (state < 0)
			BAD_ROW(loader, table,
					"Step %d of migration " INT64_FORMAT " has state %s; it must be %s.",
					step, migration, state_text ? directory_quoted(state_text) : "null",
					directory_state_list(STATE_STEP));
		if (state != STEP_COPYING && state != STEP_FENCED)
			continue;

		row_desc = psprintf("Step %d of migration " INT64_FORMAT, step, migration);
		if (slot_null == (tenant == NULL))
			BAD_ROW(loader, table, "%s must have either a slot or a tenant.", row_desc);
		if (*count == *capacity)
		{
			*capacity *= 2;
			*refs = repalloc_huge(*refs, sizeof(step_ref) * *capacity);
			dir->steps = repalloc_huge(dir->steps, sizeof(RouteStep) * *capacity);
		}
		r = &(*refs)[*count];
		s = &dir->steps[*count];
		memset(r, 0, sizeof(*r));
		r->migration = s->migration = migration;
		r->step = s->step = step;
		r->value = *count;
		if (!slot_null)
		{
			r->slot = DatumGetInt32(slot_d);
			if (r->slot < 0 || r->slot >= dir->slot_count)
				BAD_ROW(loader, table, "%s moves slot %d; the directory's slots are 0 .. %d.",
						row_desc, r->slot, dir->slot_count - 1);
		}
		else
		{
			directory_loader_tenant(loader, tenant, table, row_desc);
			r->slot = -1;
			r->tenant_len = VARSIZE_ANY_EXHDR(tenant);
			r->tenant = memcpy(palloc(r->tenant_len + 1), VARDATA_ANY(tenant), r->tenant_len);
			r->tenant_hash = xxh64_hash(r->tenant, r->tenant_len, 0);
		}
		s->slot = r->slot;
		s->fenced = state == STEP_FENCED;
		to_shard = directory_row_text(tuple, desc, COLUMN(loader, C_STEP_TO_SHARD));
		s->to_shard = directory_loader_shard_index(loader, to_shard);
		if (s->to_shard < 0)
			directory_loader_bad_shard(loader, table, row_desc, to_shard);
		pfree(row_desc);
		(*count)++;
	}
	systable_endscan(scan);
}

void
directory_index_steps(DirectoryLoader *loader, step_ref *refs, int count)
{
	RouteDirectory *dir = loader->dir;
	step_ref   *sorted;
	step_sort	sort;
	size_t		ntenants;
	size_t		map_capacity;
	size_t		words;

	/* Sorted in pieces: there are as many steps as the table holds. */
	step_sort_begin(&sort, refs, palloc(sizeof(step_ref) * Max(count, 1)), count);
	do
		CHECK_FOR_INTERRUPTS();
	while (!step_sort_continue(&sort, LOAD_PIECE));
	sorted = step_sort_result(&sort);

	ntenants = step_index_tenant_steps(sorted, count);
	map_capacity = tenant_map_capacity(ntenants);
	words = tenant_map_filter_words(ntenants);
	step_index_init(&dir->step_index, sorted, count,
					palloc0(sizeof(tenant_map_entry) * map_capacity), map_capacity,
					palloc0(sizeof(uint64) * words), words);
	for (size_t from = 0; from < ntenants; from += LOAD_PIECE)
	{
		CHECK_FOR_INTERRUPTS();
		(void) step_index_add_tenants(&dir->step_index, from, Min(from + LOAD_PIECE, ntenants));
	}
}
