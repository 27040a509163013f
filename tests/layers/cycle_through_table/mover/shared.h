/* The program's shared declarations (as mover/chash_move.h): no arrow to a file by themselves. */
#ifndef SHARED_H
#define SHARED_H

typedef struct Ops
{
	int			(*run) (void);
} Ops;

extern int	a_run(void);
extern int	b_helper(void);

#endif
