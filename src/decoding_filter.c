/*
 * decoding_filter.c - chash as a logical decoding output plugin: pgoutput's
 * stream with only the rows of a batch's slots or tenants (docs/shards.md,
 * "Online moves of every slot method")
 *
 * A logical slot created with plugin 'chash' (this library) decodes with
 * pgoutput's callbacks, so a subscription reads it like any pgoutput slot,
 * but its changes pass through a filter first: a row passes when its
 * tenant is one of the filter's tenants, or its slot (computed as
 * chash_tenant_slot does, for the directory's slot count, method and key
 * type) is one of the filter's slots and the tenant is not pinned
 * elsewhere.  Subscriptions send only pgoutput's options, so the filter is
 * found on the server: the row of chash_decoding_filter named like the
 * slot, a user catalog table read under decoding's historic snapshot
 * (registered before the slot is created, so every change decoded sees it).
 *
 * An UPDATE whose tenant enters the filter becomes an INSERT of the new
 * row, one whose tenant leaves it a DELETE of the old row: the target ends
 * with exactly the filtered rows.  TRUNCATE never passes (it would empty
 * the target's other tenants too).
 *
 * The tally (option tally = a filter's name, through
 * pg_logical_slot_get_changes on a copy of the subscription's slot): no
 * pgoutput stream but a text line for each change the filter passes,
 * "I|U|D <registered table's oid> <key>", the key the row's replica
 * identity columns as a JSON object ("-" when the relation has no
 * identity index); option except_xid leaves out one transaction's (on
 * the target: the mover's copy).  The mover learns from it which rows
 * changed since the copy on either shard, so that the write block
 * verifies only those (docs/shards.md, "The write block").
 */
#include "chash.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_extension.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "replication/logical.h"
#include "replication/output_plugin.h"
#include "replication/reorderbuffer.h"
#include "replication/slot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/uuid.h"

#include "directory.h"
#include "tenant_key.h"

#define FILTER_TABLE "chash_decoding_filter"

/* chash_decoding_filter's columns */
enum
{
	F_SLOT_NAME = 1,
	F_DIRECTORY,
	F_SLOT_COUNT,
	F_SLOT_METHOD,
	F_KEY_TYPE,
	F_SLOTS,
	F_TENANTS,
	F_EXCEPT,
	F_TABLES,
	F_TENANT_COLUMNS,
	F_NCOLUMNS = F_TENANT_COLUMNS
};

typedef struct FilterTable
{
	Oid			relid;			/* a registered table */
	char	   *tenant_column;
} FilterTable;

/* The tenant column of a relation that changes (a registered table or a partition of one). */
typedef struct FilterRelation
{
	Oid			relid;
	AttrNumber	attnum;			/* 0: not a registered table, nothing passes */
	TenantColumn column;		/* its values as canonical tenant text, as the guard reads them */
	Oid			registered;		/* the registered table (itself or an ancestor) */
	int			nkeys;			/* its replica identity columns, for the tally */
	AttrNumber *keys;
	FmgrInfo   *key_output;
} FilterRelation;

typedef struct Filter
{
	NameData	slot_name;
	char	   *directory;
	int32		slot_count;
	slot_method method;
	key_type	ktype;
	bool	   *slots;			/* slot_count entries */
	char	  **tenants;		/* sorted canonical texts */
	int			ntenants;
	char	  **except;			/* pinned tenants of the slots: sorted */
	int			nexcept;
	FilterTable *tables;
	int			ntables;
	FilterRelation *relations;
	int			nrelations;
} Filter;

static LogicalDecodeStartupCB pgoutput_startup;
static LogicalDecodeBeginCB pgoutput_begin;
static LogicalDecodeChangeCB pgoutput_change;
static LogicalDecodeCommitCB pgoutput_commit;
static LogicalDecodeMessageCB pgoutput_message;
static LogicalDecodeShutdownCB pgoutput_shutdown;
static LogicalDecodeStreamChangeCB pgoutput_stream_change;

static MemoryContext filter_context = NULL;
static Filter *filter = NULL;

/* this decoding session's filter (the slot's name, or the tally's), and whether it tallies */
static NameData filter_name;
static bool tally_mode = false;
static TransactionId tally_except = InvalidTransactionId;
static MemoryContext tally_context = NULL;

extern PGDLLEXPORT void _PG_output_plugin_init(OutputPluginCallbacks *cb);

static int
compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static bool
string_listed(char **list, int n, const char *s)
{
	return n > 0 && bsearch(&s, list, n, sizeof(char *), compare_strings) != NULL;
}

