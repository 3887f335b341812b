/*
 * test-ownaddr.c: the loop test, eg_ownaddr_is_own().  Every spelling of
 * an own address is own: the address itself, its IPv4-mapped IPv6 form,
 * the unspecified addresses (0.0.0.0, ::), and for a wildcard listener
 * all of loopback (127/8, ::1) and every interface address; the same
 * address on another port, and other hosts, are not.  Also references.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ownaddr.h"
#include "tap.h"

/* "ADDR" with port into *ss (v4 or v6 text). */
static struct sockaddr_storage
sa(const char *text, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	} else
		printf("Bail out! bad test address %s\n", text);
	return ss;
}

static int
own(const struct eg_ownaddr *o, const char *text, int port)
{
	struct sockaddr_storage ss = sa(text, port);

	return eg_ownaddr_is_own(o, (struct sockaddr *)&ss);
}

#define OWN(o, a, p)	ok(own(o, a, p) == 1, "%s:%d is own", a, p)
#define NOT(o, a, p)	ok(own(o, a, p) == 0, "%s:%d is not own", a, p)

int
main(void)
{
	struct sockaddr_storage ls[4], ifs[3];
	struct eg_ownaddr *o;

	/* a specific v4 listener, a specific v6 listener */
	ls[0] = sa("127.0.0.2", 8080);
	ls[1] = sa("::1", 8081);
	ifs[0] = sa("198.51.100.10", 0);
	ifs[1] = sa("2001:db8::10", 0);
	o = eg_ownaddr_new(ls, 2, ifs, 2);
	ok(o != NULL, "snapshot built");
	OWN(o, "127.0.0.2", 8080);
	OWN(o, "::ffff:127.0.0.2", 8080);
	OWN(o, "0.0.0.0", 8080);
	OWN(o, "::", 8080);
	OWN(o, "::ffff:0.0.0.0", 8080);
	OWN(o, "::1", 8081);
	OWN(o, "::", 8081);
	OWN(o, "0.0.0.0", 8081);
	NOT(o, "127.0.0.2", 8081);
	NOT(o, "127.0.0.3", 8080);	/* not a wildcard: exact only */
	NOT(o, "127.0.0.1", 8080);
	NOT(o, "198.51.100.10", 8080);
	NOT(o, "::2", 8081);
	NOT(o, "0.0.0.0", 9);
	NOT(o, "::", 9);
	NOT(o, "::ffff:127.0.0.2", 9);
	eg_ownaddr_unref(o);

	/* wildcards: 0.0.0.0 and [::] (IPV6_V6ONLY) */
	ls[0] = sa("0.0.0.0", 3128);
	ls[1] = sa("::", 3129);
	ls[2] = sa("192.0.2.1", 9000);	/* e.g. the admin API */
	ifs[0] = sa("198.51.100.10", 0);
	ifs[1] = sa("2001:db8::10", 0);
	ifs[2] = sa("fe80::1", 0);
	o = eg_ownaddr_new(ls, 3, ifs, 3);
	OWN(o, "127.0.0.1", 3128);
	OWN(o, "127.0.0.77", 3128);
	OWN(o, "127.255.255.254", 3128);
	OWN(o, "::ffff:127.0.0.2", 3128);
	OWN(o, "::ffff:198.51.100.10", 3128);
	OWN(o, "198.51.100.10", 3128);
	OWN(o, "0.0.0.0", 3128);
	OWN(o, "::", 3128);
	NOT(o, "198.51.100.11", 3128);
	NOT(o, "128.0.0.1", 3128);
	NOT(o, "2001:db8::10", 3128);	/* v4 wildcard, v6 address */
	NOT(o, "::1", 3128);
	OWN(o, "::1", 3129);
	OWN(o, "2001:db8::10", 3129);
	OWN(o, "fe80::1", 3129);
	OWN(o, "::", 3129);
	NOT(o, "2001:db8::11", 3129);
	NOT(o, "127.0.0.1", 3129);	/* v6-only wildcard */
	OWN(o, "192.0.2.1", 9000);
	OWN(o, "::ffff:192.0.2.1", 9000);
	OWN(o, "0.0.0.0", 9000);
	NOT(o, "127.0.0.1", 9000);
	NOT(o, "127.0.0.1", 3130);

	/* references: the snapshot lives while one is held */
	ok(eg_ownaddr_ref(o) == o, "ref returns the snapshot");
	eg_ownaddr_unref(o);
	OWN(o, "127.0.0.1", 3128);	/* still held once (ASan would see) */
	eg_ownaddr_unref(o);

	/* an empty snapshot, NULL, other families */
	o = eg_ownaddr_new(NULL, 0, NULL, 0);
	ok(o != NULL, "empty snapshot");
	NOT(o, "0.0.0.0", 80);
	eg_ownaddr_unref(o);
	NOT(NULL, "127.0.0.1", 80);
	ls[0].ss_family = AF_UNIX;
	o = eg_ownaddr_new(ls, 1, NULL, 0);
	NOT(o, "0.0.0.0", 3128);
	eg_ownaddr_unref(o);
	eg_ownaddr_ref(NULL);
	eg_ownaddr_unref(NULL);
	return done_testing();
}
