/*
 * test_stable_hash.c - CRC16, Redis slots, jump, XXH64, MD5 prefix,
 * Cassandra tokens: published vectors, each with its source
 */
#include <string.h>

#include "cassandra_token.h"
#include "crc16.h"
#include "hash64.h"
#include "jump.h"
#include "redis_slot.h"
#include "unit.h"

#define S(str) str, sizeof(str) - 1

static void
test_crc16(void)
{
	/* CRC catalogue (reveng) check value of CRC-16/XMODEM. */
	CHECK_EQ_U64(crc16_xmodem(S("123456789")), 0x31C3);
	CHECK_EQ_U64(crc16_xmodem(S("")), 0);
	CHECK_EQ_U64(crc16_xmodem_bytewise(S("123456789")), 0x31C3);

	/* Slicing-by-8 equals the bytewise definition at every length and offset. */
	{
		uint8_t		buf[100];
		uint64_t	x = 1;
		int			mismatches = 0;

		for (int i = 0; i < 100; i++)
		{
			x = fmix64(x + (uint64_t) i);
			buf[i] = (uint8_t) x;
		}
		for (size_t off = 0; off < 8; off++)
			for (size_t len = 0; off + len <= sizeof(buf); len++)
				if (crc16_xmodem(buf + off, len) != crc16_xmodem_bytewise(buf + off, len))
					mismatches++;
		CHECK(mismatches == 0);
	}
}

static void
test_redis_slot(void)
{
	const char *tag;
	size_t		tag_len;

	/* Redis Cluster spec, "Keys hash tags": these pairs share a slot. */
	CHECK(redis_cluster_slot(S("{user1000}.following")) ==
		  redis_cluster_slot(S("{user1000}.followers")));
	CHECK(redis_cluster_slot(S("foo{bar}{zap}")) == redis_cluster_slot(S("bar")));
	CHECK(redis_cluster_slot(S("foo{}{bar}")) != redis_cluster_slot(S("bar")) ||
		  redis_cluster_slot(S("foo{}{bar}")) == redis_cluster_slot(S("foo{}{bar}")));
	redis_hash_tag(S("foo{}{bar}"), &tag, &tag_len);
	CHECK(tag_len == 10);		/* empty tag: the whole key */
	redis_hash_tag(S("foo{{bar}}zap"), &tag, &tag_len);
	CHECK(tag_len == 4 && memcmp(tag, "{bar", 4) == 0);
	redis_hash_tag(S("foo{bar}{zap}"), &tag, &tag_len);
	CHECK(tag_len == 3 && memcmp(tag, "bar", 3) == 0);
	redis_hash_tag(S("}{x"), &tag, &tag_len);
	CHECK(tag_len == 3);		/* no '}' after the '{' */
	redis_hash_tag(S("}{x}"), &tag, &tag_len);
	CHECK(tag_len == 1 && tag[0] == 'x');
	/* redis-cli "CLUSTER KEYSLOT somekey" = 11058, "foo" = 12182. */
	CHECK_EQ_U64(redis_cluster_slot(S("somekey")), 11058);
	CHECK_EQ_U64(redis_cluster_slot(S("foo")), 12182);
}

static void
test_jump(void)
{
	/* github.com/dgryski/go-jump jump_test.go, jumpTestVectors. */
	CHECK_EQ_I64(jump_consistent_hash(1, 1), 0);
	CHECK_EQ_I64(jump_consistent_hash(42, 57), 43);
	CHECK_EQ_I64(jump_consistent_hash(0xDEAD10CC, 1), 0);
	CHECK_EQ_I64(jump_consistent_hash(0xDEAD10CC, 666), 361);
	CHECK_EQ_I64(jump_consistent_hash(256, 1024), 520);
	/* Always in range, and monotone: growing n only moves keys to n-1. */
	for (uint64_t k = 0; k < 20000; k++)
	{
		uint64_t	key = fmix64(k + 1);
		int32_t		prev = 0;

		for (int32_t n = 1; n <= 40; n++)
		{
			int32_t		b = jump_consistent_hash(key, n);

			if (b < 0 || b >= n || (b != prev && b != n - 1))
			{
				CHECK(!"jump bucket out of range or moved to an old bucket");
				return;
			}
			prev = b;
		}
	}
	CHECK(1);
	CHECK(jump_consistent_hash(UINT64_MAX, INT32_MAX) >= 0);
}

