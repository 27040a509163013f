/*
 * The order-independent checksum of the rows of a binary COPY stream
 * (docs/shards.md, "Verification"): the row count and the sum, modulo
 * 2^64, of XXH64 of each row's bytes as COPY's binary format carries them
 * (field count, then each field's length and bytes; a NULL is length -1).
 * The mover sums the source's stream as it passes to the target, and the
 * target's rows read back the same way, so one read of each side verifies
 * a copy.  The stream is parsed whatever the chunks it comes in.
 */
#include <stdlib.h>
#include <string.h>

#include "chash_move.h"

enum
{
	RS_HEADER,					/* signature, flags, extension length */
	RS_EXTENSION,				/* the header extension, skipped */
	RS_TUPLE,					/* a row's field count, or the trailer */
	RS_LENGTH,					/* a field's length */
	RS_DATA,					/* a field's bytes */
	RS_END,						/* after the trailer: nothing more */
	RS_BAD
};

static const char signature[11] = "PGCOPY\n\377\r\n\0";

void
rowsum_init(RowSum *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum->state = RS_HEADER;
	sum->need = 19;
	sum->hash = xhash_state();
}

void
rowsum_free(RowSum *sum)
{
	if (sum->hash != NULL)
		XXH64_freeState(sum->hash);
	sum->hash = NULL;
}

static int32_t
int32_at(const unsigned char *p)
{
	return (int32_t) (((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3]);
}

/* A fixed-size piece (header, count, length) is complete in sum->part: what follows it. */
static void
piece_done(RowSum *sum)
{
	const unsigned char *p = sum->part;

	switch (sum->state)
	{
		case RS_HEADER:
			if (memcmp(p, signature, sizeof(signature)) != 0 || int32_at(p + 15) < 0)
			{
				sum->state = RS_BAD;
				return;
			}
			sum->left = int32_at(p + 15);
			sum->state = sum->left > 0 ? RS_EXTENSION : RS_TUPLE;
			sum->need = 2;
			return;
		case RS_TUPLE:
			{
				int16_t		fields = (int16_t) ((p[0] << 8) | p[1]);

				if (fields == -1)
				{
					sum->state = RS_END;
					return;
				}
				if (fields < 0)
				{
					sum->state = RS_BAD;
					return;
				}
				XXH64_reset(sum->hash, 0);
				XXH64_update(sum->hash, p, 2);
				sum->fields = fields;
				break;
			}
		case RS_LENGTH:
			{
				int32_t		len = int32_at(p);

				XXH64_update(sum->hash, p, 4);
				if (len < -1)
				{
					sum->state = RS_BAD;
					return;
				}
				sum->fields--;
				if (len > 0)
				{
					sum->left = len;
					sum->state = RS_DATA;
					return;
				}
				break;
			}
		default:
			sum->state = RS_BAD;
			return;
	}
	/* the next field's length, or the row is whole */
	if (sum->fields > 0)
	{
		sum->state = RS_LENGTH;
		sum->need = 4;
		return;
	}
	sum->rows++;
	sum->sum += XXH64_digest(sum->hash);
	sum->state = RS_TUPLE;
	sum->need = 2;
}

void
rowsum_feed(RowSum *sum, const char *data, size_t n)
{
	const unsigned char *p = (const unsigned char *) data;

	while (n > 0 && sum->state != RS_BAD)
	{
		if (sum->state == RS_END)
		{
			sum->state = RS_BAD;	/* bytes after the trailer */
			break;
		}
		if (sum->state == RS_EXTENSION || sum->state == RS_DATA)
		{
			size_t		take = (size_t) sum->left < n ? (size_t) sum->left : n;

			if (sum->state == RS_DATA)
				XXH64_update(sum->hash, p, take);
			p += take;
			n -= take;
			sum->left -= take;
			if (sum->left == 0)
			{
				if (sum->state == RS_EXTENSION)
					sum->state = RS_TUPLE;
				else if (sum->fields > 0)
					sum->state = RS_LENGTH;
				else
				{
					sum->rows++;
					sum->sum += XXH64_digest(sum->hash);
					sum->state = RS_TUPLE;
				}
				sum->need = sum->state == RS_LENGTH ? 4 : 2;
			}
			continue;
		}
		/* a fixed-size piece, perhaps split across chunks */
		{
			size_t		take = sum->need - sum->have < n ? sum->need - sum->have : n;

			memcpy(sum->part + sum->have, p, take);
			sum->have += take;
			p += take;
			n -= take;
			if (sum->have == sum->need)
			{
				sum->have = 0;
				piece_done(sum);
			}
		}
	}
}

/* The stream ended: true when it was whole (its trailer seen), nothing cut. */
bool
rowsum_whole(const RowSum *sum)
{
	return sum->state == RS_END;
}
