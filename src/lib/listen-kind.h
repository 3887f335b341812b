/*
 * listen-kind.h: what a listener is (a configured listen = entry, a bound
 * socket).  Header only, so that the core's structs (core.h) need no
 * cfg.h.  Private to libegress.
 */
#ifndef EG_LISTEN_KIND_H
#define EG_LISTEN_KIND_H

enum eg_listen_kind { EG_LISTEN_TCP, EG_LISTEN_UNIX };

#endif
