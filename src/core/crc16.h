/*
 * crc16.h - CRC-16/XMODEM, the checksum behind Redis Cluster's key slots
 */
#ifndef CHASH_CORE_CRC16_H
#define CHASH_CORE_CRC16_H

#include <stddef.h>
#include <stdint.h>

/* Poly 0x1021, init 0, no reflection, no xor-out; "123456789" -> 0x31C3. */
uint16_t	crc16_xmodem(const void *data, size_t len);

/* The same CRC one byte at a time: the definition the fast path is tested against. */
uint16_t	crc16_xmodem_bytewise(const void *data, size_t len);

#endif
