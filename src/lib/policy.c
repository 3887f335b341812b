/*
 * policy.c: allowlist patterns and their matching.  A pattern is parsed
 * once into a struct eg_rule; a phase's rules are then indexed in two
 * open-addressing hash tables (exact names, wildcard suffixes) and two
 * short CIDR lists, so a decision costs a few hash probes whatever the
 * size of the allowlist.
 */
#include "egress-int.h"

#include <arpa/inet.h>

#include "host.h"
#include "policy.h"

#define PATTERN_MAX	300	/* longest pattern text accepted */
#define NO_RULE		UINT32_MAX

/*
 * One slot of a hash table: the hash of a name and the first rule (in
 * file order) carrying that name; further rules with the same name follow
 * through the index's next[] chain, also in file order.
 */
struct slot {
	uint64_t	hash;
	uint32_t	head;		/* NO_RULE: empty slot */
};

struct table {
	struct slot	*slot;
	size_t		 mask;		/* size - 1, size a power of 2 */
};

struct eg_phase_index {
	struct table	 exact;		/* EG_RULE_EXACT, by name */
	struct table	 suffix;	/* SUB and APEX_SUB, by suffix */
	uint32_t	*next;		/* per rule: next, same name */
	uint32_t	*v4;		/* V4 rules, file order */
	size_t		 nv4;
	uint32_t	*v6;		/* V6 rules, file order */
	size_t		 nv6;
};

/* FNV-1a: short keys, no adversarial influence on the table's content. */
static uint64_t
name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Untrusted text for a message, at most 64 bytes (see eg_quote()). */
static const char *
quote(const char *s, size_t len, char *buf, size_t cap)
{
	return eg_quote(s, len, 64, buf, cap);
}

static int
bad_pattern(struct eg_err *err, const char *s, size_t len, const char *why)
{
	char q[300];

	return eg_err_set(err, EINVAL, "bad pattern '%s': %s",
	    quote(s, len, q, sizeof(q)), why);
}

/* Parse a CIDR prefix length (decimal, no sign, no leading zero). */
static int
prefix_parse(const char *s, size_t len, int max, int *out)
{
	size_t i;
	int v = 0;

	if (len == 0 || len > 3 || (s[0] == '0' && len > 1))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v > max)
		return -1;
	*out = v;
	return 0;
}

/* Do the bits of addr (nbytes long) beyond prefix all equal zero? */
static int
host_bits_zero(const unsigned char *addr, size_t nbytes, int prefix)
{
	size_t i;
	unsigned char m;

	for (i = 0; i < nbytes; i++) {
		if ((int)(i * 8) >= prefix)
			m = 0xff;
		else if ((int)(i * 8) + 8 <= prefix)
			m = 0;
		else
			m = (unsigned char)(0xff >> (prefix - (int)i * 8));
		if (addr[i] & m)
			return 0;
	}
	return 1;
}

