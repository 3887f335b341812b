/*
 * fuzz-pattern.c: parses arbitrary bytes as one allowlist pattern and, if
 * it is accepted, matches a few hosts against it, with and without the
 * phase index; both paths must agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const hosts[] = {
	"example.com", "a.example.com", "a.b.example.com", "com",
	"203.0.113.5", "10.1.2.3", "[2001:db8::1]", "[::ffff:127.0.0.1]",
	"[::1]", "xn--bcher-kva.example", "allowed.test.evil.test",
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t ports[] = { 443 };
	struct eg_phase ix, lin;
	struct eg_rule r, r2;
	struct eg_host h;
	const struct eg_rule *m1, *m2;
	const char *why;
	size_t i;

	if (eg_rule_parse((const char *)data, size, &r, NULL) == -1)
		return 0;
	/* Accepted patterns parse again to the same rule. */
	if (eg_rule_parse(r.text, strlen(r.text), &r2, NULL) == -1 ||
	    r2.kind != r.kind || r2.port != r.port ||
	    r2.prefix != r.prefix || strcmp(r2.name, r.name) != 0)
		abort();
	memset(&ix, 0, sizeof(ix));
	memset(&lin, 0, sizeof(lin));
	if (eg_phase_add(&ix, &r) == -1 || eg_phase_add(&lin, &r2) == -1)
		abort();
	if (eg_phase_finish(&ix) == -1)
		abort();
	/* The pattern's own host, then a few fixed ones. */
	for (i = 0; i <= sizeof(hosts) / sizeof(hosts[0]); i++) {
		const char *s = i == 0 ? ix.rules[0].name : hosts[i - 1];

		if (eg_host_parse(s, strlen(s), &h, &why) == -1)
			continue;
		if (eg_phase_match(&ix, &h, 443, ports, 1, &m1) !=
		    eg_phase_match(&lin, &h, 443, ports, 1, &m2))
			abort();
		if (eg_phase_match(&ix, &h, 8443, ports, 1, &m1) !=
		    eg_phase_match(&lin, &h, 8443, ports, 1, &m2))
			abort();
	}
	eg_phase_clear(&ix);
	eg_phase_clear(&lin);
	return 0;
}
