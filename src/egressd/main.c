/*
 * main.c: egressd, a thin main around libegress: parse flags, load the
 * configuration, turn signals into control calls (the loops run on their
 * own threads; this thread only waits in sigwait()), and map failures to
 * exit codes: 0 success, 1 configuration error, 2 usage, 3 runtime.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <sys/stat.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "egress.h"
#include "audit.h"

#define EX_CONFIG	1
#define EX_USAGEERR	2
#define EX_RUNTIME	3

static const char usage_text[] =
"usage: egressd [-c FILE] [-l ADDR:PORT]... [-u PATH]... [-a ADMIN] [-p PHASE]\n"
"               [--audit PATH|-] [--audit-format text|json] [-t] [-V] [-h]\n"
"       egressd run [OPTIONS] -- CMD [ARGS]    (sandbox module, egressd-run(1))\n"
"       egressd audit replay|suggest|verify ... (egressd-audit(1))\n"
"       egressd replay PLAN.ini...             (replay module, egressd-replay(1))\n"
"       egressd record keygen|seal|check ...   (record module, egressd-record(1))\n"
"\n"
"An allowlisting HTTP CONNECT proxy: every request is decided against the\n"
"allowlist of the current phase, logged, and only then answered.\n"
"\n"
"  -c, --config FILE        INI configuration (default: " SYSCONFDIR "/egressd/egressd.ini,\n"
"                           else the embedded model-API-only default)\n"
"  -l, --listen ADDR:PORT   TCP listener, repeatable ([::1]:3128 for IPv6)\n"
"  -u, --unix PATH          Unix-socket listener, repeatable\n"
"  -a, --admin PATH|ADDR:PORT  admin API listener\n"
"  -p, --phase NAME         initial phase\n"
"      --audit PATH|-       audit log file; - is standard output\n"
"      --audit-format text|json\n"
"  -t, --test-config        check the configuration, print FILE:LINE: errors\n"
"  -V, --version            version and compiled-in modules\n"
"  -h, --help               this text\n"
"\n"
"Signals: HUP reloads the configuration, USR1 reopens the audit log,\n"
"TERM/INT stop cleanly.  Exit: 0 ok, 1 config error, 2 usage, 3 runtime.\n"
"Under systemd: Type=notify, the watchdog, and sockets handed over by\n"
"socket activation (names \"proxy\" and \"admin\"; see egressd(8)).\n"
"Example: egressd -l 127.0.0.1:3128 --audit -   then\n"
"         curl -x http://127.0.0.1:3128 https://api.anthropic.com/\n";

static void
usage(FILE *fp)
{
	fputs(usage_text, fp);
}

static void
log_stderr(int level, const char *msg, void *arg)
{
	static const char *const lv[] = { "error", "warning", "info", "debug" };

	(void)arg;
	if (level < 0 || level > EGRESS_LOG_DEBUG)
		level = EGRESS_LOG_INFO;
	if (level == EGRESS_LOG_DEBUG)
		return;
	fprintf(stderr, "egressd: %s: %s\n", lv[level], msg);
}

static int
version(void)
{
	const char *const *m = egress_modules();

	printf("egressd %s\nmodules:", egress_version());
	if (*m == NULL)
		printf(" none");
	for (; *m != NULL; m++)
		printf(" %s", *m);
	printf("\n");
	return 0;
}

/* "egressd CMD ...": a module's subcommand (egress_module_main()). */
static int
subcommand(int argc, char *argv[])
{
	char err[512];
	int rc;

	rc = egress_module_main(argv[0], argc, argv, err, sizeof(err));
	if (rc != -1)
		return rc;
	fprintf(stderr, "egressd: %s%s\n", err,
	    strncmp(err, "unknown command", 15) == 0 ? " (see egressd -h)" :
	    "");
	return EX_USAGEERR;
}

struct opt {
	const char	*key;
	const char	*value;
};

/* --- systemd: readiness, watchdog, socket activation (egressd(8)) ------ */

#ifdef HAVE_SYSTEMD
/* sd_notify(3): a no-op unless systemd (NOTIFY_SOCKET) started us */
#define notify(...)	((void)sd_notifyf(0, __VA_ARGS__))
#else
static void	notify(const char *fmt, ...)
		    __attribute__((format(printf, 1, 2)));
static void
notify(const char *fmt, ...)
{
	(void)fmt;
}
#endif

/* READY=1 with a STATUS= line naming the phase (after start, reload) */
static void
notify_ready(struct egress *ex, const char *what)
{
	char phase[128];

	if (egress_phase(ex, phase, sizeof(phase)) == -1)
		snprintf(phase, sizeof(phase), "?");
	notify("READY=1\nSTATUS=%s; phase %s", what, phase);
}

#ifdef HAVE_SYSTEMD
/*
 * The watchdog (WatchdogSec=): WATCHDOG=1 every half interval, but only
 * when every loop thread went once round its loop in time
 * (egress_ping()): a stuck loop starves the watchdog and systemd
 * restarts us.  Stopped through wd_stop.
 */