/* A text[] column as a sorted array of C strings. */
static char **
sorted_texts(Datum array, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **out;
	int			count = 0;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, n);
	out = palloc(sizeof(char *) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		if (!nulls[i])
			out[count++] = TextDatumGetCString(elems[i]);
	*n = count;
	qsort(out, count, sizeof(char *), compare_strings);
	return out;
}

static Datum
required_column(HeapTuple tuple, TupleDesc desc, int attnum, const char *what)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attnum, desc, &isnull);

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the decoding filter of slot \"%s\" has no %s",
						NameStr(MyReplicationSlot->data.name), what)));
	return d;
}

/* The schema of extension chash (get_extension_schema is not exported in 15). */
static Oid
chash_schema(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("chash"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}

/*
 * The filter of this slot, read from chash_decoding_filter under the
 * historic snapshot (decoding sets it as the catalog snapshot).
 */
static Filter *
filter_load(void)
{
	const char *slot_name = NameStr(filter_name);
	Oid			schema = chash_schema();
	Oid			relid = OidIsValid(schema) ? get_relname_relid(FILTER_TABLE, schema) : InvalidOid;
	Relation	rel;
	TupleDesc	desc;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;
	Filter	   *f;
	MemoryContext old;
	Datum		d;
	bool		isnull;
	char	   *name;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"chash\" is not installed in database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errdetail("Logical slot \"%s\" decodes with plugin \"chash\", which needs its decoding filter.",
						   slot_name)));
	if (filter_context == NULL)
		filter_context = AllocSetContextCreate(TopMemoryContext, "chash decoding filter",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(filter_context);
	old = MemoryContextSwitchTo(filter_context);

	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	if (desc->natts < F_NCOLUMNS)
		elog(ERROR, "table \"%s\" has %d columns, expected %d", FILTER_TABLE, desc->natts, F_NCOLUMNS);
	ScanKeyInit(&key, F_SLOT_NAME, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(slot_name));
	key.sk_collation = C_COLLATION_OID;
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("logical slot \"%s\" has no decoding filter", slot_name),
				 errdetail("Plugin \"chash\" passes only the rows of the filter registered under the slot's name."),
				 errhint("Register it with chash_decoding_filter_create() before creating the slot.")));

	f = palloc0(sizeof(Filter));
	namestrcpy(&f->slot_name, slot_name);
	f->directory = TextDatumGetCString(required_column(tuple, desc, F_DIRECTORY, "directory"));
	f->slot_count = DatumGetInt32(required_column(tuple, desc, F_SLOT_COUNT, "slot count"));
	name = TextDatumGetCString(required_column(tuple, desc, F_SLOT_METHOD, "slot method"));
	if (directory_layout_check(f->slot_count, name, strlen(name), &f->method) != LAYOUT_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the decoding filter of slot \"%s\" has an invalid layout", slot_name),
				 errdetail("Slot count %d, slot method \"%s\".", f->slot_count, name)));
	name = TextDatumGetCString(required_column(tuple, desc, F_KEY_TYPE, "key type"));
	if (key_type_parse(name, strlen(name), &f->ktype) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the decoding filter of slot \"%s\" has an invalid key type \"%s\"", slot_name, name)));

	f->slots = palloc0(sizeof(bool) * f->slot_count);
	d = heap_getattr(tuple, F_SLOTS, desc, &isnull);
	if (!isnull)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			int32		s = DatumGetInt32(elems[i]);

			if (!nulls[i] && s >= 0 && s < f->slot_count)
				f->slots[s] = true;
		}
	}
	d = heap_getattr(tuple, F_TENANTS, desc, &isnull);
	if (!isnull)
		f->tenants = sorted_texts(d, &f->ntenants);
	d = heap_getattr(tuple, F_EXCEPT, desc, &isnull);
	if (!isnull)
		f->except = sorted_texts(d, &f->nexcept);
	{
		Datum	   *rels;
		Datum	   *cols;
		bool	   *nulls;
		int			nrels;
		int			ncols;

		deconstruct_array(DatumGetArrayTypeP(required_column(tuple, desc, F_TABLES, "tables")),
						  OIDOID, sizeof(Oid), true, TYPALIGN_INT, &rels, &nulls, &nrels);
		deconstruct_array(DatumGetArrayTypeP(required_column(tuple, desc, F_TENANT_COLUMNS, "tenant columns")),
						  TEXTOID, -1, false, TYPALIGN_INT, &cols, &nulls, &ncols);
		if (nrels != ncols)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the decoding filter of slot \"%s\" has %d tables and %d tenant columns",
							slot_name, nrels, ncols)));
		f->tables = palloc(sizeof(FilterTable) * Max(nrels, 1));
		for (int i = 0; i < nrels; i++)
		{
			f->tables[i].relid = DatumGetObjectId(rels[i]);
			f->tables[i].tenant_column = TextDatumGetCString(cols[i]);
		}
		f->ntables = nrels;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	MemoryContextSwitchTo(old);
	return f;
}

