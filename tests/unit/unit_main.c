/*
 * unit_main.c - shared main() of the core unit-test programs
 */
#include "unit.h"

long		unit_passed = 0;
long		unit_failed = 0;

int
main(void)
{
	unit_main();
	printf("%ld passed, %ld failed\n", unit_passed, unit_failed);
	return unit_failed == 0 ? 0 : 1;
}
