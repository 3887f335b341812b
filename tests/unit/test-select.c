/*
 * test-select.c: the address-selection step, eg_addr_select().  Mixed
 * answer lists keep their order and only the dialable addresses; every
 * non-public form is dropped under deny_private unless the operator wrote
 * it down; the loop callback drops egressd's own listeners; ports are set.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "select.h"
#include "tap.h"

#define MAXA	32

static struct sockaddr_storage addrs[MAXA];
static size_t naddrs;

static void
reset(void)
{
	memset(addrs, 0, sizeof(addrs));
	naddrs = 0;
}

/* Append an address (v4 or v6 text); port 9 so the setter is visible. */
static void
add(const char *text)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&addrs[naddrs];
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&addrs[naddrs];

	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(9);
	} else if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(9);
	} else {
		printf("Bail out! bad test address %s\n", text);
		return;
	}
	naddrs++;
}

/* The address at i as text, "" if out of range. */
static const char *
at(size_t i)
{
	static char buf[INET6_ADDRSTRLEN];

	buf[0] = '\0';
	if (addrs[i].ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&addrs[i])->sin_addr,
		    buf, sizeof(buf));
	else if (addrs[i].ss_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((struct sockaddr_in6 *)&addrs[i])->sin6_addr, buf,
		    sizeof(buf));
	return buf;
}

static unsigned
port_at(size_t i)
{
	if (addrs[i].ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&addrs[i])->sin_port);
	return ntohs(((struct sockaddr_in6 *)&addrs[i])->sin6_port);
}

/* The loop callback: the listener 127.0.0.2:3128 and [::1]:3128. */
static int loop_calls;

static int
is_loop(void *arg, const struct sockaddr *sa)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	uint16_t lport = *(uint16_t *)arg;

	loop_calls++;
	if (sa->sa_family == AF_INET)
		return ntohs(s4->sin_port) == lport &&
		    ntohl(s4->sin_addr.s_addr) == 0x7f000002;
	if (sa->sa_family == AF_INET6)
		return ntohs(s6->sin6_port) == lport &&
		    IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
	return 0;
}

/* Every non-public form SPEC names, each alone: dropped, PRIVATE. */
static const char *const nonpublic[] = {
	"0.0.0.0", "0.255.255.255", "10.0.0.1", "10.255.255.255",
	"100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.255.254",
	"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.192",
	"192.168.1.1", "198.18.0.1", "198.19.255.255", "224.0.0.1",
	"239.255.255.250", "240.0.0.1", "255.255.255.255",
	"::", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "febf::1",
	"ff02::1", "ff05::2",
	"::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1",
	"::ffff:169.254.169.254", "::ffff:100.64.0.1",
	"::127.0.0.1", "::10.0.0.1", "::a9fe:a9fe",
	"64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b::a9fe:a9fe",
	"64:ff9b::6440:1",
	"2002:7f00:1::", "2002:7f00:1::1", "2002:a00:1::1",
	"2002:c0a8:101::1", "2002:6440:1::1",
};

static const char *const public[] = {
	"198.51.100.10", "8.8.8.8", "1.1.1.1", "100.63.255.254",
	"100.128.0.1", "172.32.0.1", "192.0.1.1", "198.20.0.1",
	"223.255.255.254", "2001:db8::1", "2606:4700::1111",
	"::ffff:8.8.8.8", "2002:808:808::1",
};

