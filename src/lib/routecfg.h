/*
 * routecfg.h: a credential route's configuration (SPEC "Routes").  A
 * [route:NAME] section becomes a struct eg_route in the configuration
 * snapshot (routecfg.c): its upstream, the header lines egressd adds
 * (their values kept in locked memory that core dumps leave out, wiped
 * when the snapshot is freed), the calls it allows, the headers it
 * strips, its TLS trust, the variables a sandbox gets, and its meter.
 * The request path is route.h's.  Private to libegress.
 */
#ifndef EG_ROUTECFG_H
#define EG_ROUTECFG_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"

#define EG_ROUTE_NAME_MAX	64
#define EG_ROUTE_PLACEHOLDER	"egressd-route"

struct eg_cfg;
struct eg_phase;
struct eg_tls_conf;

enum eg_meter_kind { EG_METER_NONE, EG_METER_ANTHROPIC, EG_METER_OPENAI };

struct eg_route_hdr {
	char		*name;		/* as written */
	size_t		 name_len;
	const char	*value;		/* in the route's locked region */
	size_t		 value_len;
	int		 line;
};

struct eg_route_allow {
	char		 method[24];	/* "*": any */
	char		*path;		/* "/v1/messages"; ending '/': prefix */
	size_t		 path_len;
};

struct eg_route {
	char			*name;
	char			 rule[EG_ROUTE_NAME_MAX + 7];	/* route:NAME */
	int			 line;		/* of [route:NAME] */
	int			 https;
	struct eg_host		 host;
	uint16_t		 port;
	char			*authority;	/* Host: "h" or "h:port" */
	int			 upstream_line;
	struct eg_route_hdr	*hdr;		size_t nhdr;
	struct eg_route_allow	*allow;		size_t nallow;
	char			**strip;	size_t nstrip;
	char			*ca_file;	/* NULL: the system bundle */
	struct eg_tls_conf	*tls;		/* https: built at finish */
	char			*env, *placeholder;
	enum eg_meter_kind	 meter;
	uint64_t		 max_request_bytes;
	char			*cred;		/* "x-api-key,anthropic-version" */
	/* header values: one mapping, mlock()ed where allowed, MADV_DONTDUMP */
	void			*secret;
	size_t			 secret_len;
	char			**pending;	/* values until finish (heap) */
	size_t			*pending_len;
};

#define EG_ROUTE_CA_DEFAULT	"/etc/ssl/certs/ca-certificates.crt"

/* routecfg.c: what cfg.c calls while parsing.  Messages without FILE:LINE. */
/* A new [route:NAME] in cfg; -1 with msg (bad or duplicate name). */
int	eg_route_section(struct eg_cfg *, const char *name, size_t len,
	    int line, char *msg, size_t msglen);
/* One key of the last route; -1 with msg. */
int	eg_route_key(struct eg_route *, const char *key, const char *val,
	    int line, char *msg, size_t msglen);
/* After the file: upstream given, TLS trust loaded, values locked.
 * -1 with msg and *line the line it concerns. */
int	eg_route_finish(struct eg_route *, char *msg, size_t msglen,
	    int *line);
void	eg_routes_free(struct eg_route *, size_t);
const struct eg_route *eg_cfg_route(const struct eg_cfg *, const char *name,
	    size_t len);
/* Add route:NAME (name[0..len)) to a phase's allow list; 0 or -1
 * (ENOMEM). */
int	eg_phase_add_route(struct eg_phase *, const char *name, size_t len,
	    int line);
/* Does phase allow route:NAME? */
int	eg_phase_allows_route(const struct eg_phase *, const char *name);
/* Does the route allow METHOD on path[0..len) (no query)? */
int	eg_route_allows(const struct eg_route *, const char *method,
	    const char *path, size_t len);
/*
 * Is path[0..len) (the part after /NAME, query excluded) one that could
 * mean another after normalisation: a '.' or '..' segment (also
 * percent-encoded), %2F or %5C, '//', '\', a control byte or NUL?
 * Returns the reason, or NULL for a clean path.
 */
const char *eg_route_path_bad(const char *path, size_t len);

#endif