/* The registered table a relation belongs to (itself or an ancestor). */
static FilterTable *
registered_table(Filter *f, Oid relid, bool is_partition)
{
	List	   *ancestors;
	ListCell   *lc;

	for (int i = 0; i < f->ntables; i++)
		if (f->tables[i].relid == relid)
			return &f->tables[i];
	if (!is_partition)
		return NULL;
	ancestors = get_partition_ancestors(relid);
	foreach(lc, ancestors)
		for (int i = 0; i < f->ntables; i++)
			if (f->tables[i].relid == lfirst_oid(lc))
				return &f->tables[i];
	return NULL;
}

static FilterRelation *
filter_relation(Filter *f, Relation relation)
{
	Oid			relid = RelationGetRelid(relation);
	FilterRelation *r;
	FilterTable *t;
	MemoryContext old;

	for (int i = 0; i < f->nrelations; i++)
		if (f->relations[i].relid == relid)
			return &f->relations[i];
	old = MemoryContextSwitchTo(filter_context);
	f->relations = f->nrelations == 0 ? palloc(sizeof(FilterRelation)) :
		repalloc(f->relations, sizeof(FilterRelation) * (f->nrelations + 1));
	r = &f->relations[f->nrelations++];
	memset(r, 0, sizeof(*r));
	r->relid = relid;
	t = registered_table(f, relid, relation->rd_rel->relispartition);
	if (t != NULL)
	{
		Bitmapset  *identity = RelationGetIndexAttrBitmap(relation, INDEX_ATTR_BITMAP_IDENTITY_KEY);
		int			k = -1;

		r->registered = t->relid;
		r->keys = palloc(sizeof(AttrNumber) * Max(bms_num_members(identity), 1));
		r->key_output = palloc(sizeof(FmgrInfo) * Max(bms_num_members(identity), 1));
		while ((k = bms_next_member(identity, k)) >= 0)
		{
			AttrNumber	attnum = k + FirstLowInvalidHeapAttributeNumber;
			Oid			output;
			bool		varlena;

			getTypeOutputInfo(TupleDescAttr(RelationGetDescr(relation), attnum - 1)->atttypid, &output, &varlena);
			fmgr_info_cxt(output, &r->key_output[r->nkeys], filter_context);
			r->keys[r->nkeys++] = attnum;
		}
		r->attnum = get_attnum(relid, t->tenant_column);
		if (r->attnum == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("tenant column \"%s\" of table \"%s\" does not exist",
							t->tenant_column, RelationGetRelationName(relation))));
		else
			tenant_column_init(&r->column, get_atttype(relid, r->attnum), filter_context);
	}
	MemoryContextSwitchTo(old);
	return r;
}

/* Whether a row's tenant is in the filter; a NULL or invalid one is not. */
static bool
row_passes(Filter *f, FilterRelation *r, Relation relation, ReorderBufferTupleBuf *buf)
{
	bool		isnull;
	Datum		value;
	const char *s;
	size_t		len;
	TenantKey	key;
	char	   *c;
	bool		in;

	if (r->attnum == 0 || buf == NULL)
		return false;
	value = heap_getattr(&buf->tuple, r->attnum, RelationGetDescr(relation), &isnull);
	if (isnull)
		return false;
	/* the guard's canonical text: char(n) without its padding, a domain as its base type */
	s = tenant_column_text(&r->column, value, &len);
	/* a value that is not a tenant of the key type is in no filter */
	if (tenant_key_init(&key, f->ktype, f->method, f->slot_count, s, len) != TENANT_OK)
		return false;
	c = pnstrdup(key.canonical.data, key.canonical.len);
	if (string_listed(f->tenants, f->ntenants, c))
		in = true;
	else
		in = f->slots[key.slot] && !string_listed(f->except, f->nexcept, c);
	pfree(c);
	return in;
}

/*
 * The change as the filter lets it through: NULL to drop it, else the
 * change itself or, for an UPDATE whose tenant enters or leaves the
 * filter, an INSERT of the new row or a DELETE of the old one in *copy.
 */