struct watchdog {
	struct egress	*ex;
	uint64_t	 usec;		/* WATCHDOG_USEC */
	pthread_mutex_t	 mtx;
	pthread_cond_t	 cv;
	int		 stop;
	pthread_t	 thr;
};

static void *
watchdog_main(void *arg)
{
	struct watchdog *wd = arg;
	struct timespec ts;
	uint64_t half = wd->usec / 2;
	unsigned budget;
	int alive, was = 1;

	/* a loop gets a quarter of the interval to answer */
	budget = wd->usec / 4000 > 0 ? (unsigned)(wd->usec / 4000) : 1;
	pthread_mutex_lock(&wd->mtx);
	while (!wd->stop) {
		pthread_mutex_unlock(&wd->mtx);
		alive = egress_ping(wd->ex, budget);
		if (alive == 1)
			notify("WATCHDOG=1");
		else if (alive == 0 && was)
			fprintf(stderr, "egressd: error: watchdog: a loop "
			    "thread did not answer within %u ms; not feeding "
			    "the watchdog\n", budget);
		if (alive == 0 && was)
			notify("STATUS=a loop thread is stuck");
		was = alive != 0;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(half / 1000000);
		ts.tv_nsec += (long)(half % 1000000) * 1000;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&wd->mtx);
		while (!wd->stop && pthread_cond_timedwait(&wd->cv, &wd->mtx,
		    &ts) == 0)
			;
	}
	pthread_mutex_unlock(&wd->mtx);
	return NULL;
}

static int
watchdog_start(struct watchdog *wd, struct egress *ex)
{
	uint64_t usec = 0;

	memset(wd, 0, sizeof(*wd));
	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
		return 0;
	wd->ex = ex;
	wd->usec = usec;
	pthread_mutex_init(&wd->mtx, NULL);
	pthread_cond_init(&wd->cv, NULL);
	if (pthread_create(&wd->thr, NULL, watchdog_main, wd) != 0) {
		fprintf(stderr, "egressd: warning: watchdog: cannot start "
		    "its thread\n");
		wd->usec = 0;
		return 0;
	}
	return 1;
}

static void
watchdog_stop(struct watchdog *wd)
{
	if (wd->usec == 0)
		return;
	pthread_mutex_lock(&wd->mtx);
	wd->stop = 1;
	pthread_cond_signal(&wd->cv);
	pthread_mutex_unlock(&wd->mtx);
	pthread_join(wd->thr, NULL);
	pthread_mutex_destroy(&wd->mtx);
	pthread_cond_destroy(&wd->cv);
}

/*
 * Socket activation: the descriptors systemd handed over (LISTEN_FDS,
 * checked against LISTEN_PID by sd_listen_fds_with_names()), by their
 * FileDescriptorName=: "proxy" (or "unknown": no names given) is a proxy
 * listener, "admin" the admin API's; any other name is an error.
 */