int
main(void)
{
	enum eg_select r;
	size_t left, i;
	uint16_t lport = 3128;

	/* mixed list: order kept, only the public ones */
	reset();
	add("127.0.0.1");
	add("198.51.100.10");
	add("10.0.0.1");
	add("::1");
	add("2001:db8::1");
	add("::ffff:127.0.0.1");
	add("8.8.8.8");
	add("64:ff9b::7f00:1");
	r = eg_addr_select(addrs, naddrs, 443, 1, 0, NULL, NULL, &left);
	is_int(r, EG_SELECT_OK, "mixed list: OK");
	is_int(left, 3, "mixed list: three public addresses left");
	is_str(at(0), "198.51.100.10", "mixed list: first public first");
	is_str(at(1), "2001:db8::1", "mixed list: v6 public second");
	is_str(at(2), "8.8.8.8", "mixed list: last public last");
	for (i = 0; i < left; i++)
		is_int(port_at(i), 443, "mixed list: port set on %s", at(i));

	/* each non-public form alone */
	for (i = 0; i < sizeof(nonpublic) / sizeof(nonpublic[0]); i++) {
		reset();
		add(nonpublic[i]);
		r = eg_addr_select(addrs, naddrs, 443, 1, 0, NULL, NULL,
		    &left);
		ok(r == EG_SELECT_PRIVATE && left == 0,
		    "%s dropped under deny_private", nonpublic[i]);
		reset();
		add(nonpublic[i]);
		r = eg_addr_select(addrs, naddrs, 443, 1, 1, NULL, NULL,
		    &left);
		ok(r == EG_SELECT_OK && left == 1 && port_at(0) == 443,
		    "%s kept when trusted", nonpublic[i]);
		reset();
		add(nonpublic[i]);
		r = eg_addr_select(addrs, naddrs, 443, 0, 0, NULL, NULL,
		    &left);
		ok(r == EG_SELECT_OK && left == 1,
		    "%s kept without deny_private", nonpublic[i]);
	}
	for (i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		reset();
		add(public[i]);
		r = eg_addr_select(addrs, naddrs, 8443, 1, 0, NULL, NULL,
		    &left);
		ok(r == EG_SELECT_OK && left == 1 && port_at(0) == 8443,
		    "%s is public: kept, port 8443", public[i]);
	}

	/* all non-public: PRIVATE, nothing left */
	reset();
	for (i = 0; i < sizeof(nonpublic) / sizeof(nonpublic[0]) &&
	    naddrs < MAXA; i++)
		add(nonpublic[i]);
	r = eg_addr_select(addrs, naddrs, 443, 1, 0, NULL, NULL, &left);
	is_int(r, EG_SELECT_PRIVATE, "%zu non-public addresses: PRIVATE",
	    naddrs);
	is_int(left, 0, "... none left");

	/* trusted keeps the whole list, in order */
	reset();
	add("127.0.0.3");
	add("10.1.2.3");
	add("::1");
	r = eg_addr_select(addrs, naddrs, 80, 1, 1, NULL, NULL, &left);
	ok(r == EG_SELECT_OK && left == 3, "trusted: all three kept");
	is_str(at(0), "127.0.0.3", "trusted: order kept (0)");
	is_str(at(2), "::1", "trusted: order kept (2)");

	/* the loop callback: own listeners go, even when trusted */
	reset();
	add("127.0.0.2");
	add("::1");
	loop_calls = 0;
	r = eg_addr_select(addrs, naddrs, lport, 1, 1, is_loop, &lport,
	    &left);
	is_int(r, EG_SELECT_LOOP, "all loops: LOOP");
	is_int(left, 0, "all loops: none left");
	is_int(loop_calls, 2, "the callback saw every address");

	reset();
	add("127.0.0.2");
	add("127.0.0.3");
	r = eg_addr_select(addrs, naddrs, lport, 1, 1, is_loop, &lport,
	    &left);
	ok(r == EG_SELECT_OK && left == 1, "loop dropped, other kept");
	is_str(at(0), "127.0.0.3", "... the non-loop address is left");
	is_int(port_at(0), lport, "... with the port set");

	reset();
	add("127.0.0.2");
	r = eg_addr_select(addrs, naddrs, lport + 1, 1, 1, is_loop, &lport,
	    &left);
	ok(r == EG_SELECT_OK && left == 1,
	    "same address, another port: not a loop");

	/* a loop and a private address (untrusted): LOOP wins the reason */
	reset();
	add("127.0.0.2");
	add("10.0.0.1");
	r = eg_addr_select(addrs, naddrs, lport, 1, 0, is_loop, &lport,
	    &left);
	ok(r == EG_SELECT_LOOP || r == EG_SELECT_PRIVATE,
	    "loop + private: refused (%d)", (int)r);
	is_int(left, 0, "loop + private: none left");

	/* a loop plus a public address: the public one only */
	reset();
	add("::1");
	add("2001:db8::5");
	r = eg_addr_select(addrs, naddrs, lport, 1, 0, is_loop, &lport,
	    &left);
	ok(r == EG_SELECT_OK && left == 1, "v6 loop dropped, public kept");
	is_str(at(0), "2001:db8::5", "... the public v6 address");
	is_int(port_at(0), lport, "... port set on v6");

	/* a non-IP family is never dialable */
	reset();
	addrs[0].ss_family = AF_UNIX;
	naddrs = 1;
	add("198.51.100.10");
	r = eg_addr_select(addrs, naddrs, 443, 0, 1, NULL, NULL, &left);
	ok(r == EG_SELECT_OK && left == 1, "AF_UNIX entry skipped");
	is_str(at(0), "198.51.100.10", "... the IP address is left");

	/* an empty list */
	r = eg_addr_select(addrs, 0, 443, 1, 0, NULL, NULL, &left);
	ok(r != EG_SELECT_OK && left == 0, "empty list: refused");

	return done_testing();
}
