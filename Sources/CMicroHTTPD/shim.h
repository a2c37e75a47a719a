#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
// GNU libmicrohttpd (Debian: libmicrohttpd-dev, 0.9.75): the HTTP/1.1 server under `catalog serve`
// (docs/serve.md §1). MHD_start_daemon and MHD_get_connection_info are variadic, which Swift cannot
// call: the two wrappers below pass fixed arguments on. One more helper sums the sizes of the headers MHD
// parsed (its iterator is a C callback), for the header bound of docs/serve.md §3. Nothing else is wrapped.
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// Starts a daemon on `addr` with the options serve uses; NULL when it cannot (port taken, ...).
static inline struct MHD_Daemon *catalog_mhd_start(
    unsigned int flags, const struct sockaddr_in *addr, unsigned int threads, unsigned int connection_limit,
    unsigned int connection_timeout, size_t memory_limit, MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls, MHD_NotifyConnectionCallback notify,
    void *notify_cls, MHD_LogCallback logger, void *logger_cls) {
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, (void *)addr},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, notify_cls},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)logger, logger_cls},
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, (intptr_t)threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// The connection's socket (for the header and body deadlines, docs/serve.md §3), or -1.
static inline int catalog_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

static enum MHD_Result catalog_mhd_add_header_size(
    void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    (void)key;
    (void)value;
    // A header line: name, ": ", value, CRLF.
    *(size_t *)cls += key_size + value_size + 4;
    return MHD_YES;
}

/// The bytes of the request's header lines and query arguments as MHD parsed them (names, values and
/// their separators).
static inline size_t catalog_mhd_header_bytes(struct MHD_Connection *connection) {
    size_t total = 0;
    MHD_get_connection_values_n(
        connection, (enum MHD_ValueKind)(MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND), catalog_mhd_add_header_size, &total);
    return total;
}

/// The port the daemon listens on (for --listen 127.0.0.1:0).
static inline int catalog_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? -1 : (int)info->port;
}
#endif
