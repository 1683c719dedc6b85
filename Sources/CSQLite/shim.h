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

/* Turns the connection's triggers of the main schema on (1) or off (0), or leaves them (-1), and
   returns whether they are on then (sqlite3_db_config, variadic). TEMP triggers fire either way
   since SQLite 3.35; changing it expires the connection's prepared statements, which SQLite
   prepares again at their next step. */
static inline int tidemark_sqlite_triggers(sqlite3 *db, int on) {
    int now = 0;
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, on, &now);
    return now;
}

/* The pre-update hook (sqlite.org/c3ref/preupdate_count.html). sqlite3.h declares it only when
   SQLITE_ENABLE_PREUPDATE_HOOK is defined, though the system libraries of Debian and of Apple's
   platforms are built with it. Declared weak here: where the linked library lacks it, the symbols
   are NULL and tidemark_preupdate_available() says so. */
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
void *sqlite3_preupdate_hook(
    sqlite3 *db,
    void (*xPreUpdate)(void *pCtx, sqlite3 *db, int op, char const *zDb, char const *zName, sqlite3_int64 iKey1,
                       sqlite3_int64 iKey2),
    void *pCtx) __attribute__((weak));
int sqlite3_preupdate_new(sqlite3 *db, int iIdx, sqlite3_value **ppValue) __attribute__((weak));
int sqlite3_preupdate_old(sqlite3 *db, int iIdx, sqlite3_value **ppValue) __attribute__((weak));
int sqlite3_preupdate_count(sqlite3 *db) __attribute__((weak));
int sqlite3_preupdate_depth(sqlite3 *db) __attribute__((weak));
#else
#pragma weak sqlite3_preupdate_hook
#pragma weak sqlite3_preupdate_new
#pragma weak sqlite3_preupdate_old
#pragma weak sqlite3_preupdate_count
#pragma weak sqlite3_preupdate_depth
#endif

/* Whether the pre-update hook can also give the values a row held before the change. */
static inline int tidemark_preupdate_old_available(void) { return sqlite3_preupdate_old != 0; }

static inline int tidemark_preupdate_available(void) {
    return sqlite3_preupdate_hook != 0 && sqlite3_preupdate_new != 0 && sqlite3_preupdate_count != 0
        && sqlite3_preupdate_depth != 0;
}