static ReorderBufferChange *
filter_change(Relation relation, ReorderBufferChange *change, ReorderBufferChange *copy)
{
	FilterRelation *r;
	bool		old_in;
	bool		new_in;

	if (filter == NULL || strcmp(NameStr(filter->slot_name), NameStr(filter_name)) != 0)
		filter = filter_load();
	r = filter_relation(filter, relation);
	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			return row_passes(filter, r, relation, change->data.tp.newtuple) ? change : NULL;
		case REORDER_BUFFER_CHANGE_DELETE:
			return row_passes(filter, r, relation, change->data.tp.oldtuple) ? change : NULL;
		case REORDER_BUFFER_CHANGE_UPDATE:
			new_in = row_passes(filter, r, relation, change->data.tp.newtuple);
			/* no old key: the key, and with it the tenant column, did not change */
			old_in = change->data.tp.oldtuple == NULL ? new_in :
				row_passes(filter, r, relation, change->data.tp.oldtuple);
			if (old_in == new_in)
				return new_in ? change : NULL;
			*copy = *change;
			if (new_in)
			{
				copy->action = REORDER_BUFFER_CHANGE_INSERT;
				copy->data.tp.oldtuple = NULL;
			}
			else
			{
				copy->action = REORDER_BUFFER_CHANGE_DELETE;
				copy->data.tp.newtuple = NULL;
			}
			return copy;
		default:
			return change;
	}
}

/*
 * A decoding session reads the filter anew (it may have been registered
 * again).  With option tally it writes text lines and pgoutput is never
 * called; without, every option is pgoutput's.
 */
static void
chash_decode_startup(LogicalDecodingContext *ctx, OutputPluginOptions *opt, bool is_init)
{
	ListCell   *lc;

	filter = NULL;
	tally_mode = false;
	tally_except = InvalidTransactionId;
	namestrcpy(&filter_name, NameStr(MyReplicationSlot->data.name));
	foreach(lc, ctx->output_plugin_options)
	{
		DefElem    *option = lfirst(lc);

		if (strcmp(option->defname, "tally") != 0)
			continue;
		if (option->arg == NULL || !IsA(option->arg, String))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"tally\" of plugin \"chash\" needs the name of a decoding filter")));
		tally_mode = true;
		namestrcpy(&filter_name, strVal(option->arg));
	}
	if (!tally_mode)
	{
		pgoutput_startup(ctx, opt, is_init);
		return;
	}
	foreach(lc, ctx->output_plugin_options)
	{
		DefElem    *option = lfirst(lc);
		char	   *end;

		if (strcmp(option->defname, "except_xid") == 0)
		{
			unsigned long xid = option->arg != NULL && IsA(option->arg, String)
				? strtoul(strVal(option->arg), &end, 10) : 0;

			if (option->arg == NULL || !IsA(option->arg, String) || *strVal(option->arg) == '\0' || *end != '\0'
				|| xid > PG_UINT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"except_xid\" of plugin \"chash\" needs a transaction id")));
			tally_except = (TransactionId) xid;
		}
		else if (strcmp(option->defname, "tally") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" of plugin \"chash\" cannot be used with option \"tally\"", option->defname)));
	}
	opt->output_type = OUTPUT_PLUGIN_TEXTUAL_OUTPUT;
	opt->receive_rewrites = false;
	/* whole transactions, committed ones only: the tally is of what the target will apply */
	ctx->streaming = false;
	ctx->twophase = false;
	tally_context = AllocSetContextCreate(ctx->context, "chash tally", ALLOCSET_SMALL_SIZES);
}

static void
chash_decode_begin(LogicalDecodingContext *ctx, ReorderBufferTXN *txn)
{
	if (!tally_mode)
		pgoutput_begin(ctx, txn);
}

static void
chash_decode_commit(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr commit_lsn)
{
	if (!tally_mode)
		pgoutput_commit(ctx, txn, commit_lsn);
}

static void
chash_decode_message(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, XLogRecPtr lsn, bool transactional,
					 const char *prefix, Size size, const char *message)
{
	if (!tally_mode)
		pgoutput_message(ctx, txn, lsn, transactional, prefix, size, message);
}

static void
chash_decode_shutdown(LogicalDecodingContext *ctx)
{
	if (!tally_mode)
		pgoutput_shutdown(ctx);
}

