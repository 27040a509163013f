/*
 * chash.c - the argument checks and helpers every function shares (the
 * module's magic, settings and hooks are module.c's)
 */
#include "chash.h"

#include <math.h>
#include <stdarg.h>

#include "catalog/pg_type.h"
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>

#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/guc.h"
#include "utils/builtins.h"

#include "redis_slot.h"
#include "sort.h"

/*
 * MD5 comes from OpenSSL, the library the server itself is built with for
 * its own MD5.  We call it directly rather than through pg_md5_binary(),
 * which creates an EVP context and looks the algorithm up again for every
 * digest (250 ns for a short key), and we use the plain MD5_* calls rather
 * than EVP even with a reused context (100 ns against 72 ns): ketama hashes
 * every key, and this is most of its cost.  OpenSSL 3 marks these calls
 * deprecated in favour of EVP, hence the define; they remain supported.
 */
void
chash_server_md5(const void *data, size_t len, uint8_t out[16])
{
	MD5_CTX		ctx;

	if (MD5_Init(&ctx) != 1 || MD5_Update(&ctx, data, len) != 1 ||
		MD5_Final(out, &ctx) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute MD5 digest")));
}

void
chash_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

hasher64
chash_hasher_from_text(text *name)
{
	hasher64 hasher;

	if (hash_family_parse(CHASH_TEXT_DATA(name), CHASH_TEXT_LEN(name),
								&hasher.family) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized hash family \"%.*s\"",
						chash_quote_len(CHASH_TEXT_DATA(name), CHASH_TEXT_LEN(name)),
						CHASH_TEXT_DATA(name)),
				 errhint("Valid hash families are \"xxh64\" and \"md5\".")));
	hasher.md5 = chash_server_md5;
	return hasher;
}

void
chash_report_below_one(int32 value, const char *argname)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must be at least 1", argname),
			 errdetail("The value given was %d.", value)));
}

static void
check_one_dimension(ArrayType *arr, const char *argname)
{
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a one-dimensional array", argname)));
}

/* Orders node indexes by name bytes, to find duplicates in n log n. */
static int
compare_node_index(const void *ctx, int32_t i, int32_t j)
{
	const ChashNodeList *sort_list = ctx;
	int			li = sort_list->lengths[i];
	int			lj = sort_list->lengths[j];
	int			c = memcmp(sort_list->names[i], sort_list->names[j], Min(li, lj));

	if (c != 0)
		return c;
	return (li > lj) - (li < lj);
}

void
chash_node_list_from_array(ArrayType *arr, const char *argname, ChashNodeList *list)
{
	Datum	   *elems;
	bool	   *nulls;
	int			count;
	int32	   *order;

	check_one_dimension(arr, argname);
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &count);
	if (count == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", argname)));

	list->count = count;
	list->names = palloc(sizeof(char *) * count);
	list->lengths = palloc(sizeof(int) * count);
	order = palloc(sizeof(int32) * count);
	for (int i = 0; i < count; i++)
	{
		text	   *t;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain null elements", argname),
					 errdetail("Element %d is null.", i + 1)));
		/* Elements of a deconstructed array are never compressed or external. */
		t = (text *) PG_DETOAST_DATUM_PACKED(elems[i]);
		list->names[i] = CHASH_TEXT_DATA(t);
		list->lengths[i] = CHASH_TEXT_LEN(t);
		order[i] = i;
	}

	sort_indexes(order, count, compare_node_index, list, chash_check_interrupts);
	for (int i = 1; i < count; i++)
	{
		if (compare_node_index(list, order[i - 1], order[i]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not contain duplicates", argname),
					 errdetail("\"%.*s\" appears more than once.",
							   chash_quote_len(list->names[order[i]], list->lengths[order[i]]),
							   list->names[order[i]])));
	}
	pfree(order);
	pfree(elems);
	pfree(nulls);
}

double *
chash_weights_from_array(ArrayType *arr, int count)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	double	   *weights;
	bool		any_positive = false;

	check_one_dimension(arr, "weights");
	deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, &n);
	if (n != count)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("weights must have one element per node"),
				 errdetail("There are %d nodes and %d weights.", count, n)));

	weights = palloc(sizeof(double) * count);
	for (int i = 0; i < count; i++)
	{
		double		w;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("weights must not contain null elements"),
					 errdetail("Element %d is null.", i + 1)));
		w = DatumGetFloat8(elems[i]);
		if (isnan(w) || isinf(w) || w < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("weight %g of node %d is invalid", w, i + 1),
					 errdetail("Weights must be finite and not negative.")));
		if (w > 0)
			any_positive = true;
		weights[i] = w;
	}
	if (!any_positive)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("at least one weight must be positive")));
	pfree(elems);
	pfree(nulls);
	return weights;
}

int
chash_quote_len(const char *data, size_t len)
{
	if (len <= CHASH_QUOTE_MAX)
		return (int) len;
	return pg_mbcliplen(data, (int) Min(len, (size_t) CHASH_QUOTE_MAX * 4), CHASH_QUOTE_MAX);
}

int
chash_pin_search_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

PG_FUNCTION_INFO_V1(chash_message_text);

/* SQL's view of chash_quote_len, for the messages of plpgsql functions. */
Datum
chash_message_text(PG_FUNCTION_ARGS)
{
	text	   *value = PG_GETARG_TEXT_PP(0);
	int			len = chash_quote_len(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));

	if (len == VARSIZE_ANY_EXHDR(value))
		PG_RETURN_TEXT_P(value);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(VARDATA_ANY(value), len));
}

void
chash_require_args(FunctionCallInfo fcinfo,...)
{
	va_list		names;
	const char *name;

	va_start(names, fcinfo);
	for (int i = 0; (name = va_arg(names, const char *)) != NULL; i++)
		if (PG_ARGISNULL(i))
		{
			va_end(names);
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not be null", name)));
		}
	va_end(names);
}

slot_method
chash_layout_from_args(int32 slot_count, text *method_name)
{
	const char *name = VARDATA_ANY(method_name);
	size_t		len = VARSIZE_ANY_EXHDR(method_name);
	slot_method method = SLOT_METHOD_XXH64;
	layout_status status = directory_layout_check(slot_count, name, len, &method);

	if (status == LAYOUT_SLOT_COUNT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slot_count must be between 1 and %d", DIRECTORY_MAX_SLOTS),
				 errdetail("The value given was %d.", slot_count)));
	if (status == LAYOUT_METHOD)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized slot method \"%.*s\"", chash_quote_len(name, len), name),
				 errhint("Valid slot methods are \"xxh64\", \"jump\", \"redis\" and \"pg_hash\".")));
	if (status == LAYOUT_REDIS_SLOTS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("slot method \"redis\" needs slot_count %d", REDIS_CLUSTER_SLOTS),
				 errdetail("The value given was %d.", slot_count)));
	return method;
}

void
chash_require_superuser(const char *what)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s", what),
				 errdetail("Only a superuser may join a directory or leave it.")));
}
