/*
 * test-module.c: the module interface as the core drives it, with a
 * table of our own (module "fake", compiled in, and "absent", not):
 * [fake] keys reach config() with FILE:LINE on its errors, [absent] is
 * "not compiled in" and [nope] "unknown section", init() gets the
 * parsed section and a failure is egress_start()'s message (the process
 * goes on), on_event() sees every event a subscriber sees, on a loop
 * thread, with init()'s state, fini() runs once in egress_free(), every
 * configuration config() built is freed (reloads too), and
 * egress_module_main() dispatches subcommands.
 */
#include "egress-int.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <unistd.h>

#include "egress.h"
#include "module.h"
#include "tap.h"

struct fake_cfg {
	char	greeting[32];
	int	line;
	int	fail_init;
};

struct fake_state {
	unsigned	magic;
	const struct fake_cfg *cfg;
	unsigned	ev[5];		/* by type */
	unsigned	off_loop;	/* events on the main thread */
	unsigned	bad_state;
};

static pthread_t main_thread;
static int ncfg_alloc, ncfg_free, ninit, nfini, nmain;
static struct fake_state *last_state;
static unsigned sub_ev[5];
static char cfg_file[64];

static int
fake_config(void **cfgp, const char *key, const char *value,
    const char *file, int line, char *err, size_t errlen)
{
	struct fake_cfg *c = *cfgp;

	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return -1;
		*cfgp = c;
		ncfg_alloc++;
	}
	snprintf(cfg_file, sizeof(cfg_file), "%s", file);
	if (strcmp(key, "greeting") == 0) {
		if (strcmp(value, "hello") != 0 && strcmp(value, "hi") != 0) {
			snprintf(err, errlen, "bad greeting '%s' in [fake]",
			    value);
			return -1;
		}
		snprintf(c->greeting, sizeof(c->greeting), "%s", value);
		c->line = line;
		return 0;
	}
	if (strcmp(key, "fail_init") == 0) {
		c->fail_init = strcmp(value, "yes") == 0;
		return 0;
	}
	snprintf(err, errlen, "unknown key '%s' in [fake]", key);
	return -1;
}

static void
fake_config_free(void *cfg)
{
	if (cfg != NULL)
		ncfg_free++;
	free(cfg);
}

static int
fake_init(struct egress *ex, const void *cfg, void **state, char *err,
    size_t errlen)
{
	const struct fake_cfg *c = cfg;
	struct fake_state *s;

	(void)ex;
	ninit++;
	if (c != NULL && c->fail_init) {
		snprintf(err, errlen, "told to fail at line %d", c->line);
		return -1;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -1;
	s->magic = 0xfeed;
	s->cfg = c;
	*state = last_state = s;
	return 0;
}

static void
fake_on_event(const struct egress_event *ev, void *state)
{
	struct fake_state *s = state;

	if (s == NULL || s->magic != 0xfeed) {
		__atomic_fetch_add(&((struct fake_state *)last_state)->bad_state,
		    1, __ATOMIC_RELAXED);
		return;
	}
	if (pthread_equal(pthread_self(), main_thread))
		__atomic_fetch_add(&s->off_loop, 1, __ATOMIC_RELAXED);
	if ((unsigned)ev->type < nitems(s->ev))
		__atomic_fetch_add(&s->ev[ev->type], 1, __ATOMIC_RELAXED);
}

static void
fake_fini(void *state)
{
	struct fake_state *s = state;

	if (s != NULL && s->magic == 0xfeed)
		nfini++;
	free(s);
}

static int
fake_main(int argc, char *argv[])
{
	nmain++;
	return argc == 2 && strcmp(argv[0], "fakecmd") == 0 &&
	    strcmp(argv[1], "x") == 0 ? 7 : 1;
}

static const struct eg_module fake = {
	.name = "fake", .summary = "a test module", .main = fake_main,
	.config = fake_config, .config_free = fake_config_free,
	.init = fake_init, .on_event = fake_on_event, .fini = fake_fini,
};
static const char *const fake_cmds[] = { "fakecmd", NULL };
static const char *const absent_cmds[] = { "absentcmd", NULL };
static const struct eg_module_slot table[] = {
	{ "fake", fake_cmds, &fake },
	{ "absent", absent_cmds, NULL },
	{ NULL, NULL, NULL }
};

static void
sub(const struct egress_event *ev, void *arg)
{
	(void)arg;
	if ((unsigned)ev->type < nitems(sub_ev))
		__atomic_fetch_add(&sub_ev[ev->type], 1, __ATOMIC_RELAXED);
}

static struct egress *
new_str(const char *text, char *err, size_t len)
{
	err[0] = '\0';
	return egress_new_from_string(text, err, len);
}

/* Send req on a fresh connection to the Unix socket; the reply's first
 * bytes into buf.  Keeps the connection open in *fdp when fdp != NULL. */
static int
ask(const char *path, const char *req, char *buf, size_t len, int *fdp)
{
	struct sockaddr_un sun;
	ssize_t r;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	buf[0] = '\0';
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req) ||
	    (r = read(fd, buf, len - 1)) <= 0) {
		close(fd);
		return -1;
	}
	buf[r] = '\0';
	if (fdp != NULL)
		*fdp = fd;
	else
		close(fd);
	return 0;
}

