/*
 * crc16.c - CRC-16/XMODEM, eight bytes per step ("slicing-by-8")
 *
 * The byte-at-a-time loop is a chain of dependent table lookups; Redis
 * keys are short but every row pays for them.  Slicing folds eight bytes
 * per step with independent lookups: table[k][b] is the CRC contribution
 * of byte b followed by k zero bytes.  The tables are generated from the
 * polynomial at first use rather than pasted in.
 */
#include "crc16.h"

static uint16_t crc16_table[8][256];
static int	crc16_table_ready = 0;

static void
crc16_build_tables(void)
{
	for (int byte = 0; byte < 256; byte++)
	{
		uint16_t	crc = (uint16_t) (byte << 8);

		for (int bit = 0; bit < 8; bit++)
			crc = (crc & 0x8000) ? (uint16_t) ((crc << 1) ^ 0x1021) : (uint16_t) (crc << 1);
		crc16_table[0][byte] = crc;
	}
	for (int k = 1; k < 8; k++)
		for (int byte = 0; byte < 256; byte++)
		{
			uint16_t	prev = crc16_table[k - 1][byte];

			crc16_table[k][byte] = (uint16_t) ((prev << 8) ^ crc16_table[0][prev >> 8]);
		}
	crc16_table_ready = 1;
}

uint16_t
crc16_xmodem_bytewise(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint16_t	crc = 0;

	if (!crc16_table_ready)
		crc16_build_tables();
	for (size_t i = 0; i < len; i++)
		crc = (uint16_t) ((crc << 8) ^ crc16_table[0][((crc >> 8) ^ p[i]) & 0xff]);
	return crc;
}

uint16_t
crc16_xmodem(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint16_t	crc = 0;

	/* Idempotent, so a race between threads (unit tests) is harmless. */
	if (!crc16_table_ready)
		crc16_build_tables();
	while (len >= 8)
	{
		crc = crc16_table[7][p[0] ^ (crc >> 8)] ^
			crc16_table[6][p[1] ^ (crc & 0xff)] ^
			crc16_table[5][p[2]] ^
			crc16_table[4][p[3]] ^
			crc16_table[3][p[4]] ^
			crc16_table[2][p[5]] ^
			crc16_table[1][p[6]] ^
			crc16_table[0][p[7]];
		p += 8;
		len -= 8;
	}
	/* The same folding for a 4- and a 2-byte tail: short keys are common. */
	if (len >= 4)
	{
		crc = crc16_table[3][p[0] ^ (crc >> 8)] ^
			crc16_table[2][p[1] ^ (crc & 0xff)] ^
			crc16_table[1][p[2]] ^
			crc16_table[0][p[3]];
		p += 4;
		len -= 4;
	}
	if (len >= 2)
	{
		crc = crc16_table[1][p[0] ^ (crc >> 8)] ^
			crc16_table[0][p[1] ^ (crc & 0xff)];
		p += 2;
		len -= 2;
	}
	if (len > 0)
		crc = (uint16_t) ((crc << 8) ^ crc16_table[0][((crc >> 8) ^ *p) & 0xff]);
	return crc;
}
