/* The glue's visitor, which the core's table names. */
void
glue_visit(int node)
{
	(void) node;
}
