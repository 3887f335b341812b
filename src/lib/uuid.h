/*
 * uuid.h: random UUIDs (v4) for run ids.  Private to libegress.
 */
#ifndef EG_UUID_H
#define EG_UUID_H

/* A random UUID v4 as text; is s one (36 chars, 8-4-4-4-12 hex)? */
void	eg_uuid4(char out[37]);
int	eg_uuid_ok(const char *s);

#endif