/* Does addr fall in net/prefix (nbytes long)? */
static int
in_prefix(const unsigned char *addr, const unsigned char *net,
    int prefix)
{
	size_t full = (size_t)prefix / 8;
	int rest = prefix % 8;
	unsigned char m;

	if (memcmp(addr, net, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	m = (unsigned char)(0xff << (8 - rest));
	return (addr[full] & m) == (net[full] & m);
}

static size_t
count_labels(const char *s, size_t len)
{
	size_t i, n = 1;

	for (i = 0; i < len; i++)
		if (s[i] == '.')
			n++;
	return n;
}

int
eg_rule_parse(const char *s, size_t len, struct eg_rule *r,
    struct eg_err *err)
{
	struct eg_host h;
	const char *why, *host, *end, *slash = NULL, *colon = NULL, *p;
	size_t hostlen, i;
	enum eg_rule_kind kind = EG_RULE_EXACT;
	uint16_t port = 0;
	int prefix = -1;

	memset(r, 0, sizeof(*r));
	if (s == NULL || len == 0)
		return bad_pattern(err, "", 0, "empty pattern");
	if (len > PATTERN_MAX)
		return bad_pattern(err, s, len, "pattern too long");
	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return bad_pattern(err, s, len,
			    "only printable ASCII without spaces is allowed");
	}
	end = s + len;

	/* Split host [/prefix] [:port]; brackets protect IPv6 colons. */
	if (s[0] == '[') {
		p = memchr(s, ']', len);
		if (p == NULL)
			return bad_pattern(err, s, len, "missing ']'");
		p++;
		host = s;
		hostlen = (size_t)(p - s);
		if (p < end && *p == '/') {
			slash = p;
			p++;
			while (p < end && *p != ':')
				p++;
		}
		if (p < end) {
			if (*p != ':')
				return bad_pattern(err, s, len,
				    "unexpected text after ']'");
			colon = p;
		}
	} else {
		colon = memchr(s, ':', len);
		if (colon != NULL && memchr(colon + 1, ':', (size_t)(end -
		    colon - 1)) != NULL)
			return bad_pattern(err, s, len,
			    "IPv6 addresses must be in brackets");
		slash = memchr(s, '/', colon ? (size_t)(colon - s) : len);
		host = s;
		if (slash != NULL)
			hostlen = (size_t)(slash - s);
		else
			hostlen = colon ? (size_t)(colon - s) : len;
	}
	if (colon != NULL && eg_port_parse(colon + 1,
	    (size_t)(end - colon - 1), &port) == -1)
		return bad_pattern(err, s, len, "bad port (1-65535)");
	if (slash != NULL) {
		p = colon ? colon : end;
		if (prefix_parse(slash + 1, (size_t)(p - slash - 1),
		    s[0] == '[' ? 128 : 32, &prefix) == -1)
			return bad_pattern(err, s, len, s[0] == '[' ?
			    "bad prefix length (0-128)" :
			    "bad prefix length (0-32)");
	}

	/* Wildcards: only "*." or "**." as the whole first label. */
	if (hostlen >= 3 && memcmp(host, "**.", 3) == 0) {
		kind = EG_RULE_APEX_SUB;
		host += 3;
		hostlen -= 3;
	} else if (hostlen >= 2 && memcmp(host, "*.", 2) == 0) {
		kind = EG_RULE_SUB;
		host += 2;
		hostlen -= 2;
	} else if ((hostlen == 1 && host[0] == '*') ||
	    (hostlen == 2 && host[0] == '*' && host[1] == '*')) {
		return bad_pattern(err, s, len,
		    "a wildcard needs at least two labels after it");
	}
	if (memchr(host, '*', hostlen) != NULL)
		return bad_pattern(err, s, len,
		    "a wildcard may only be the whole first label");
	if (hostlen == 0)
		return bad_pattern(err, s, len, kind == EG_RULE_EXACT ?
		    "empty host" :
		    "a wildcard needs at least two labels after it");
	if (eg_host_parse(host, hostlen, &h, &why) == -1)
		return bad_pattern(err, s, len, why);

	if (kind != EG_RULE_EXACT) {
		if (h.kind != EG_HOST_NAME)
			return bad_pattern(err, s, len,
			    "a wildcard applies to names, not addresses");
		if (count_labels(h.name, h.len) < 2)
			return bad_pattern(err, s, len,
			    "a wildcard needs at least two labels after it");
	}
	if (prefix >= 0 && h.kind == EG_HOST_NAME)
		return bad_pattern(err, s, len,
		    "a prefix length needs an IP address");

	if (h.kind != EG_HOST_NAME) {
		/* an address: 4 or 16 bytes at the start of the union */
		size_t nb = h.kind == EG_HOST_V4 ? 4 : 16;

		kind = h.kind == EG_HOST_V4 ? EG_RULE_V4 : EG_RULE_V6;
		if (prefix < 0)
			prefix = (int)nb * 8;
		if (!host_bits_zero((const unsigned char *)&h.ip, nb, prefix))
			return bad_pattern(err, s, len,
			    "host bits set beyond the prefix length");
		memcpy(&r->ip, &h.ip, nb);
	}

	r->kind = kind;
	r->port = port;
	r->prefix = prefix < 0 ? 0 : prefix;
	r->text = eg_strndup(s, len);
	r->name = eg_strndup(h.name, h.len);
	r->namelen = h.len;
	if (r->text == NULL || r->name == NULL) {
		eg_rule_clear(r);
		return eg_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

void
eg_rule_clear(struct eg_rule *r)
{
	if (r == NULL)
		return;
	eg_free(r->text);
	eg_free(r->name);
	memset(r, 0, sizeof(*r));
}

static void
index_free(struct eg_phase_index *ix)
{
	if (ix == NULL)
		return;
	eg_free(ix->exact.slot);
	eg_free(ix->suffix.slot);
	eg_free(ix->next);
	eg_free(ix->v4);
	eg_free(ix->v6);
	eg_free(ix);
}

int
eg_phase_add(struct eg_phase *p, struct eg_rule *r)
{
	struct eg_rule *nr;
	size_t cap;

	/*
	 * Rules are indexed with 32-bit numbers.  The array's capacity is
	 * the next power of two, so it grows when nrules is one.
	 */
	if (p->nrules >= (size_t)UINT32_MAX - 1)
		return -1;
	if ((p->nrules & (p->nrules - 1)) == 0) {
		cap = p->nrules ? p->nrules * 2 : 1;
		nr = eg_reallocarray(p->rules, cap, sizeof(*nr));
		if (nr == NULL)
			return -1;
		p->rules = nr;
	}
	p->rules[p->nrules++] = *r;
	memset(r, 0, sizeof(*r));
	/* Any index built before is stale now. */
	index_free(p->index);
	p->index = NULL;
	return 0;
}

static int
table_init(struct table *t, size_t n)
{
	size_t size = 8, i;

	/* Load factor at most one half keeps probe runs short. */
	while (size < n * 2)
		size *= 2;
	t->slot = eg_calloc(size, sizeof(*t->slot));
	if (t->slot == NULL)
		return -1;
	for (i = 0; i < size; i++)
		t->slot[i].head = NO_RULE;
	t->mask = size - 1;
	return 0;
}

/* Find the slot for name, or the empty slot where it would go. */
static struct slot *
table_slot(const struct table *t, const struct eg_rule *rules,
    const char *name, size_t len, uint64_t hv)
{
	struct slot *sl;
	const struct eg_rule *r;
	size_t i = (size_t)hv & t->mask;

	for (;;) {
		sl = &t->slot[i];
		if (sl->head == NO_RULE)
			return sl;
		r = &rules[sl->head];
		if (sl->hash == hv && r->namelen == len &&
		    memcmp(r->name, name, len) == 0)
			return sl;
		i = (i + 1) & t->mask;
	}
}

static void
table_insert(struct table *t, struct eg_phase_index *ix,
    const struct eg_rule *rules, uint32_t *tail, uint32_t idx)
{
	const struct eg_rule *r = &rules[idx];
	uint64_t hv = name_hash(r->name, r->namelen);
	struct slot *sl;

	sl = table_slot(t, rules, r->name, r->namelen, hv);
	if (sl->head == NO_RULE) {
		sl->hash = hv;
		sl->head = idx;
	} else
		ix->next[tail[sl->head]] = idx;
	/* tail[] is kept for chain heads only: the chain's last rule. */
	tail[sl->head] = idx;
}

int
eg_phase_finish(struct eg_phase *p)
{
	struct eg_phase_index *ix;
	uint32_t *tail = NULL;
	size_t i, nexact = 0, nsuffix = 0;

	index_free(p->index);
	p->index = NULL;
	ix = eg_calloc(1, sizeof(*ix));
	if (ix == NULL)
		return -1;
	for (i = 0; i < p->nrules; i++) {
		switch (p->rules[i].kind) {
		case EG_RULE_EXACT:
			nexact++;
			break;
		case EG_RULE_SUB:
		case EG_RULE_APEX_SUB:
			nsuffix++;
			break;
		case EG_RULE_V4:
			ix->nv4++;
			break;
		case EG_RULE_V6:
			ix->nv6++;
			break;
		}
	}
	ix->next = eg_calloc(p->nrules + 1, sizeof(*ix->next));
	tail = eg_calloc(p->nrules + 1, sizeof(*tail));
	ix->v4 = eg_calloc(ix->nv4 + 1, sizeof(*ix->v4));
	ix->v6 = eg_calloc(ix->nv6 + 1, sizeof(*ix->v6));
	if (ix->next == NULL || tail == NULL || ix->v4 == NULL ||
	    ix->v6 == NULL || table_init(&ix->exact, nexact) == -1 ||
	    table_init(&ix->suffix, nsuffix) == -1) {
		eg_free(tail);
		index_free(ix);
		return -1;
	}
	ix->nv4 = ix->nv6 = 0;
	for (i = 0; i < p->nrules; i++) {
		ix->next[i] = NO_RULE;
		switch (p->rules[i].kind) {
		case EG_RULE_EXACT:
			table_insert(&ix->exact, ix, p->rules, tail,
			    (uint32_t)i);
			break;
		case EG_RULE_SUB:
		case EG_RULE_APEX_SUB:
			table_insert(&ix->suffix, ix, p->rules, tail,
			    (uint32_t)i);
			break;
		case EG_RULE_V4:
			ix->v4[ix->nv4++] = (uint32_t)i;
			break;
		case EG_RULE_V6:
			ix->v6[ix->nv6++] = (uint32_t)i;
			break;
		}
	}
	eg_free(tail);
	p->index = ix;
	return 0;
}

void
eg_phase_clear(struct eg_phase *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nrules; i++)
		eg_rule_clear(&p->rules[i]);
	eg_free(p->rules);
	eg_strv_free(p->routes, p->nroutes);
	eg_free(p->route_lines);
	eg_free(p->name);
	eg_free(p->hint);
	index_free(p->index);
	memset(p, 0, sizeof(*p));
}

static int
port_ok(const struct eg_rule *r, uint16_t port, const uint16_t *ports,
    size_t nports)
{
	size_t i;

	if (r->port != 0)
		return r->port == port;
	for (i = 0; i < nports; i++)
		if (ports[i] == port)
			return 1;
	return 0;
}

/* Does rule r name host h (ports aside)? */
static int
rule_names(const struct eg_rule *r, const struct eg_host *h)
{
	size_t off;

	switch (r->kind) {
	case EG_RULE_EXACT:
		return h->kind == EG_HOST_NAME && h->len == r->namelen &&
		    memcmp(h->name, r->name, h->len) == 0;
	case EG_RULE_SUB:
	case EG_RULE_APEX_SUB:
		if (h->kind != EG_HOST_NAME)
			return 0;
		if (h->len == r->namelen)
			return r->kind == EG_RULE_APEX_SUB &&
			    memcmp(h->name, r->name, h->len) == 0;
		if (h->len < r->namelen + 2)
			return 0;
		off = h->len - r->namelen;
		return h->name[off - 1] == '.' &&
		    memcmp(h->name + off, r->name, r->namelen) == 0;
	case EG_RULE_V4:
		return h->kind == EG_HOST_V4 &&
		    in_prefix((const unsigned char *)&h->ip.v4,
		    (const unsigned char *)&r->ip.v4, r->prefix);
	case EG_RULE_V6:
		return h->kind == EG_HOST_V6 &&
		    in_prefix((const unsigned char *)&h->ip.v6,
		    (const unsigned char *)&r->ip.v6, r->prefix);
	}
	return 0;
}

/* The reference semantics, used when no index was built. */
static enum eg_match
match_linear(const struct eg_phase *p, const struct eg_host *h,
    uint16_t port, const uint16_t *ports, size_t nports,
    const struct eg_rule **rule)
{
	size_t i;
	int named = 0;

	for (i = 0; i < p->nrules; i++) {
		if (!rule_names(&p->rules[i], h))
			continue;
		named = 1;
		if (port_ok(&p->rules[i], port, ports, nports)) {
			*rule = &p->rules[i];
			return EG_MATCH_ALLOW;
		}
	}
	return named ? EG_MATCH_PORT_NOT_ALLOWED : EG_MATCH_NOT_ALLOWED;
}

struct pick {
	uint32_t	best;		/* lowest allowing rule so far */
	int		named;		/* some rule names the host */
};

/*
 * Walk the chain of rules sharing one name (file order); apex tells
 * whether the host is the name itself, where "*." rules do not apply.
 */
static void
pick_chain(struct pick *pk, const struct eg_phase *p, uint32_t i,
    int apex, uint16_t port, const uint16_t *ports, size_t nports)
{
	const struct eg_rule *r;

	for (; i != NO_RULE && i < pk->best; i = p->index->next[i]) {
		r = &p->rules[i];
		if (apex && r->kind == EG_RULE_SUB)
			continue;
		pk->named = 1;
		if (port_ok(r, port, ports, nports)) {
			pk->best = i;
			return;
		}
	}
}

static uint32_t
table_find(const struct table *t, const struct eg_rule *rules,
    const char *name, size_t len)
{
	return table_slot(t, rules, name, len, name_hash(name, len))->head;
}

enum eg_match
eg_phase_match(const struct eg_phase *p, const struct eg_host *h,
    uint16_t port, const uint16_t *ports, size_t nports,
    const struct eg_rule **rule)
{
	const struct eg_phase_index *ix = p->index;
	const uint32_t *list;
	struct pick pk;
	size_t i, n;

	*rule = NULL;
	if (ix == NULL)
		return match_linear(p, h, port, ports, nports, rule);
	pk.best = NO_RULE;
	pk.named = 0;
	switch (h->kind) {
	case EG_HOST_NAME:
		pick_chain(&pk, p, table_find(&ix->exact, p->rules, h->name,
		    h->len), 0, port, ports, nports);
		pick_chain(&pk, p, table_find(&ix->suffix, p->rules,
		    h->name, h->len), 1, port, ports, nports);
		/* Every proper suffix that starts after a dot. */
		for (i = 0; i < h->len; i++) {
			if (h->name[i] != '.')
				continue;
			pick_chain(&pk, p, table_find(&ix->suffix, p->rules,
			    h->name + i + 1, h->len - i - 1), 0, port, ports,
			    nports);
		}
		break;
	case EG_HOST_V4:
	case EG_HOST_V6:
		list = h->kind == EG_HOST_V4 ? ix->v4 : ix->v6;
		n = h->kind == EG_HOST_V4 ? ix->nv4 : ix->nv6;
		for (i = 0; i < n; i++) {
			if (!rule_names(&p->rules[list[i]], h))
				continue;
			pk.named = 1;
			if (port_ok(&p->rules[list[i]], port, ports, nports)) {
				pk.best = list[i];
				break;
			}
		}
		break;
	}
	if (pk.best != NO_RULE) {
		*rule = &p->rules[pk.best];
		return EG_MATCH_ALLOW;
	}
	return pk.named ? EG_MATCH_PORT_NOT_ALLOWED : EG_MATCH_NOT_ALLOWED;
}

enum eg_match
eg_phase_decide(const struct eg_phase *p, const struct eg_host *h,
    uint16_t port, const uint16_t *ports, size_t nports,
    const struct eg_rule **rule, int *report)
{
	enum eg_match m;

	*rule = NULL;
	*report = 0;
	m = eg_phase_match(p, h, port, ports, nports, rule);
	if (m != EG_MATCH_ALLOW && p->report) {
		*rule = NULL;
		*report = 1;
		m = EG_MATCH_ALLOW;
	}
	return m;
}
