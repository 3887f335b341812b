/*
 * fuzz-session-body.c: parses arbitrary bytes as a POST /v1/sessions body
 * (sessbody.h).  An accepted body must hold a valid session name,
 * NUL-terminated strings inside the arena, and per-phase pattern lists
 * that end in NULL within the pointer table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sessbody.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
in_arena(const struct eg_sess_body *b, const char *s)
{
	if (s < b->arena || s >= b->arena + sizeof(b->arena) ||
	    memchr(s, '\0', (size_t)(b->arena + sizeof(b->arena) - s)) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct eg_sess_body b;
	char why[256];
	size_t i, j;

	if (eg_sess_body_parse((const char *)data, size, &b, why,
	    sizeof(why)) == -1) {
		if (memchr(why, '\0', sizeof(why)) == NULL || why[0] == '\0')
			abort();	/* every refusal says why */
		return 0;
	}
	if (!eg_session_name_ok(b.name, strlen(b.name)))
		abort();
	if (b.phase[0] != '\0' && !eg_phase_name_ok(b.phase,
	    strlen(b.phase)))
		abort();
	if (b.nphases > EG_SB_PHASES_MAX)
		abort();
	for (i = 0; i < b.nphases; i++) {
		in_arena(&b, b.phases[i].name);
		if (!eg_phase_name_ok(b.phases[i].name,
		    strlen(b.phases[i].name)))
			abort();
		for (j = 0; ; j++) {
			if (b.phases[i].allow + j >= b.ptrs +
			    sizeof(b.ptrs) / sizeof(b.ptrs[0]))
				abort();
			if (b.phases[i].allow[j] == NULL)
				break;
			in_arena(&b, b.phases[i].allow[j]);
		}
	}
	return 0;
}
