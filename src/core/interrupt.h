/*
 * interrupt.h - letting the server cancel long core work
 *
 * Work whose cost grows with an argument (ring, ketama and Maglev builds,
 * sorts, bounded loads) calls an interrupt_check now and then.  The glue
 * passes a function running CHECK_FOR_INTERRUPTS, which does not return
 * when a cancel is pending (it raises the error with a longjmp), so core
 * code calls it only while it holds nothing but caller memory.  NULL means
 * no checks (unit tests, the fuzzer).
 */
#ifndef CHASH_CORE_INTERRUPT_H
#define CHASH_CORE_INTERRUPT_H

#include <stddef.h>

typedef void (*interrupt_check) (void);

/*
 * Units of work (a hash, a comparison, a probe) between two checks: small
 * enough that a check comes every fraction of a millisecond, large enough
 * that the call costs nothing.
 */
#define INTERRUPT_INTERVAL 4096

/* Counts work done and checks once INTERRUPT_INTERVAL units have piled up. */
typedef struct interrupt_counter
{
	interrupt_check check;
	size_t		work;
} interrupt_counter;

static inline void
interrupt_charge(interrupt_counter *counter, size_t units)
{
	counter->work += units;
	if (counter->work >= INTERRUPT_INTERVAL)
	{
		counter->work = 0;
		if (counter->check)
			counter->check();
	}
}

#endif
