/*
 * A walk's visitor, in the core.  Planted: the glue's visitor declared
 * here, so that no include and no call of walk.c shows the arrow up to
 * it: only walk.c's initializer does.
 */
#ifndef WALK_H
#define WALK_H

typedef struct Walker
{
	void		(*visit) (int node);
} Walker;

extern const Walker walker;
extern void glue_visit(int node);

#endif
