/*
 * clock.h: the clocks, in ms or us: monotonic for timeouts and rates,
 * wall for timestamps.  A leaf (no state of the proxy): the modules use
 * it too (replay's receipts and run.json).
 */
#ifndef EG_CLOCK_H
#define EG_CLOCK_H

#include <stdint.h>

uint64_t	 eg_clock_ms(void);			/* monotonic, ms */
int64_t		 eg_wall_ms(void);			/* wall clock, ms */
uint64_t	 eg_clock_us(void);			/* monotonic, us */

#endif
