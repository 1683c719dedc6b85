/* The SQLite session extension (changesets), the benchmark's baseline. Debian's libsqlite3 is built
   with it; its declarations in sqlite3.h are visible only with these two macros defined. */
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>
