/*
 * test_ketama.c - libketama's point counts in single precision, and the
 * continuum's points (the full comparison with libmemcached is in
 * tests/reference/ketama_libmemcached and sql/ketama.sql)
 */
#include <math.h>

#include "ketama.h"
#include "placement_helpers.h"
#include "unit.h"

static void
test_digest_counts(void)
{
	int			n7_double;

	/* 7 equal servers: 40 digests each in libketama's float arithmetic ... */
	CHECK_EQ_U64(ketama_digest_count(1, 7, 7), 40);
	/* ... where double arithmetic gives 39 (the contract's warning). */
	n7_double = (int) floor(1.0 / 7.0 * 40.0 * 7.0);
	CHECK_EQ_I64(n7_double, 39);
	/* libketama itself gives 39 for 61 equal servers (its float rounding). */
	CHECK_EQ_U64(ketama_digest_count(1, 61, 61), 39);
	CHECK_EQ_U64(ketama_digest_count(1, 4, 4), 40);
	/* Weights 1, 2, 3, 4: 16, 32, 48, 64 digests. */
	CHECK_EQ_U64(ketama_digest_count(1, 10, 4), 16);
	CHECK_EQ_U64(ketama_digest_count(4, 10, 4), 64);
	CHECK_EQ_U64(ketama_digest_count(0, 10, 4), 0);
}

/* Whole continua: sizes, and the empty one that lookups would read past. */
static void
test_continuum_sizes(void)
{
	uint32_t	digests[3];
	size_t		points = 0;
	double		w[3] = {1, 2, 3};
	/* Each below the smallest float (0 in single precision), their sum not. */
	double		tiny[2] = {5e-46, 5e-46};
	static uint32_t many[20000];

	CHECK(ketama_digest_counts(NULL, 3, 3, digests, &points) == KETAMA_OK);
	CHECK_EQ_U64(points, 3 * 160);
	CHECK(ketama_digest_counts(w, 6, 3, digests, &points) == KETAMA_OK);
	CHECK(digests[0] == 20 && digests[1] == 40 && digests[2] == 60);
	CHECK_EQ_U64(points, 480);
	CHECK((float) tiny[0] == 0 && (float) (tiny[0] + tiny[1]) > 0);
	CHECK(ketama_digest_counts(tiny, tiny[0] + tiny[1], 2, digests, &points) == KETAMA_NO_POINTS);
	/* 62,501 servers of 160 points exceed RING_MAX_POINTS. */
	CHECK(ketama_digest_counts(NULL, 20000, 20000, many, &points) == KETAMA_OK);
	CHECK_EQ_U64(points, 3200000);
	CHECK(RING_MAX_POINTS / 160 < 62501);
}

static void
test_points(void)
{
	test_nodes nodes;
	uint32_t	digests[2] = {40, 1};
	ring_point	points[164];
	char		scratch[64];
	uint8_t		d[16];

	make_nodes(&nodes, "10.0.0.", 1, 2);
	ketama_generate_points(unit_md5, nodes.names, nodes.lengths, 2, digests, scratch, points, NULL);
	/* Server 2's only digest is MD5("10.0.0.2-0"), four little-endian words. */
	unit_md5("10.0.0.2-0", 10, d);
	CHECK_EQ_U64(points[160].position, (uint32_t) d[0] | (uint32_t) d[1] << 8 |
				 (uint32_t) d[2] << 16 | (uint32_t) d[3] << 24);
	CHECK_EQ_U64(points[163].position, ketama_word(d, 3));
	CHECK(points[163].node == 1 && points[163].vnode == 3);
	unit_md5("10.0.0.1-39", 11, d);
	CHECK_EQ_U64(points[159].position, ketama_word(d, 3));
	/* The key position: first word of MD5(key). */
	unit_md5("foo", 3, d);
	CHECK_EQ_U64(ketama_key_position(unit_md5, "foo", 3), ketama_word(d, 0));
	/* RFC 1321: MD5("") = d41d8cd9..., first word little-endian 0xd98c1dd4. */
	CHECK_EQ_U64(ketama_key_position(unit_md5, "", 0), 0xd98c1dd4);
}

void
unit_main(void)
{
	test_digest_counts();
	test_continuum_sizes();
	test_points();
}
