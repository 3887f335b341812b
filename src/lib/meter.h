/*
 * meter.h: token usage read from a route's responses on the fly (SPEC
 * "Routes", Meter), in bounded memory: a JSON body or server-sent events,
 * fed as they pass (chunked bodies are de-chunked here), never buffered.
 * The reader follows JSON strings and nesting just enough to find the
 * numbers of the keys that matter inside a "usage" object; each later
 * value replaces the earlier one (a stream's counts are cumulative).
 */
#ifndef EG_METER_H
#define EG_METER_H

#include <stddef.h>
#include <stdint.h>

#include "routecfg.h"

struct eg_meter {
	enum eg_meter_kind kind;
	int64_t		 in, out, cached;	/* -1: not seen */
	/* de-chunking */
	int		 chunked, cst;
	uint64_t	 cleft;
	/* the JSON reader */
	int		 st;		/* reader state */
	int		 esc;
	unsigned	 depth, usage_depth;	/* 0: not in usage */
	int		 key;		/* the key just read (K_*) */
	size_t		 klen;
	char		 kbuf[32];
	uint64_t	 num;
	int		 ndig;
};

void	eg_meter_init(struct eg_meter *, enum eg_meter_kind, int chunked);
/* Body bytes as they come (the framing's, if chunked). */
void	eg_meter_feed(struct eg_meter *, const uint8_t *p, size_t n);
/* Anything seen? */
int	eg_meter_has(const struct eg_meter *);

#endif
