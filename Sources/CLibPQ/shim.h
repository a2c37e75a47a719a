#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>

// The PG_DIAG_* field codes are character-literal macros ('C'), which Swift does not import.
static inline int clibpq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int clibpq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int clibpq_diag_message_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int clibpq_diag_message_hint(void) { return PG_DIAG_MESSAGE_HINT; }
static inline int clibpq_diag_statement_position(void) { return PG_DIAG_STATEMENT_POSITION; }
#endif
