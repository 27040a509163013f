/*
 * crc16.c - CRC-16/XMODEM, byte-at-a-time with a table built once
 *
 * The table is generated from the polynomial at first use rather than
 * pasted in, so that the definition is the polynomial itself.
 */
#include "crc16.h"

static uint16_t crc16_table[256];
static int	crc16_table_ready = 0;

static void
crc16_build_table(void)
{
	for (int byte = 0; byte < 256; byte++)
	{
		uint16_t	crc = (uint16_t) (byte << 8);

		for (int bit = 0; bit < 8; bit++)
			crc = (crc & 0x8000) ? (uint16_t) ((crc << 1) ^ 0x1021) : (uint16_t) (crc << 1);
		crc16_table[byte] = crc;
	}
	crc16_table_ready = 1;
}

uint16_t
crc16_xmodem(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint16_t	crc = 0;

	/* Idempotent, so a race between threads (unit tests) is harmless. */
	if (!crc16_table_ready)
		crc16_build_table();
	for (size_t i = 0; i < len; i++)
		crc = (uint16_t) ((crc << 8) ^ crc16_table[((crc >> 8) ^ p[i]) & 0xff]);
	return crc;
}