/* One line of the tally: the change's kind, its registered table, the row's key. */
static void
tally_line(LogicalDecodingContext *ctx, FilterRelation *r, Relation relation, char kind,
		   ReorderBufferTupleBuf *buf)
{
	MemoryContext old = MemoryContextSwitchTo(tally_context);

	OutputPluginPrepareWrite(ctx, true);
	appendStringInfo(ctx->out, "%c %u ", kind, r->registered);
	if (r->nkeys == 0 || buf == NULL)
		appendStringInfoChar(ctx->out, '-');
	else
	{
		appendStringInfoChar(ctx->out, '{');
		for (int i = 0; i < r->nkeys; i++)
		{
			bool		isnull;
			Datum		value = heap_getattr(&buf->tuple, r->keys[i], RelationGetDescr(relation), &isnull);

			if (i > 0)
				appendStringInfoChar(ctx->out, ',');
			escape_json(ctx->out, NameStr(TupleDescAttr(RelationGetDescr(relation), r->keys[i] - 1)->attname));
			appendStringInfoChar(ctx->out, ':');
			if (isnull)
				appendStringInfoString(ctx->out, "null");
			else
				escape_json(ctx->out, OutputFunctionCall(&r->key_output[i], value));
		}
		appendStringInfoChar(ctx->out, '}');
	}
	OutputPluginWrite(ctx, true);
	MemoryContextSwitchTo(old);
	MemoryContextReset(tally_context);
}

/* The tally of a change the filter passed: an UPDATE that changed the key is its old row's DELETE and its new row's INSERT. */
static void
tally_change(LogicalDecodingContext *ctx, Relation relation, ReorderBufferChange *change)
{
	FilterRelation *r = filter_relation(filter, relation);

	switch (change->action)
	{
		case REORDER_BUFFER_CHANGE_INSERT:
			tally_line(ctx, r, relation, 'I', change->data.tp.newtuple);
			break;
		case REORDER_BUFFER_CHANGE_UPDATE:
			if (change->data.tp.oldtuple != NULL)
			{
				tally_line(ctx, r, relation, 'D', change->data.tp.oldtuple);
				tally_line(ctx, r, relation, 'I', change->data.tp.newtuple);
			}
			else
				tally_line(ctx, r, relation, 'U', change->data.tp.newtuple);
			break;
		case REORDER_BUFFER_CHANGE_DELETE:
			tally_line(ctx, r, relation, 'D', change->data.tp.oldtuple);
			break;
		default:
			break;
	}
}

static void
chash_decode_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation relation,
					ReorderBufferChange *change)
{
	ReorderBufferChange copy;
	ReorderBufferChange *passed;

	/* the transaction the tally leaves out is not even filtered (the mover's copy: every row of the step) */
	if (tally_mode && TransactionIdIsValid(tally_except) && txn->xid == tally_except)
		return;
	passed = filter_change(relation, change, &copy);
	if (passed == NULL)
		return;
	if (tally_mode)
		tally_change(ctx, relation, passed);
	else
		pgoutput_change(ctx, txn, relation, passed);
}

static void
chash_decode_stream_change(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, Relation relation,
						   ReorderBufferChange *change)
{
	ReorderBufferChange copy;
	ReorderBufferChange *passed = filter_change(relation, change, &copy);

	if (passed != NULL)
		pgoutput_stream_change(ctx, txn, relation, passed);
}

/* TRUNCATE empties a table for every tenant: never passed on. */
static void
chash_decode_truncate(LogicalDecodingContext *ctx, ReorderBufferTXN *txn, int nrelations,
					  Relation relations[], ReorderBufferChange *change)
{
}

void
_PG_output_plugin_init(OutputPluginCallbacks *cb)
{
	LogicalOutputPluginInit pgoutput_init = (LogicalOutputPluginInit)
		load_external_function("pgoutput", "_PG_output_plugin_init", true, NULL);

	pgoutput_init(cb);
	pgoutput_startup = cb->startup_cb;
	pgoutput_begin = cb->begin_cb;
	pgoutput_change = cb->change_cb;
	pgoutput_commit = cb->commit_cb;
	pgoutput_message = cb->message_cb;
	pgoutput_shutdown = cb->shutdown_cb;
	pgoutput_stream_change = cb->stream_change_cb;
	cb->startup_cb = chash_decode_startup;
	cb->begin_cb = chash_decode_begin;
	cb->change_cb = chash_decode_change;
	cb->commit_cb = chash_decode_commit;
	cb->message_cb = chash_decode_message;
	cb->shutdown_cb = chash_decode_shutdown;
	cb->truncate_cb = chash_decode_truncate;
	if (cb->stream_change_cb != NULL)
		cb->stream_change_cb = chash_decode_stream_change;
	if (cb->stream_truncate_cb != NULL)
		cb->stream_truncate_cb = chash_decode_truncate;
}
