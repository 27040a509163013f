/*
 * cassandra_token.h - the token of Apache Cassandra's Murmur3Partitioner
 */
#ifndef CHASH_CORE_CASSANDRA_TOKEN_H
#define CHASH_CORE_CASSANDRA_TOKEN_H

#include <stddef.h>
#include <stdint.h>

/*
 * CQL token(k) of a single-column partition key whose serialized form is
 * these bytes.  The empty key is the minimum token, INT64_MIN.
 */
int64_t		cassandra_murmur3_token(const void *data, size_t len);

#endif
