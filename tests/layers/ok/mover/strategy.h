/* A way to do a step, behind one interface (as mover/move.h's CopyStrategy). */
#ifndef STRATEGY_H
#define STRATEGY_H

typedef struct Strategy
{
	const char *name;
	int			(*run) (int step);
} Strategy;

extern const Strategy fast;		/* copy_fast.c */
extern int	work_run(int step);	/* work.c */

#endif
