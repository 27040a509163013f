/*
 * conninfo.h - a connection string without its secrets, for messages
 */
#ifndef CHASH_CONNINFO_H
#define CHASH_CONNINFO_H

#include "postgres.h"

/* "host=... port=... dbname=..." of a conninfo: never its password (palloc'd). */
extern char *conninfo_display(const char *conninfo);

#endif
