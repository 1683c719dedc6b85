#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro that Swift cannot import: it tells SQLite to copy a bound value. */
static inline sqlite3_destructor_type tidemark_sqlite_transient(void) { return SQLITE_TRANSIENT; }
