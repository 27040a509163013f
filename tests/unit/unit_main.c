/*
 * unit_main.c - shared main() of the core unit-test programs
 */
#include "unit.h"

long		unit_passed = 0;
long		unit_failed = 0;

static uint64_t unit_rng = 88172645463325252ULL;

uint64_t
unit_random(void)
{
	unit_rng ^= unit_rng << 13;
	unit_rng ^= unit_rng >> 7;
	unit_rng ^= unit_rng << 17;
	return unit_rng;
}

int
main(void)
{
	unit_main();
	printf("%ld passed, %ld failed\n", unit_passed, unit_failed);
	return unit_failed == 0 ? 0 : 1;
}
