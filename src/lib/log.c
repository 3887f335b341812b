/*
 * log.c: the diagnostics logger (log.h) and eg_bug() behind EG_BUG, which
 * logs through it.
 */
#include "egress-int.h"

#include <unistd.h>

#include "log.h"

void
eg_logger_init(struct eg_logger *lg)
{
	lg->cb = NULL;
	lg->arg = NULL;
	lg->level = EGRESS_LOG_INFO;
	lg->max = -1;		/* no callback yet */
}

static void
logger_update(struct eg_logger *lg)
{
	__atomic_store_n(&lg->max, lg->cb != NULL ? lg->level : -1,
	    __ATOMIC_RELAXED);
}

void
eg_logger_set_cb(struct eg_logger *lg, egress_log_cb cb, void *arg)
{
	lg->cb = cb;
	lg->arg = arg;
	logger_update(lg);
}

void
eg_logger_set_level(struct eg_logger *lg, int level)
{
	if (level < -1)
		level = -1;
	if (level > EGRESS_LOG_DEBUG)
		level = EGRESS_LOG_DEBUG;
	lg->level = level;
	logger_update(lg);
}

void
eg_log_write(struct eg_logger *lg, int level, const char *fmt, ...)
{
	egress_log_cb cb = lg->cb;
	char msg[1024];
	va_list ap;

	if (cb == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cb(level, msg, lg->arg);
}

/*
 * How eg_bug() finds a proxy's logger: registered by the floor that
 * knows struct egress (proxy.c, when it creates one), so that this file
 * knows nothing of it.  NULL until a proxy exists.
 */
static struct eg_logger *(*logger_of)(struct egress *);

void
eg_logger_of_set(struct eg_logger *(*fn)(struct egress *))
{
	__atomic_store_n(&logger_of, fn, __ATOMIC_RELEASE);
}

void
eg_bug(struct egress *ex, const char *file, int line, const char *msg,
    int fatal)
{
	struct eg_logger *(*of)(struct egress *);
	struct eg_logger *lg;
	char buf[512];
	int n;

	n = snprintf(buf, sizeof(buf), "BUG at %s:%d: %s", file, line, msg);
	of = __atomic_load_n(&logger_of, __ATOMIC_ACQUIRE);
	lg = ex != NULL && of != NULL ? of(ex) : NULL;
	if (lg != NULL && eg_logger_enabled(lg, EGRESS_LOG_ERR))
		eg_log_write(lg, EGRESS_LOG_ERR, "%s", buf);
	if (!fatal)
		return;
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* a debug build stops here, so that a test cannot miss it */
	if (write(STDERR_FILENO, buf, (size_t)n) == -1) {
		/* nowhere else to say it */
	}
	abort();
}
