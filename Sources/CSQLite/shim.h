#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro that Swift cannot import: it tells SQLite to copy a bound value. */
static inline sqlite3_destructor_type tidemark_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/* sqlite3_db_config is variadic, which Swift cannot call. Sets the connection's defensive flag
   (1 on, 0 off, -1 leaves it) and returns it as it is then. */
static inline int tidemark_sqlite_defensive(sqlite3 *db, int on) {
    int now = 0;
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, &now);
    return now;
}
