/*
 * proxylog.h: the log callback of the commands that run the proxy in
 * their own process (egressd run, egressd replay): warnings and errors
 * go to stderr, each line after the prefix given as the callback's arg.
 */
#ifndef MC_PROXYLOG_H
#define MC_PROXYLOG_H

/* An egress_log_cb; arg: the prefix (a const char *, "egressd: "). */
void	mc_proxy_log(int level, const char *msg, void *arg);

#endif