/*
 * jump_consistent_hash() may run branch-free blocks (jump.c); it must be
 * the paper's loop bit for bit, for every bucket count's block size and
 * for keys that need several blocks.
 */
static void
test_jump_matches_loop(void)
{
	static const int32_t sizes[] = {2, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 1000, 1023,
		1024, 16383, 16384, 16385, 65536, 1048576, 16777216, 1 << 30, INT32_MAX - 1, INT32_MAX};
	long		bad = 0;

	for (uint64_t k = 0; k < 200000; k++)
	{
		uint64_t	key = fmix64(k);

		for (int32_t n = 1; n <= 130; n++)
			bad += jump_consistent_hash(key, n) != jump_consistent_hash_loop(key, n);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			bad += jump_consistent_hash(key, sizes[i]) != jump_consistent_hash_loop(key, sizes[i]);
	}
	/* Keys whose generator values sit at the ends of their range. */
	for (uint64_t k = 0; k < 4096; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		{
			bad += jump_consistent_hash(k, sizes[i]) != jump_consistent_hash_loop(k, sizes[i]);
			bad += jump_consistent_hash(UINT64_MAX - k, sizes[i]) !=
				jump_consistent_hash_loop(UINT64_MAX - k, sizes[i]);
		}
	CHECK_EQ_I64(bad, 0);
}

static void
test_xxh64(void)
{
	/* xxHash reference: XXH64 of the empty input, seed 0. */
	CHECK_EQ_U64(xxh64_hash("", 0, 0), UINT64_C(0xEF46DB3751D8E999));
}

static void
test_md5_prefix(void)
{
	hasher64 h = {HASH_FAMILY_MD5, unit_md5};
	hash_family f;

	/* RFC 1321 appendix A.5 test suite. */
	CHECK_EQ_U64(hash64(&h, S("")), UINT64_C(0xd41d8cd98f00b204));
	CHECK_EQ_U64(hash64(&h, S("abc")), UINT64_C(0x900150983cd24fb0));
	CHECK_EQ_U64(hash64(&h, S("message digest")), UINT64_C(0xf96b697d7cb7938d));
	CHECK(hash_family_parse(S("md5"), &f) == 0 && f == HASH_FAMILY_MD5);
	CHECK(hash_family_parse(S("xxh64"), &f) == 0 && f == HASH_FAMILY_XXH64);
	CHECK(hash_family_parse(S("XXH64"), &f) == -1);
	CHECK(hash_family_parse(S("md"), &f) == -1);
}

static void
test_cassandra_token(void)
{
	/* Empty key: the partitioner's minimum token. */
	CHECK_EQ_I64(cassandra_murmur3_token("", 0), INT64_MIN);
	/*
	 * DataStax python-driver tests/unit/test_metadata.py
	 * (Murmur3 test): murmur3(b'123') etc.
	 */
	CHECK_EQ_I64(cassandra_murmur3_token(S("123")), INT64_C(-7468325962851647638));
	CHECK_EQ_I64(cassandra_murmur3_token(S("\xfe\xfe\xfe\xfe\xfe\xfe\xfe\xfe")),
				 INT64_C(-8927430733708461935));
	CHECK_EQ_I64(cassandra_murmur3_token(S("\x10\x10\x10\x10\x10\x10\x10\x10")),
				 INT64_C(1446172840243228796));
}

void
unit_main(void)
{
	test_crc16();
	test_redis_slot();
	test_jump();
	test_jump_matches_loop();
	test_xxh64();
	test_md5_prefix();
	test_cassandra_token();
}
