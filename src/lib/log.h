/*
 * log.h: the diagnostics logger (egress_set_log_cb(), egress_set_log_level()):
 * a callback, its argument and a level.  struct egress holds one (ex->log);
 * eg_log(ex, ...) checks the level before its arguments are evaluated or
 * formatted, eg_log_enabled() is that check, for callers that format
 * something themselves first.  The macros need struct egress (core.h)
 * where they are used; this header needs nothing of it.  Private to
 * libegress.
 */
#ifndef EG_LOG_H
#define EG_LOG_H

#include "egress.h"

struct eg_logger {
	egress_log_cb		 cb;
	void			*arg;
	int			 level;	/* egress_set_log_level() */
	int			 max;	/* atomic: most verbose level
					   delivered; -1: no callback */
};

/* No callback yet, level EGRESS_LOG_INFO. */
void	eg_logger_init(struct eg_logger *);
void	eg_logger_set_cb(struct eg_logger *, egress_log_cb cb, void *arg);
void	eg_logger_set_level(struct eg_logger *, int level);

/* How eg_bug(), which has no struct egress, finds ex's logger: fn(ex),
 * registered by proxy.c when it creates a proxy. */
void	eg_logger_of_set(struct eg_logger *(*fn)(struct egress *));

#define eg_logger_enabled(lg, lv)					\
	((lv) <= __atomic_load_n(&(lg)->max, __ATOMIC_RELAXED))
#define eg_log_enabled(ex, lv)	eg_logger_enabled(&(ex)->log, lv)
#define eg_log(ex, level, ...) do {					\
	struct egress *eg_log_ex_ = (ex);				\
	int eg_log_lv_ = (level);					\
	if (eg_log_enabled(eg_log_ex_, eg_log_lv_))			\
		eg_log_write(&eg_log_ex_->log, eg_log_lv_, __VA_ARGS__);\
} while (0)
/* Only through eg_log(), which has checked the level. */
void	eg_log_write(struct eg_logger *, int level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