static int
adopt_listen_fds(struct egress *ex)
{
	char **names = NULL;
	int n, i, rc = 0;

	n = sd_listen_fds_with_names(1, &names);
	if (n < 0) {
		fprintf(stderr, "egressd: socket activation: %s\n",
		    strerror(-n));
		return -1;
	}
	for (i = 0; i < n; i++) {
		const char *name = names != NULL && names[i] != NULL ?
		    names[i] : "unknown";
		const char *role = strcmp(name, "admin") == 0 ? "admin" :
		    strcmp(name, "proxy") == 0 ||
		    strcmp(name, "unknown") == 0 ? "proxy" : NULL;

		if (rc == -1)
			;
		else if (role == NULL) {
			fprintf(stderr, "egressd: socket activation: "
			    "descriptor %d is named '%s'; egressd takes "
			    "\"proxy\" and \"admin\" "
			    "(FileDescriptorName=)\n", SD_LISTEN_FDS_START + i,
			    name);
			rc = -1;
		} else if (egress_adopt_fd(ex, SD_LISTEN_FDS_START + i,
		    role) == -1) {
			fprintf(stderr, "egressd: socket activation: %s\n",
			    egress_errmsg(ex));
			rc = -1;
		}
		if (names != NULL)
			free(names[i]);
	}
	free(names);
	return rc;
}
#else
struct watchdog { int unused; };
static int
watchdog_start(struct watchdog *wd, struct egress *ex)
{
	(void)wd;
	(void)ex;
	return 0;
}
static void
watchdog_stop(struct watchdog *wd)
{
	(void)wd;
}
static int
adopt_listen_fds(struct egress *ex)
{
	(void)ex;
	if (getenv("LISTEN_FDS") != NULL)
		fprintf(stderr, "egressd: warning: LISTEN_FDS is set but "
		    "egressd was built without libsystemd "
		    "(./configure --with-systemd): the handed-over sockets "
		    "are not used\n");
	return 0;
}
#endif

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config",	  required_argument, NULL, 'c' },
		{ "listen",	  required_argument, NULL, 'l' },
		{ "unix",	  required_argument, NULL, 'u' },
		{ "admin",	  required_argument, NULL, 'a' },
		{ "phase",	  required_argument, NULL, 'p' },
		{ "audit",	  required_argument, NULL, 'A' },
		{ "audit-format", required_argument, NULL, 'F' },
		{ "test-config",  no_argument,	     NULL, 't' },
		{ "version",	  no_argument,	     NULL, 'V' },
		{ "help",	  no_argument,	     NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *cfgfile = NULL, *sys = SYSCONFDIR "/egressd/egressd.ini";
	struct opt *opts;
	size_t nopts = 0, i;
	struct egress *ex;
	struct watchdog wd;
	struct timespec now;
	char err[8192];
	struct stat st;
	sigset_t set;
	int ch, test = 0, sig, rc = 0;

	if (argc > 1 && strcmp(argv[1], "audit") == 0)
		return audit_main(argc - 1, argv + 1);	/* audit.c: core */
	if (argc > 1 && argv[1][0] != '-')
		return subcommand(argc - 1, argv + 1);
	if ((opts = calloc((size_t)argc, sizeof(*opts))) == NULL)
		return EX_RUNTIME;
	while ((ch = getopt_long(argc, argv, "c:l:u:a:p:tVh", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c': cfgfile = optarg; break;
		case 'l': opts[nopts++] = (struct opt){ "listen", optarg }; break;
		case 'u': opts[nopts++] = (struct opt){ "unix", optarg }; break;
		case 'a': opts[nopts++] = (struct opt){ "admin", optarg }; break;
		case 'p': opts[nopts++] = (struct opt){ "phase", optarg }; break;
		case 'A':
			opts[nopts++] = (struct opt){ "audit_log", optarg };
			break;
		case 'F':
			opts[nopts++] = (struct opt){ "audit_format", optarg };
			break;
		case 't': test = 1; break;
		case 'V': free(opts); return version();
		case 'h': usage(stdout); free(opts); return 0;
		default: usage(stderr); free(opts); return EX_USAGEERR;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "egressd: unexpected argument '%s'\n",
		    argv[optind]);
		usage(stderr);
		free(opts);
		return EX_USAGEERR;
	}
	if (cfgfile == NULL && stat(sys, &st) == 0)
		cfgfile = sys;

	err[0] = '\0';
	ex = egress_new_from_file(cfgfile, err, sizeof(err));
	if (ex == NULL) {
		fprintf(stderr, "%s\n", err);
		free(opts);
		return EX_CONFIG;
	}
	for (i = 0; i < nopts; i++)
		if (egress_set_option(ex, opts[i].key, opts[i].value) == -1) {
			fprintf(stderr, "egressd: %s\n", egress_errmsg(ex));
			egress_free(ex);
			free(opts);
			return EX_CONFIG;
		}
	free(opts);
	if (egress_check(ex) == -1) {
		fprintf(stderr, "%s\n", egress_errmsg(ex));
		egress_free(ex);
		return EX_CONFIG;
	}
	if (!test && adopt_listen_fds(ex) == -1) {
		egress_free(ex);
		return EX_CONFIG;
	}
	if (test) {
		fprintf(stderr, "%s: configuration ok\n",
		    cfgfile ? cfgfile : "(embedded default)");
		egress_free(ex);
		return 0;
	}
	egress_set_log_cb(ex, log_stderr, NULL);

	/* every thread inherits the blocked set; only sigwait() sees them */
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (egress_start(ex) == -1 || egress_run_thread(ex) == -1) {
		fprintf(stderr, "egressd: %s\n", egress_errmsg(ex));
		notify("STATUS=failed to start: %s", egress_errmsg(ex));
		egress_free(ex);
		return EX_RUNTIME;
	}
	notify_ready(ex, "serving");
	watchdog_start(&wd, ex);
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			/* Type=notify-reload's protocol (systemd >= 253)
			 * and harmless before it */
			clock_gettime(CLOCK_MONOTONIC, &now);
			notify("RELOADING=1\nMONOTONIC_USEC=%llu",
			    (unsigned long long)now.tv_sec * 1000000ULL +
			    (unsigned long long)now.tv_nsec / 1000);
			if (egress_reload(ex, "signal") == -1) {
				fprintf(stderr, "egressd: reload failed, the "
				    "old configuration stays:\n%s\n",
				    egress_errmsg(ex));
				notify_ready(ex, "reload failed, the old "
				    "configuration stays");
			} else {
				fprintf(stderr, "egressd: configuration "
				    "reloaded\n");
				notify_ready(ex, "serving (reloaded)");
			}
		} else if (sig == SIGUSR1) {
			if (egress_reopen_audit(ex) == -1)
				fprintf(stderr, "egressd: %s\n",
				    egress_errmsg(ex));
		} else
			break;
	}
	notify("STOPPING=1\nSTATUS=stopping (signal %d)", sig);
	watchdog_stop(&wd);
	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	return rc;
}
