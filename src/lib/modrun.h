/*
 * modrun.h: the core's calls into the modules of a proxy (modrun.c):
 * egress_start() starts them, eg_emit() hands them every event,
 * egress_free() stops them.  Private to libegress.
 */
#ifndef EG_MODRUN_H
#define EG_MODRUN_H

#include <stddef.h>

struct egress;
struct egress_event;

/* init() of every compiled-in module with its configuration in ex->cfg;
 * -1 with "module NAME: ..." in err. */
int	eg_modules_init(struct egress *ex, char *err, size_t errlen);
/* on_event() of every module whose init() succeeded. */
void	eg_modules_event(struct egress *ex, const struct egress_event *ev);
/* fini() of every such module, last first. */
void	eg_modules_fini(struct egress *ex);

#endif