/* Wait (up to 5 s) until *p reaches want. */
static unsigned
wait_for(unsigned *p, unsigned want)
{
	int i;

	for (i = 0; i < 500 && __atomic_load_n(p, __ATOMIC_RELAXED) < want;
	    i++)
		usleep(10000);
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* egress_modules() from several threads at once (the admin API's):
 * ThreadSanitizer saw the static array written by each call */
static void *
modules_reader(void *arg)
{
	const char *const *names;
	int i, *bad = arg;

	for (i = 0; i < 200; i++) {
		names = egress_modules();
		if (names[0] == NULL || strcmp(names[0], "fake") != 0 ||
		    names[1] != NULL)
			(*bad)++;
	}
	return NULL;
}

int
main(void)
{
	char err[4096], dir[] = "/tmp/egressd-modtest.XXXXXX", sock[128];
	char text[1024], buf[512], req[256];
	const char *const *names;
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct egress *ex;
	char *argv[3];
	int lfd, fd = -1, afd, rc, i;
	unsigned port;

	main_thread = pthread_self();
	eg_module_table = table;

	/* --- the table: -V list, subcommands ---------------------------------- */
	names = egress_modules();
	ok(names[0] != NULL && strcmp(names[0], "fake") == 0 &&
	    names[1] == NULL, "egress_modules() lists the compiled-in "
	    "modules only");
	{
		pthread_t t[4];
		int bad[4] = { 0 }, k;

		for (k = 0; k < 4; k++)
			(void)pthread_create(&t[k], NULL, modules_reader,
			    &bad[k]);
		for (k = 0; k < 4; k++)
			(void)pthread_join(t[k], NULL);
		is_int(bad[0] + bad[1] + bad[2] + bad[3], 0, "egress_modules() "
		    "from four threads at once: the same list each time");
	}
	argv[0] = "fakecmd";
	argv[1] = "x";
	argv[2] = NULL;
	is_int(egress_module_main("fakecmd", 2, argv, err, sizeof(err)), 7,
	    "egress_module_main() runs the module's main and returns its "
	    "status");
	is_int(nmain, 1, "main called once");
	argv[0] = "absentcmd";
	is_int(egress_module_main("absentcmd", 1, argv, err, sizeof(err)),
	    -1, "a command of a module not compiled in: -1");
	is_str(err, "absentcmd: module absent not compiled in "
	    "(./configure --enable-absent)", "... saying so");
	is_int(egress_module_main("zzz", 1, argv, err, sizeof(err)), -1,
	    "an unknown command: -1");
	is_str(err, "unknown command 'zzz'", "... saying so");

	/* --- the config section ------------------------------------------------------ */
	ex = new_str("[proxy]\n[phase:a]\n[fake]\ngreeting = howdy\n"
	    "colour = red\n", err, sizeof(err));
	ok(ex == NULL, "a bad [fake] key refuses the configuration");
	ok(strstr(err, "(string):4: bad greeting 'howdy' in [fake]") != NULL,
	    "the module's message has FILE:LINE: (%s)", err);
	ok(strstr(err, "(string):5: unknown key 'colour' in [fake]") != NULL,
	    "every bad key is reported, each at its line");
	is_str(cfg_file, "(string)", "config() gets the file name");
	is_int(ncfg_free, ncfg_alloc, "a refused configuration frees what "
	    "config() built");

	ex = new_str("[proxy]\n[phase:a]\n[absent]\n[absent:x]\n[nope]\n"
	    "[fake:y]\n[fake]\n[fake]\n", err, sizeof(err));
	ok(ex == NULL, "module sections: errors refuse the file");
	ok(strstr(err, "(string):3: [absent]: module not compiled in "
	    "(./configure --enable-absent)") != NULL,
	    "[absent]: module not compiled in");
	ok(strstr(err, "(string):4: [absent:x]: module not compiled "
	    "in") != NULL, "[absent:x]: module not compiled in");
	ok(strstr(err, "(string):5: unknown section [nope]") != NULL,
	    "[nope]: unknown section");
	ok(strstr(err, "(string):6: unknown section [fake:y]") != NULL,
	    "[fake:y] of a compiled-in module: unknown section");
	ok(strstr(err, "(string):8: duplicate section [fake] (first at "
	    "line 7)") != NULL, "a second [fake]: duplicate section");

	/* --- init failure: a message, no exit ---------------------------------------- */
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(sock, sizeof(sock), "%s/p.sock", dir);
	snprintf(text, sizeof(text), "[proxy]\nunix = %s\n"
	    "admin = none\n[phase:a]\n[fake]\ngreeting = hi\nfail_init = yes\n",
	    sock);
	ex = new_str(text, err, sizeof(err));
	ok(ex != NULL, "[fake] with good keys parses (%s)", err);
	if (ex == NULL)
		return done_testing();
	ninit = nfini = 0;
	is_int(egress_start(ex), -1, "init() failing fails egress_start()");
	is_str(egress_errmsg(ex), "module fake: told to fail at line 6",
	    "... with the module's message, which saw its config");
	is_int(ninit, 1, "init called once");
	egress_free(ex);
	is_int(nfini, 0, "no fini() after a failed init()");
	unlink(sock);

	/* --- a running proxy: on_event, reload, fini ---------------------------------- */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd == -1 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ==
	    -1 || listen(lfd, 8) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) == -1)
		return 1;
	port = ntohs(sin.sin_port);
	snprintf(text, sizeof(text), "[proxy]\nunix = %s\n"
	    "admin = none\naudit_log = /dev/null\ndeny_private = no\n"
	    "ports = %u, 443\nworkers = 2\n[hosts]\nup.test = 127.0.0.1\n"
	    "[phase:a]\nallow = up.test\n[phase:b]\n[fake]\ngreeting = hello\n",
	    sock, port);
	ex = new_str(text, err, sizeof(err));
	ok(ex != NULL, "a proxy with [fake] (%s)", err);
	if (ex == NULL)
		return done_testing();
	ninit = nfini = 0;
	last_state = NULL;
	ok(egress_subscribe(ex, sub, NULL) == 0 && egress_start(ex) == 0 &&
	    egress_run_thread(ex) == 0, "started (%s)", egress_errmsg(ex));
	ok(last_state != NULL && last_state->cfg != NULL &&
	    strcmp(last_state->cfg->greeting, "hello") == 0 &&
	    last_state->cfg->line == 14, "init() got the parsed [fake] "
	    "section");
	ok(eg_module_state(ex, &fake) == last_state,
	    "eg_module_state() is init()'s state");
	ok(eg_module_config(ex, &fake) == last_state->cfg,
	    "eg_module_config() is config()'s result");

	snprintf(req, sizeof(req), "CONNECT up.test:%u HTTP/1.1\r\n"
	    "Host: up.test:%u\r\n\r\n", port, port);
	rc = ask(sock, req, buf, sizeof(buf), &fd);
	ok(rc == 0 && strncmp(buf, "HTTP/1.1 200", 12) == 0,
	    "CONNECT to the allowed upstream: 200");
	afd = accept(lfd, NULL, NULL);
	if (fd != -1)
		close(fd);
	if (afd != -1)
		close(afd);
	rc = ask(sock, "CONNECT no.test:443 HTTP/1.1\r\nHost: no.test:443\r\n"
	    "\r\n", buf, sizeof(buf), NULL);
	ok(rc == 0 && strncmp(buf, "HTTP/1.1 403", 12) == 0,
	    "CONNECT to a host not allowed: 403");
	ok(egress_set_phase(ex, "b", "api", NULL) == 0, "phase switch");
	ok(egress_reload(ex, "api") == 0, "reload (%s)", egress_errmsg(ex));
	wait_for(&last_state->ev[EGRESS_EV_CLOSE], 1);
	wait_for(&sub_ev[EGRESS_EV_CLOSE], 1);
	for (i = 0; i < 5; i++)
		is_int(last_state->ev[i], sub_ev[i], "on_event() saw every "
		    "event of type %d a subscriber saw (%u)", i, sub_ev[i]);
	is_int(last_state->ev[EGRESS_EV_ALLOW], 1, "one ALLOW");
	is_int(last_state->ev[EGRESS_EV_BLOCK], 1, "one BLOCK");
	is_int(last_state->ev[EGRESS_EV_CLOSE], 1, "one CLOSE");
	ok(last_state->ev[EGRESS_EV_PHASE] >= 1, "the PHASE event");
	is_int(last_state->off_loop, 0, "every event on a loop thread, "
	    "none on the thread that switched the phase");
	is_int(last_state->bad_state, 0, "always with init()'s state");
	egress_stop(ex);
	egress_join(ex);
	egress_free(ex);
	is_int(ninit, 1, "init() once per proxy (reload does not re-init)");
	is_int(nfini, 1, "fini() once, in egress_free()");
	is_int(ncfg_free, ncfg_alloc, "every configuration config() built "
	    "was freed (%d)", ncfg_alloc);
	close(lfd);
	unlink(sock);
	rmdir(dir);
	return done_testing();
}
